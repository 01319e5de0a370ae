"""The BERT families' part of the Train tab."""
from __future__ import annotations

from playground.ui.train_hints import TrainHints

MLM_TRAIN_UI = TrainHints(
    preview="text",
    tokenizers=("char", "words"),
    default_tokenizer="char",
    upload_suffix=".txt",
    upload_what="corpus",
    upload=lambda path: {"corpus": path},
)

CLASSIFIER_TRAIN_UI = TrainHints(
    preview="confusion",
    tokenizers=("words", "char"),
    default_tokenizer="words",
    upload_suffix=".csv",
    upload_what="of text,label rows",
    upload=lambda path: {"texts": "csv", "path": path, "n": 0},
)
