"""What "generate" means for a text classifier: classify one typed text, once.

The run is one :class:`StepEvent` (the predicted class, every class with its probability as its
alternatives) and one Done, so the Generate tab's token table, output line and "explain this"
picker show the class probabilities without a classifier-specific widget.
"""
from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from tokenizers import Tokenizer
from torch import Tensor, nn

from playground.data.reviews import encode_words
from playground.errors import DataError, PlaygroundError
from playground.generation.events import Done, SampleResult, StepEvent
from playground.generation.family import Controls, FamilyGenerator

if TYPE_CHECKING:  # bundle imports the family registry, which imports this module
    from playground.bundle import Bundle
    from playground.generation.api import GenerateRequest


@dataclass
class TextClassification:
    """Class probabilities of one text, most likely first, and the tokens the model read."""

    labels: list[str]
    probs: list[float]
    tokens: list[str]

    @property
    def predicted(self) -> str:
        return self.labels[0]

    def rows(self) -> list[dict[str, Any]]:
        return [{"rank": i + 1, "class": c, "probability": p} for i, (c, p) in enumerate(zip(self.labels, self.probs))]


def class_names(bundle: Bundle) -> list[str]:
    """The bundle's class names, or "0", "1", ... when it records none."""
    n = int(bundle.model_config.n_classes)
    names = list(bundle.class_names or [])
    return names if len(names) == n else [str(i) for i in range(n)]


def class_probs(bundle: Bundle, text: str) -> tuple[Tensor, list[int]]:
    """Softmax over the classes [C] of ``text`` and its token ids (DataError for an empty text)."""
    if not text or not text.strip():
        raise DataError("Type a text to classify.")
    ids = encode_words(bundle.tokenizer, text, int(bundle.model_config.max_len))
    if not ids:
        raise DataError("The text has no words to read; type a sentence.")
    return softmax_of(bundle.model, ids), ids


def softmax_of(model: nn.Module, ids: list[int]) -> Tensor:
    """The classifier's class probabilities [C] for one sequence of token ids."""
    device = next(model.parameters()).device
    with torch.inference_mode():
        return model(torch.tensor([ids], device=device)).float().softmax(-1)[0].cpu()  # [C]


def classify_text(bundle: Bundle, text: str) -> TextClassification:
    """Class probabilities of ``text``, most likely first."""
    probs, ids = class_probs(bundle, text)
    names = class_names(bundle)
    order = probs.argsort(descending=True).tolist()
    tokens = [bundle.tokenizer.id_to_token(i) or str(i) for i in ids]
    return TextClassification([names[i] for i in order], [float(probs[i]) for i in order], tokens)


class TextClassifierGenerator(FamilyGenerator):
    """A text classifier: a text in, class probabilities out (one step, nothing to sample)."""

    what = "text classifier"
    controls = Controls(
        reads_image=False, input_label="Text", placeholder="Type a review, e.g. the plot was not good",
        hint="Type a text; the model gives class probabilities (the output line and the token table).",
        prompt_required=True, pick_label="Pick the class to explain",
    )

    def class_probs(self, bundle: Bundle, text: str) -> tuple[Tensor, list[int]]:
        """Class probabilities [C] of ``text`` and the ids the model read (:func:`class_probs`)."""
        return class_probs(bundle, text)

    def stream(self, bundle: Bundle, request: GenerateRequest) -> Iterator[StepEvent | Done]:
        """One StepEvent (the predicted class; alternatives = every class) and a Done."""
        t0 = time.perf_counter()
        probs, ids = self.class_probs(bundle, request.prompt)
        names = class_names(bundle)
        order = probs.argsort(descending=True).tolist()
        top = order[0]
        alternatives = [(k, names[k], float(probs[k])) for k in order]
        event = StepEvent(0, 0, len(ids), top, names[top], float(probs[top]), 1.0, alternatives, stopped=True)
        yield event
        sample = SampleResult(request.prompt, ids, [top], names[top], "stop", [event])
        yield Done([sample], None, 1, time.perf_counter() - t0,
                   info={"class_probs": {names[k]: float(probs[k]) for k in range(len(names))}})

    def streams_live(self, request: Any) -> bool:
        return False

    def console_result(self, done: Done) -> str:
        rows = sorted(done.info["class_probs"].items(), key=lambda kv: -kv[1])
        return "".join(f"{name}\t{p:.4f}\n" for name, p in rows)

    def summary(self, done: Done) -> str | None:
        return f"predicted **{done.samples[0].text}**"

    def final_output(self, done: Done) -> str | None:
        probs = sorted(done.info["class_probs"].items(), key=lambda kv: -kv[1])
        return " · ".join(f"{name} {p:.3f}" for name, p in probs)

    def next_token_logits(self, bundle: Bundle, prompt: str, target_prefix: Sequence[int] | None = None) -> Tensor:
        """A classifier has no next token (its class probabilities are the run's output)."""
        raise PlaygroundError(f"{bundle.name!r} is a text classifier: it has no next-token distribution; "
                              "its class probabilities are the output of Generate.")

    def why_context(self, sample: SampleResult, index: int) -> tuple[str, list[int] | None]:
        return sample.prompt, None

    def explain_target(self, done: Done, sample: int, index: int, tokenizer: Tokenizer | None = None) -> dict[str, Any]:
        """The classified text and its predicted class (pick another class in Analyze's target box)."""
        result = done.samples[sample]
        event = result.events[0]
        return {"input": result.prompt, "target_position": event.token_id, "target_token": event.text,
                "ids": list(result.prompt_ids)}
