"""ImageGPT's pixels as tokens: grey levels in raster order after a start token, and back.

An 8x8 grey image in [0, 1] is quantised to ``levels`` grey levels (level = floor(x * levels),
the top value folded into the last level), flattened row by row (raster order) and written as
one character per pixel ("0", "1", ...), so a character tokenizer cuts it: ids 0 and 1 are the
start token ``<|image|>`` and ``<unk>``, the levels follow (id = level + N_SPECIAL). The model
never predicts the two special ids (:class:`PixelGPT` masks them).
"""
from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch
from tokenizers import Tokenizer
from torch import Tensor, nn

from playground.data.images import load_image_set
from playground.data.splits import split_indices
from playground.data.types import ImageSet
from playground.errors import ConfigError, DataError
from playground.models.gpt import GPT, GPTConfig
from playground.tokenization.simple import build_char_tokenizer

START = "<|image|>"
SPECIALS = [START, "<unk>"]
N_SPECIAL = len(SPECIALS)  # ids below this are not pixels
SIDE = 8  # the digits are 8x8
N_PIXELS = SIDE * SIDE
GIVEN = N_PIXELS // 2  # the upper half: rows 0-3
ASCII_RAMP = " .:-=+*#%@"
MIN_LEVELS, MAX_LEVELS = 2, 10  # grey levels: one character each ("0" .. "9")


@dataclass
class PixelDataConfig:
    """`[data]` for ImageGPT: the digits, their grey levels and a seeded train/val split."""

    dataset: Literal["digits"] = "digits"
    levels: int = 4  # grey levels, MIN_LEVELS..MAX_LEVELS (one character each)
    n: int = 0  # images (0 = all 1797)
    val_fraction: float = 0.2
    seed: int = 0  # the split (kept apart from train.seed)

    def __post_init__(self) -> None:
        if isinstance(self.levels, bool) or not isinstance(self.levels, int) or not MIN_LEVELS <= self.levels <= MAX_LEVELS:
            raise ConfigError(f"data.levels must be a whole number from {MIN_LEVELS} to {MAX_LEVELS} (grey levels per "
                              f"pixel, one token each), got {self.levels!r}.")
        if not 0.0 < self.val_fraction < 1.0:
            raise ConfigError(f"data.val_fraction must be in (0, 1), got {self.val_fraction}.")
        if self.n < 0:
            raise ConfigError(f"data.n must be >= 0, got {self.n}.")


class PixelGPT(GPT):
    """A GPT over pixel tokens whose head never predicts the start token or <unk> (their logits
    are set to the dtype's minimum in every forward path, cached or batched)."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__(config)
        special = torch.zeros(config.vocab_size, dtype=torch.bool)
        special[:N_SPECIAL] = True
        self.register_buffer("special_ids", special, persistent=False)  # [V]
        self.lm_head.register_forward_hook(self._mask_specials)

    def _mask_specials(self, module: nn.Module, inputs: Any, logits: Tensor) -> Tensor:
        return logits.masked_fill(self.special_ids, torch.finfo(logits.dtype).min)  # [..., V]


def pixel_tokenizer(levels: int) -> Tokenizer:
    """The character tokenizer of `levels` grey levels: <|image|> = 0, <unk> = 1, "0" = 2, ..."""
    return build_char_tokenizer(["".join(str(k) for k in range(levels))], list(SPECIALS))


def quantise(images: Tensor, levels: int) -> Tensor:
    """Grey levels [N,64] (long, raster order) of images [N,1,8,8] (or [N,8,8]) in [0, 1]."""
    x = images.reshape(images.shape[0], -1).clamp(0.0, 1.0)  # [N,64], row by row
    return (x * levels).floor().clamp(max=levels - 1).long()


def levels_to_image(levels_seq: Tensor | Sequence[int], levels: int) -> Tensor:
    """The 8x8 image [8,8] in [0, 1] of 64 grey levels in raster order (level / (levels - 1))."""
    t = torch.as_tensor(levels_seq, dtype=torch.float32)
    if t.numel() != N_PIXELS:
        raise DataError(f"An image is {N_PIXELS} pixels, got {t.numel()}.")
    return t.reshape(SIDE, SIDE) / (levels - 1)


def level_text(levels_seq: Sequence[int]) -> str:
    """The characters of grey levels ("0312...")."""
    return "".join(str(int(v)) for v in levels_seq)


def text_levels(text: str) -> list[int]:
    """Grey levels of a level string, the start token dropped."""
    body = text.removeprefix(START)
    if not body.isdigit():
        raise DataError(f"Expected grey-level digits after {START}, got {body[:20]!r}.")
    return [int(c) for c in body]


def to_ids(levels_seq: Tensor) -> Tensor:
    """Token ids (start token first) [N,65] of grey levels [N,64]."""
    start = torch.zeros(levels_seq.shape[0], 1, dtype=torch.long)  # the start token's id is 0
    return torch.cat([start, levels_seq + N_SPECIAL], dim=1)


def from_ids(ids: Sequence[int]) -> list[int]:
    """Grey levels of pixel token ids (DataError on a special id)."""
    if any(int(i) < N_SPECIAL for i in ids):
        raise DataError("A special token where a pixel was expected.")
    return [int(i) - N_SPECIAL for i in ids]


def ascii_art(levels_seq: Sequence[int], levels: int) -> list[str]:
    """Eight lines of characters, darker ink as a denser character."""
    chars = [ASCII_RAMP[round(k * (len(ASCII_RAMP) - 1) / (levels - 1))] for k in range(levels)]
    return ["".join(chars[int(v)] * 2 for v in levels_seq[r * SIDE:(r + 1) * SIDE]) for r in range(SIDE)]


def split(data: PixelDataConfig) -> tuple[ImageSet, ImageSet]:
    """The (train, val) digits of `data`, as the trainer splits them."""
    return _split(data.n, data.val_fraction, data.seed)


@functools.lru_cache(maxsize=4)
def _split(n: int, val_fraction: float, seed: int) -> tuple[ImageSet, ImageSet]:
    images = load_image_set("digits", n or None, seed)
    train_idx, val_idx = split_indices(images.n, val_fraction, seed)
    return images.subset(train_idx), images.subset(val_idx)


def data_config(record: dict[str, Any]) -> PixelDataConfig:
    """The data config of a checkpoint's `[data]` record (unknown keys ignored)."""
    keys = PixelDataConfig.__dataclass_fields__
    return PixelDataConfig(**{k: v for k, v in record.items() if k in keys})


def completion_grid(original: Sequence[int], completions: Sequence[Sequence[int]], levels: int,
                    scale: int = 16, gap: int = 4) -> np.ndarray:
    """One RGB image [H,W,3] uint8: the original, its given upper half (the hidden lower half
    tinted blue) and each completion, side by side, every pixel a scale x scale square; dark ink
    is drawn dark on white paper."""
    panels = [levels_to_image(original, levels)]
    given = levels_to_image(original, levels).clone()
    panels.append(given)
    panels += [levels_to_image(c, levels) for c in completions]
    size = SIDE * scale
    width = len(panels) * size + (len(panels) - 1) * gap
    out = np.full((size, width, 3), 255, dtype=np.uint8)
    for k, panel in enumerate(panels):
        grey = (255 * (1.0 - panel.numpy())).round().astype(np.uint8)  # ink dark
        tile = np.repeat(np.repeat(grey, scale, 0), scale, 1)  # [size,size]
        rgb = np.stack([tile] * 3, axis=-1)
        if k == 1:  # the hidden lower half
            rgb[size // 2:] = (200, 215, 245)
        x0 = k * (size + gap)
        out[:, x0:x0 + size] = rgb
    return out
