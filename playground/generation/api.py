"""Generation on a checkpoint bundle: one entry point per use, each asking the family's
generator (:class:`~playground.generation.family.FamilyGenerator`) what it means for it.

- `stream(bundle, request)`: StepEvents then Done, for GPT (sampling, batched with every
  other user of the same checkpoint: `batching`) and seq2seq (greedy or beam search); the tab
  and the CLI both consume it.
- `classify_image(bundle, image)`: class probabilities for ViT.
- `next_token_table(bundle, prompt, sampling)`: the next-token distribution and what each
  filter leaves of it (the tab's chart).
- `explain_target(...)` / `explain_pick(...)`: the dict the Analyze tab reads from `ctx.selection`.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import pandas as pd
import torch
from tokenizers import Tokenizer

from playground.errors import ConfigError, DataError, PlaygroundError
from playground.generation.events import Done, StepEvent
from playground.generation.family import NOTHING_PICKED, FamilyGenerator
from playground.generation.filters import SamplingConfig, filter_stages
from playground.generation.text import encode_text, token_text
from playground.generation.vision import Classification
from playground.limits import check_count, check_seed, check_text

if TYPE_CHECKING:  # the registry imports this package (see _family); bundle imports the registry
    from playground.bundle import Bundle
    from playground.families.base import Family


@dataclass(frozen=True)
class GenerateRequest:
    """Everything one generation call needs besides the checkpoint.

    GPT uses `prompt`, `sampling`, `seed`, `num_samples`, `stop`; seq2seq uses `prompt` (the
    source), `beam_width` (1 = greedy) and `length_penalty` (GNMT alpha). `max_new_tokens`
    bounds both.
    """

    prompt: str = ""
    max_new_tokens: int = 200
    sampling: SamplingConfig = field(default_factory=SamplingConfig)
    seed: int | None = None
    num_samples: int = 1
    stop: tuple[str, ...] = ()
    beam_width: int = 1
    length_penalty: float = 0.0
    use_cache: bool = True
    context: str = "window"  # GPT: "window" slides at block_size, "extend" goes on past it (lm.CONTEXT_MODES)
    n_alternatives: int = 5
    image: Any = None  # a ViT input handed to a text model is rejected with a clear error

    def capped(self, max_new_tokens: int | None) -> GenerateRequest:
        """The request with max_new_tokens lowered to a demo cap (None = no cap)."""
        if max_new_tokens is None or self.max_new_tokens <= max_new_tokens:
            return self
        return replace(self, max_new_tokens=max_new_tokens)


def check_request_sizes(request: GenerateRequest, caps: Any = None) -> None:
    """TooBigError unless the prompt, new tokens, samples, beams and seed fit `caps` (default FULL_CAPS)."""
    check_text(request.prompt, "max_prompt_chars", caps, "The prompt")
    check_count(request.max_new_tokens, "max_new_tokens", caps, "Max new tokens", 1)
    check_count(request.num_samples, "max_batch_size", caps, "Number of samples", 1)
    check_count(request.beam_width, "max_batch_size", caps, "Beam width", 1)
    if request.seed is not None:
        check_seed(request.seed, caps)


def _family(name: str) -> Family:
    # Function-level: playground.families imports this package's decoders and the generator
    # contract, so importing it at the top of this module would be a cycle.
    from playground.families import get_family

    return get_family(name)


def generator_of(bundle: Bundle) -> FamilyGenerator:
    """What "generate" means for the bundle's family (its :class:`FamilyGenerator`)."""
    return _family(bundle.family).generator


def _vocab(bundle: Bundle) -> int:
    return int(bundle.model_config.vocab_size)


def prompt_ids(bundle: Bundle, prompt: str) -> list[int]:
    """Checked token ids of a GPT prompt (DataError naming characters outside the vocabulary)."""
    return encode_text(bundle.tokenizer, prompt, _vocab(bundle), what="prompt") if prompt else []


def source_ids(bundle: Bundle, source: str) -> list[int]:
    """Checked token ids of a seq2seq source (tokens only, no specials, as in training)."""
    if not source or not source.strip():
        raise DataError("The source is empty; type a source sequence to translate.")
    return encode_text(bundle.tokenizer, source, _vocab(bundle), what="source")


def stream(bundle: Bundle, request: GenerateRequest) -> Iterator[StepEvent | Done]:
    """Stream generation from a text checkpoint: StepEvents as tokens come, then one Done."""
    generator = generator_of(bundle)
    generator.check_input(bundle, request.image)
    if request.max_new_tokens < 1:
        raise ConfigError(f"max new tokens must be >= 1, got {request.max_new_tokens}.")
    check_request_sizes(request)
    yield from generator.stream(bundle, request)


def generate(bundle: Bundle, request: GenerateRequest) -> Done:
    """Run `stream` to the end and return its Done."""
    done = None
    for event in stream(bundle, request):
        if isinstance(event, Done):
            done = event
    assert done is not None
    return done


def classify_image(bundle: Bundle, image: Any, invert: bool = False) -> Classification:
    """Class probabilities of one image for a ViT checkpoint (clear error for text models/input)."""
    return generator_of(bundle).classify(bundle, image, invert=invert)


def next_token_logits(bundle: Bundle, prompt: str, target_prefix: Sequence[int] | None = None) -> torch.Tensor:
    """Raw next-token logits [V] after `prompt` (GPT) or after source `prompt` and the target
    tokens `target_prefix` (seq2seq)."""
    generator = generator_of(bundle)
    generator.check_input(bundle, None)
    with torch.inference_mode():
        return generator.next_token_logits(bundle, prompt, target_prefix)


STAGE_LABELS = {
    "raw": "model (T = 1)",
    "temperature": "after temperature",
    "top_k": "after top-k",
    "top_p": "after top-p",
    "min_p": "after min-p (sampled from)",
}


def distribution_table(logits: torch.Tensor, sampling: SamplingConfig, tokenizer: Tokenizer | None = None, top: int = 30) -> pd.DataFrame:
    """Long table of the `top` most likely tokens: token, rank, stage, probability, kept.

    Stages: the model's distribution, then after temperature, top-k, top-p, min-p (the
    last is the distribution sampled from). Penalties are left out: they depend on history.
    """
    stages = filter_stages(logits[None], replace(sampling, repetition_penalty=1.0, frequency_penalty=0.0, presence_penalty=0.0))
    raw = stages["raw"][0]
    order = raw.argsort(descending=True)[: min(top, raw.numel())].tolist()
    rows = []
    for rank, tid in enumerate(order):
        label = _display(token_text(tokenizer, tid) if tokenizer is not None else str(tid))
        for key, name in STAGE_LABELS.items():
            p = float(stages[key][0, tid])
            rows.append({"rank": rank + 1, "token_id": tid, "token": label, "stage": name,
                         "probability": p, "kept": p > 0})
    return pd.DataFrame(rows)


def next_token_table(bundle: Bundle, prompt: str, sampling: SamplingConfig, top: int = 30,
                     target_prefix: Sequence[int] | None = None) -> pd.DataFrame:
    """`distribution_table` for the next token after `prompt` on a checkpoint."""
    return distribution_table(next_token_logits(bundle, prompt, target_prefix), sampling, bundle.tokenizer, top)


def _display(text: str) -> str:
    """Whitespace made visible for labels."""
    return text.replace("\n", "⏎").replace("\t", "⇥").replace(" ", "␣") if text.strip() != text or not text else text


def explain_target(checkpoint: str, family: str, done: Done, sample: int, index: int,
                   tokenizer: Tokenizer | None = None) -> dict[str, Any]:
    """What the Analyze tab needs to explain generated token `index` of `sample` of a run of a
    `family` checkpoint: checkpoint, kind, input, target_position, target_token and ids
    (see the family generator's `explain_target`)."""
    spec = _family(family)
    return {"checkpoint": checkpoint, "kind": spec.kind, **spec.generator.explain_target(done, sample, index, tokenizer)}


def explain_pick(state: dict[str, Any], picked: str | None, tokenizer: Tokenizer | None = None) -> dict[str, Any]:
    """The Analyze hand-off for `picked` (a token "sample:index" or a class "c:k") of the Generate
    tab's last result `state` ({"checkpoint", "family", ...}); PlaygroundError when nothing is picked."""
    if not state:
        raise PlaygroundError(NOTHING_PICKED)
    spec = _family(state["family"])
    return {"checkpoint": state["checkpoint"], "kind": spec.kind, **spec.generator.handoff(state, picked, tokenizer)}
