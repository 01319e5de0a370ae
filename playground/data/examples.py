"""A family's validation examples: the one source the Generate tab, the Analyze tab and the
experiments draw them from (``get_family(name).examples``).

Each family holds one :class:`FamilyExamples` (``playground/families/<family>/examples.py``)
that rebuilds its validation split from the data description a checkpoint records and picks
examples from it, always in the same order with the same seeds.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tokenizers import Tokenizer
from torch import Generator, Tensor

from playground.data.policy import DataPolicy
from playground.workspace import Workspace

if TYPE_CHECKING:  # bundle imports the family registry, which imports this module
    from playground.bundle import Bundle

if TYPE_CHECKING:  # types only: the experiments' held-out set is built by the analysis package
    from playground.analysis.experiments.data import HeldOut


@dataclass(frozen=True)
class Example:
    """A validation example for the Generate tab: a label for the picker, the input, the reference output."""

    label: str
    input: Any  # str (GPT prompt / seq2seq source) or a numpy image [H,W,C] uint8 (ViT)
    reference: str | None = None  # seq2seq target / ViT class name


@dataclass
class AnalysisExample:
    """A validation example for the Analyze tab: an image (+ mask, label) or a source sentence (+ gold alignment)."""

    label: str
    image: Tensor | None = None  # [C,H,W] in [0, 1]
    mask: Tensor | None = None  # object pixels [H,W] (vit-shapes); rationale tokens [T] (generated reviews)
    true_label: int | None = None
    source: str | None = None
    reference: str | None = None
    alignment: list[tuple[int, int]] | None = None


class FamilyExamples:
    """The per-family source of validation examples. Subclasses fill in every method."""

    def for_generate(self, data: dict[str, Any], n: int, model: dict[str, Any], workspace: Workspace | None,
                     policy: DataPolicy) -> list[Example]:
        """Up to `n` examples from the trainer's `[data]` record `data` (and the model config `model`),
        or [] when they are not cheaply available. Files are opened only as `policy` allows."""
        raise NotImplementedError

    def for_analysis(self, data: dict[str, Any], n: int) -> list[AnalysisExample]:
        """Up to `n` examples from the preset's `[data]` section `data` (same seed, same split as
        training), or [] when the data cannot be rebuilt from it."""
        raise NotImplementedError

    def held_out(self, bundle: Bundle, prepared: Any, tokenizer: Tokenizer | None, n: int, gen: Generator) -> HeldOut:
        """`n` one-example queries drawn with `gen` from the trainer's prepared data `prepared`
        (training.adapters.Prepared) for the model of `bundle`."""
        raise NotImplementedError
