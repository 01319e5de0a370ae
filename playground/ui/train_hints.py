"""What the Train tab asks a family: its tokenizer choices, what an upload means, which preview it shows.

Each family holds one :class:`TrainHints` (``Family.train_ui``); the tab never compares family
names. Which form fields a family shows follows from its config dataclasses (a field shows when
the family's `[model]` or `[data]` config has it), so it needs no hint. No gradio here: the
families import this module.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

PreviewKind = Literal["text", "confusion", "translations"]


@dataclass(frozen=True)
class TrainHints:
    """A family's part of the Train tab.

    preview: which preview widget shows its evaluations (a sample text, a confusion matrix or a
        translations table; the adapter's Preview has the same kind).
    tokenizers: the built-in choices of the Tokenizer dropdown (before the workspace's own);
        empty when the family takes no tokenizer, and the dropdown is hidden.
    default_tokenizer: what the dropdown shows when the preset names no `data.tokenizer`.
    upload_suffix / upload_what: the file an upload is (".txt" / "corpus"), for the upload widget.
    upload: the `[data]` keys that point the preset at an uploaded file at `path`.
    """

    preview: PreviewKind
    tokenizers: tuple[str, ...]
    default_tokenizer: str
    upload_suffix: str
    upload_what: str
    upload: Callable[[str], dict[str, Any]]

    @property
    def uses_tokenizer(self) -> bool:
        """Whether the family's data is cut by a tokenizer (the dropdown shows, data.tokenizer is set)."""
        return bool(self.tokenizers)

    @property
    def upload_label(self) -> str:
        """e.g. ".txt corpus"."""
        return f"{self.upload_suffix} {self.upload_what}"
