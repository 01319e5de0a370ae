"""What "generate" means for a model family: the contract the Generate tab, the CLI and
:mod:`playground.generation.api` ask (``get_family(name).generator``).

Each family holds one :class:`FamilyGenerator` (``playground/families/<family>/generation.py``):
a language model continues a prompt, a sequence-to-sequence model decodes a source, an image
classifier classifies an image. The callers never compare family names or kinds; they read the
generator's :class:`Controls` (plain data: which inputs and controls apply, their labels) and
call its methods. Nothing here imports gradio: the tab turns the plain data into updates.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from tokenizers import Tokenizer
from torch import Tensor

from playground.errors import DataError, PlaygroundError
from playground.generation.events import Done, SampleResult, StepEvent
from playground.generation.vision import Classification

if TYPE_CHECKING:  # bundle imports the family registry, which imports this module; api imports this module
    from playground.bundle import Bundle
    from playground.generation.api import GenerateRequest

NOTHING_PICKED = "Generate something, then pick a token to explain."


@dataclass(frozen=True)
class Controls:
    """Which Generate inputs and controls apply to a family, and how they read.

    reads_image: the input is an image (image upload, Classify, class chart) instead of text
        (prompt box, Generate, max new tokens, next-token chart, token picker).
    input_label / placeholder: the text box's label and placeholder ("Prompt" / "Source").
    hint: one line under the checkpoint's description saying what to do.
    sampling: the sampling knobs apply (temperature ... stop strings, several samples at once);
        without them only the model's own next-token distribution is shown.
    beam: beam width and length penalty apply.
    alignment: a run gives a target-by-source alignment chart.
    echo_prompt: the output continues the prompt, so it is shown before the generated tokens.
    prompt_required: an empty text input is an error (a source to decode), not a fresh start.
    pick_label: the label of the picker whose choice is explained in Analyze.
    shows_image: a run's result is also a picture (``FamilyGenerator.final_image``: ImageGPT's
        original digit, its given half and the completions), shown under the tokens.
    context_modes: past the block size the context can slide ('window') or keep growing
        ('extend', positions that extrapolate), and the loss per position can be measured past
        the trained context (a text language model).
    """

    reads_image: bool
    input_label: str
    placeholder: str
    hint: str
    sampling: bool = False
    beam: bool = False
    alignment: bool = False
    echo_prompt: bool = False
    prompt_required: bool = False
    pick_label: str = "Pick a generated token"
    shows_image: bool = False
    context_modes: bool = False


def token_pick(picked: str | None) -> tuple[int, int] | None:
    """(sample, index) of a picked token "sample:index" (None for nothing or a picked class "c:k")."""
    if not picked or ":" not in str(picked) or str(picked).startswith("c:"):
        return None
    s, i = str(picked).split(":", 1)
    return int(s), int(i)


def picked_token(done: Done, sample: int, index: int) -> tuple[SampleResult, StepEvent]:
    """Sample `sample` of a run and its generated token `index` (DataError when there is no such token)."""
    result = done.samples[sample]
    if not 0 <= index < len(result.events):
        raise DataError(f"Pick a generated token between 0 and {len(result.events) - 1}.")
    return result, result.events[index]


class FamilyGenerator:
    """The per-family part of generation.

    The defaults fit a model that reads text (it rejects images and cannot classify); an image
    classifier overrides them. Subclasses fill in every method that raises NotImplementedError.
    """

    what: str = "model"  # how messages name the model ("language model (GPT)")
    controls: Controls

    # -- input --------------------------------------------------------------------------

    def check_input(self, bundle: Bundle, image: Any) -> None:
        """DataError when the input is of the wrong type (an image handed to a text model, ...)."""
        if image is not None:
            raise DataError(
                f"{bundle.name!r} is a {self.what}: it reads text, not images. Give a text "
                f"{self.controls.input_label.lower()} instead, or pick a ViT checkpoint for images."
            )

    # -- a run --------------------------------------------------------------------------

    def stream(self, bundle: Bundle, request: GenerateRequest) -> Iterator[StepEvent | Done]:
        """StepEvents as tokens come, then one Done (the request is already checked)."""
        raise NotImplementedError

    def classify(self, bundle: Bundle, image: Any, invert: bool = False) -> Classification:
        """Class probabilities of one image."""
        raise DataError(f"{bundle.name!r} is a {self.what}: it reads text, not images. "
                        "Pick a ViT checkpoint to classify an image.")

    def streams_live(self, request: Any) -> bool:
        """Whether a console can print the tokens as they come (else it prints `console_result`)."""
        raise NotImplementedError

    def console_result(self, done: Done) -> str:
        """What a console prints at the end of a run it did not print live."""
        raise NotImplementedError

    # -- the result ----------------------------------------------------------------------

    def summary(self, done: Done) -> str | None:
        """An extra fact for the run's stats line (seq2seq: the score), or None."""
        return None

    def final_output(self, done: Done) -> str | None:
        """The output text to show below the tokens (seq2seq: the decoded output), or None."""
        return None

    def final_image(self, done: Done) -> np.ndarray | None:
        """The run's result as a picture [H,W,3] uint8 (controls.shows_image), or None."""
        return None

    def shows_routing(self, bundle: Bundle) -> bool:
        """Whether this checkpoint routes tokens to experts (a mixture of experts), so a run gets
        the expert-load view (`routing_view`)."""
        return False

    def routing_view(self, bundle: Bundle, done: Done) -> tuple[Any, pd.DataFrame] | None:
        """(chart, its data) of where the run's first sample went through the experts, or None."""
        return None

    # -- why this token ------------------------------------------------------------------

    def next_token_logits(self, bundle: Bundle, prompt: str, target_prefix: Sequence[int] | None = None) -> Tensor:
        """Raw next-token logits [V] after `prompt` (and, for seq2seq, the target tokens `target_prefix`)."""
        raise NotImplementedError

    def why_context(self, sample: SampleResult, index: int) -> tuple[str, list[int] | None]:
        """(text, target prefix ids) whose next token is generated token `index` of `sample`."""
        raise NotImplementedError

    # -- the hand-off to Analyze -----------------------------------------------------------

    def explain_target(self, done: Done, sample: int, index: int, tokenizer: Tokenizer | None = None) -> dict[str, Any]:
        """What the Analyze tab needs to explain generated token `index` of `sample`: input,
        target_position, target_token and ids (checkpoint and kind are added by the caller)."""
        raise NotImplementedError

    def handoff(self, state: dict[str, Any], picked: str | None, tokenizer: Tokenizer | None = None) -> dict[str, Any]:
        """The Analyze hand-off for the pick `picked` of the tab's last result `state` (plain data:
        "done" for a text run). PlaygroundError when nothing explainable is picked."""
        sel = token_pick(picked)
        if sel is None:
            raise PlaygroundError(NOTHING_PICKED)
        return self.explain_target(state["done"], sel[0], sel[1], tokenizer)
