"""ViT's part of the Train tab: no tokenizer, a .zip of class folders, a confusion matrix."""
from __future__ import annotations

from playground.ui.train_hints import TrainHints

TRAIN_UI = TrainHints(
    preview="confusion",
    tokenizers=(),
    default_tokenizer="auto",
    upload_suffix=".zip",
    upload_what="of class folders",
    upload=lambda path: {"dataset": "zip", "path": path, "n": 0},
)
