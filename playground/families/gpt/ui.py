"""GPT's part of the Train tab: a character (or workspace) tokenizer, a .txt corpus, a text sample."""
from __future__ import annotations

from playground.ui.train_hints import TrainHints

TRAIN_UI = TrainHints(
    preview="text",
    tokenizers=("char",),
    default_tokenizer="char",
    upload_suffix=".txt",
    upload_what="corpus",
    upload=lambda path: {"corpus": path},
)
