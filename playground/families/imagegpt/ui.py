"""ImageGPT's part of the Train tab: no tokenizer choice (the grey levels are the tokens), no upload, a text-art sample."""
from __future__ import annotations

from playground.ui.train_hints import TrainHints

TRAIN_UI = TrainHints(
    preview="text",
    tokenizers=(),
    default_tokenizer="auto",
    upload_suffix=".zip",
    upload_what="(not used: ImageGPT trains on the built-in digits)",
    upload=lambda path: {},
)
