"""What "generate" means for ImageGPT: complete the lower half of a validation digit from its upper half."""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import Tensor

from playground.errors import DataError
from playground.families.gpt.generation import LMGenerator
from playground.families.imagegpt.pixels import (
    GIVEN,
    N_PIXELS,
    N_SPECIAL,
    START,
    ascii_art,
    completion_grid,
    data_config,
    from_ids,
    level_text,
    quantise,
    split,
    text_levels,
)
from playground.generation.api import GenerateRequest
from playground.generation.batching import batching_enabled, stream_batched
from playground.generation.events import Done, StepEvent
from playground.generation.family import Controls
from playground.generation.lm import stream_lm

if TYPE_CHECKING:  # bundle imports the family registry, which imports this module
    from playground.bundle import Bundle


def validation_levels(bundle: Bundle, index: int) -> list[int]:
    """The 64 grey levels (raster order) of validation digit `index` of the bundle's data."""
    data = data_config(bundle.config.get("data") or {})
    val = split(data)[1]
    if not 0 <= index < val.n:
        raise DataError(f"Pick a validation digit between 0 and {val.n - 1}, got {index}.")
    return quantise(val.images[index:index + 1], data.levels)[0].tolist()


def level_ids(bundle: Bundle, levels_seq: Sequence[int]) -> list[int]:
    """Token ids of the start token and grey levels `levels_seq` (DataError on a level the model lacks)."""
    n_levels = bundle.tokenizer.get_vocab_size() - N_SPECIAL
    if any(not 0 <= int(v) < n_levels for v in levels_seq):
        raise DataError(f"This model has {n_levels} grey levels: digits 0 to {n_levels - 1}.")
    return [bundle.tokenizer.token_to_id(START)] + [int(v) + N_SPECIAL for v in levels_seq]


def parse_index(text: str) -> int:
    """The validation digit index typed or picked ("12"); DataError otherwise."""
    text = (text or "").strip()
    if not text.lstrip("-").isdigit():
        raise DataError(f"Give the index of a validation digit (e.g. 0), got {text[:40]!r}.")
    return int(text)


def completions(done: Done) -> list[list[int]]:
    """Every sample's 64 grey levels: the given upper half, then its sampled lower half."""
    return [text_levels(s.prompt) + from_ids(s.ids) for s in done.samples]


class PixelGenerator(LMGenerator):
    """Pixels in raster order: the upper 32 pixels of a validation digit in, the lower 32 sampled."""

    what = "pixel model (ImageGPT)"
    controls = Controls(
        reads_image=False, input_label="Validation digit (index)",
        placeholder="A validation digit's index, e.g. 0 (or pick one above)",
        hint="Pick a validation digit; the model sees its upper half and samples the lower half.",
        sampling=True, prompt_required=True, shows_image=True,
    )

    def stream(self, bundle: Bundle, request: GenerateRequest) -> Iterator[StepEvent | Done]:
        """`num_samples` completions of the lower 32 pixels (max new tokens and stop strings do not
        apply: an image is always 64 pixels); Done.info["original"] holds the digit's 64 levels."""
        original = validation_levels(bundle, parse_index(request.prompt))
        prompt = START + level_text(original[:GIVEN])
        ids = level_ids(bundle, original[:GIVEN])  # [33]: start token, upper half
        decode = stream_batched if batching_enabled() else stream_lm
        for event in decode(bundle.model, bundle.tokenizer, ids, max_new_tokens=N_PIXELS - GIVEN,
                            sampling=request.sampling, seed=request.seed, num_samples=request.num_samples,
                            stop=(), stop_ids=(), use_cache=request.use_cache, n_alternatives=request.n_alternatives,
                            prompt_text=prompt):
            if isinstance(event, Done):
                event.info["original"] = original
                event.info["levels"] = bundle.tokenizer.get_vocab_size() - 2
            yield event

    def streams_live(self, request: GenerateRequest) -> bool:
        """Never: pixels print as a picture at the end."""
        return False

    def console_result(self, done: Done) -> str:
        """The original and each completion as text art, side by side."""
        levels = int(done.info["levels"])
        panels = [ascii_art(done.info["original"], levels)] + [ascii_art(c, levels) for c in completions(done)]
        head = "   ".join(f"{name:<16}" for name in ["original"] + [f"sample {i + 1}" for i in range(len(done.samples))])
        rows = ["   ".join(panel[r] for panel in panels) for r in range(len(panels[0]))]
        return head.rstrip() + "\n" + "\n".join(rows[:GIVEN // 8]) + "\n" + "-" * len(rows[0]) + "\n" \
            + "\n".join(rows[GIVEN // 8:]) + "\n"

    def final_image(self, done: Done) -> np.ndarray | None:
        """The original, its given upper half and every completion [H,W,3] uint8."""
        return completion_grid(done.info["original"], completions(done), int(done.info["levels"]))

    def next_token_logits(self, bundle: Bundle, prompt: str, target_prefix: Sequence[int] | None = None) -> Tensor:
        """Logits [V] of the first hidden pixel of validation digit `prompt` (an index), or of the
        pixel after a level string "<|image|>0123..." (what a picked token's context is)."""
        if prompt.startswith(START):
            ids = level_ids(bundle, text_levels(prompt))[:N_PIXELS]
        else:
            ids = level_ids(bundle, validation_levels(bundle, parse_index(prompt))[:GIVEN])
        x = torch.tensor([ids], device=next(bundle.model.parameters()).device)  # [1,T]
        with torch.inference_mode():
            return bundle.model(x, last_only=True)[0, -1].float().cpu()
