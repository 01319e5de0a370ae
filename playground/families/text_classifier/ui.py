"""The text classifier's part of the Train tab: its own word tokenizer, a text,label CSV, a confusion matrix."""
from __future__ import annotations

from playground.ui.train_hints import TrainHints

TRAIN_UI = TrainHints(
    preview="confusion",
    tokenizers=(),
    default_tokenizer="auto",
    upload_suffix=".csv",
    upload_what="of text,label rows",
    upload=lambda path: {"texts": "csv", "path": path, "n": 0},
)
