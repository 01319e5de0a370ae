"""The seq2seq families' part of the Train tab: a tokenizer built from the pairs ("auto") or the
workspace's, a .tsv of pairs, a few translations."""
from __future__ import annotations

from playground.ui.train_hints import TrainHints

TRAIN_UI = TrainHints(
    preview="translations",
    tokenizers=("auto",),
    default_tokenizer="auto",
    upload_suffix=".tsv",
    upload_what="pairs",
    upload=lambda path: {"pairs": "tsv", "path": path, "n": 0},
)
