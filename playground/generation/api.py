"""Generation on a checkpoint bundle: one entry point per use, dispatching on the family kind.

- `stream(bundle, request)`: StepEvents then Done, for GPT (sampling, batched with every
  other user of the same checkpoint: `batching`) and seq2seq (greedy or beam search); the tab
  and the CLI both consume it.
- `classify_image(bundle, image)`: class probabilities for ViT.
- `next_token_table(bundle, prompt, sampling)`: the next-token distribution and what each
  filter leaves of it (the tab's chart).
- `explain_target(...)`: the dict the Analyze tab reads from `ctx.selection`.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd
import torch

from playground.errors import ConfigError, DataError
from playground.generation.batching import batching_enabled, stream_batched
from playground.generation.events import Done, StepEvent
from playground.generation.filters import SamplingConfig, filter_stages
from playground.generation.lm import start_ids, stream_lm
from playground.generation.seq2seq import stream_beam, stream_greedy
from playground.generation.text import encode_text, token_text
from playground.generation.vision import Classification, classify

KIND_LABELS = {"lm": "language model (GPT)", "seq2seq": "sequence-to-sequence model", "classifier": "image classifier (ViT)"}


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
    n_alternatives: int = 5
    image: Any = None  # a ViT input handed to a text model is rejected with a clear error

    def capped(self, max_new_tokens: int | None) -> GenerateRequest:
        """The request with max_new_tokens lowered to a demo cap (None = no cap)."""
        if max_new_tokens is None or self.max_new_tokens <= max_new_tokens:
            return self
        return replace(self, max_new_tokens=max_new_tokens)


def check_request_sizes(request: GenerateRequest, caps: Any = None) -> None:
    """TooBigError unless the prompt, new tokens, samples, beams and seed fit `caps` (default FULL_CAPS)."""
    from playground.limits import check_count, check_seed, check_text

    check_text(request.prompt, "max_prompt_chars", caps, "The prompt")
    check_count(request.max_new_tokens, "max_new_tokens", caps, "Max new tokens", 1)
    check_count(request.num_samples, "max_batch_size", caps, "Number of samples", 1)
    check_count(request.beam_width, "max_batch_size", caps, "Beam width", 1)
    if request.seed is not None:
        check_seed(request.seed, caps)


def family_kind(bundle: Any) -> str:
    """"lm", "seq2seq" or "classifier" for a bundle."""
    from playground.models.registry import get_family

    return get_family(bundle.family).kind


def check_text_model(bundle: Any, kind: str, image: Any) -> None:
    """DataError when a text model gets an image or an image classifier is asked for text."""
    if kind == "classifier":
        raise DataError(
            f"{bundle.name!r} is an image classifier (ViT): it classifies images, it does not read text. "
            "Upload an image instead (CLI: --image PATH)."
        )
    if image is not None:
        raise DataError(
            f"{bundle.name!r} is a {KIND_LABELS[kind]}: it reads text, not images. Give a text "
            f"{'prompt' if kind == 'lm' else 'source'} instead, or pick a ViT checkpoint for images."
        )


def _vocab(bundle: Any) -> int:
    return int(bundle.model_config.vocab_size)


def prompt_ids(bundle: Any, prompt: str) -> list[int]:
    """Checked token ids of a GPT prompt (DataError naming characters outside the vocabulary)."""
    return encode_text(bundle.tokenizer, prompt, _vocab(bundle), what="prompt") if prompt else []


def source_ids(bundle: Any, source: str) -> list[int]:
    """Checked token ids of a seq2seq source (tokens only, no specials, as in training)."""
    if not source or not source.strip():
        raise DataError("The source is empty; type a source sequence to translate.")
    return encode_text(bundle.tokenizer, source, _vocab(bundle), what="source")


def stream(bundle: Any, request: GenerateRequest) -> Iterator[StepEvent | Done]:
    """Stream generation from a text checkpoint: StepEvents as tokens come, then one Done."""
    kind = family_kind(bundle)
    check_text_model(bundle, kind, request.image)
    if request.max_new_tokens < 1:
        raise ConfigError(f"max new tokens must be >= 1, got {request.max_new_tokens}.")
    check_request_sizes(request)
    model = bundle.model
    if kind == "lm":
        ids = prompt_ids(bundle, request.prompt)
        stop_ids = ()
        if bundle.tokenizer is not None:
            eot = bundle.tokenizer.token_to_id("<|endoftext|>")
            stop_ids = (eot,) if eot is not None and ids != [eot] else ()
        decode = stream_batched if batching_enabled() else stream_lm  # batched: one forward for all users
        yield from decode(
            model, bundle.tokenizer, ids, max_new_tokens=request.max_new_tokens, sampling=request.sampling,
            seed=request.seed, num_samples=request.num_samples, stop=request.stop, stop_ids=stop_ids,
            use_cache=request.use_cache, n_alternatives=request.n_alternatives, prompt_text=request.prompt,
        )
        return
    src = source_ids(bundle, request.prompt)
    if request.beam_width <= 1:
        yield from stream_greedy(model, bundle.tokenizer, src, max_new_tokens=request.max_new_tokens,
                                 n_alternatives=request.n_alternatives, source_text=request.prompt)
    else:
        yield from stream_beam(model, bundle.tokenizer, src, beam_width=request.beam_width,
                               alpha=request.length_penalty, max_new_tokens=request.max_new_tokens,
                               n_alternatives=request.n_alternatives, source_text=request.prompt)


def generate(bundle: Any, request: GenerateRequest) -> Done:
    """Run `stream` to the end and return its Done."""
    done = None
    for event in stream(bundle, request):
        if isinstance(event, Done):
            done = event
    assert done is not None
    return done


def classify_image(bundle: Any, image: Any, invert: bool = False) -> Classification:
    """Class probabilities of one image for a ViT checkpoint (clear error for text models/input)."""
    kind = family_kind(bundle)
    if kind != "classifier":
        raise DataError(
            f"{bundle.name!r} is a {KIND_LABELS[kind]}: it reads text, not images. "
            "Pick a ViT checkpoint to classify an image."
        )
    if image is None:
        raise DataError("Upload an image to classify.")
    if isinstance(image, str) and not _looks_like_path(image):
        raise DataError(f"{bundle.name!r} is an image classifier (ViT): give an image, not text.")
    return classify(bundle.model, image, bundle.class_names, invert=invert)


def _looks_like_path(text: str) -> bool:
    from pathlib import Path

    return Path(text).suffix.lower() in {".png", ".jpg", ".jpeg", ".bmp", ".gif", ".webp", ".tif", ".tiff"} or Path(text).is_file()


def next_token_logits(bundle: Any, prompt: str, target_prefix: Sequence[int] | None = None) -> torch.Tensor:
    """Raw next-token logits [V] after `prompt` (GPT) or after source `prompt` and the target
    tokens `target_prefix` (seq2seq)."""
    kind = family_kind(bundle)
    check_text_model(bundle, kind, None)
    model = bundle.model
    device = next(model.parameters()).device
    with torch.inference_mode():
        if kind == "lm":
            ids = prompt_ids(bundle, prompt) or start_ids(bundle.tokenizer)
            block = int(bundle.model_config.block_size)
            x = torch.tensor([ids[-block:]], device=device)
            return model(x, last_only=True)[0, -1].float().cpu()
        src = torch.tensor([source_ids(bundle, prompt)], device=device)
        state = model.start(src)
        y = torch.tensor([bundle.model_config.bos_id], device=device)
        logits = None
        for tok in [None, *(target_prefix or [])]:
            if tok is not None:
                y = torch.tensor([tok], device=device)
            logits, _, state = model.step(state, y)
        return logits[0].float().cpu()  # type: ignore[index]


STAGE_LABELS = {
    "raw": "model (T = 1)",
    "temperature": "after temperature",
    "top_k": "after top-k",
    "top_p": "after top-p",
    "min_p": "after min-p (sampled from)",
}


def distribution_table(logits: torch.Tensor, sampling: SamplingConfig, tokenizer: Any = None, top: int = 30) -> pd.DataFrame:
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


def next_token_table(bundle: Any, prompt: str, sampling: SamplingConfig, top: int = 30,
                     target_prefix: Sequence[int] | None = None) -> pd.DataFrame:
    """`distribution_table` for the next token after `prompt` on a checkpoint."""
    return distribution_table(next_token_logits(bundle, prompt, target_prefix), sampling, bundle.tokenizer, top)


def _display(text: str) -> str:
    """Whitespace made visible for labels."""
    return text.replace("\n", "⏎").replace("\t", "⇥").replace(" ", "␣") if text.strip() != text or not text else text


def explain_target(checkpoint: str, kind: str, done: Done, sample: int, index: int, tokenizer: Any = None) -> dict[str, Any]:
    """What the Analyze tab needs to explain generated token `index` of `sample`.

    Keys: checkpoint, input, target_position, target_token, plus family kind and ids.
    GPT: `input` is prompt + generated text through the target token, `input_ids` its ids
    (prompt ids + generated ids), `target_position` the target's index in `input_ids`
    (the model predicted it from `input_ids[:target_position]`).
    Seq2seq: `input` is the source text, `target_position` the index of the target in the
    output (0-based, after <bos>), `output_ids` the output tokens before and including it.
    """
    result = done.samples[sample]
    events = result.events
    if not 0 <= index < len(events):
        raise DataError(f"Pick a generated token between 0 and {len(events) - 1}.")
    ev = events[index]
    if kind == "lm":
        ids = list(result.prompt_ids) + [e.token_id for e in events[: index + 1]]
        text = result.prompt + "".join(e.text for e in events[: index + 1])
        return {"checkpoint": checkpoint, "kind": kind, "input": text, "input_ids": ids,
                "target_position": len(result.prompt_ids) + index, "target_token": ev.text or
                (token_text(tokenizer, ev.token_id) if tokenizer is not None else str(ev.token_id)),
                "target_id": ev.token_id, "context": result.prompt + "".join(e.text for e in events[:index])}
    return {"checkpoint": checkpoint, "kind": kind, "input": result.prompt, "source_ids": list(result.prompt_ids),
            "target_position": index, "target_token": (result.target_tokens or [ev.text])[index],
            "target_id": ev.token_id, "output_ids": [e.token_id for e in events[: index + 1]],
            "output": result.text}
