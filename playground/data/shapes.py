"""Procedural shape images with their object masks (for ViT and the pointing game).

Each image: a uniformly coloured background with Gaussian pixel noise, and one solid shape
(circle, square, triangle, cross, diamond or ring) at a random position, size and colour,
drawn with a colour far from the background (at least 0.4 apart in some channel). The mask
marks exactly the shape's pixels. Shapes are upright (no rotation), so "square" and "diamond"
(a square turned 45 degrees) stay distinct classes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch

from playground.data.types import ImageSet
from playground.errors import ConfigError

__all__ = ["make_shapes", "SHAPE_CLASSES", "DEFAULT_SHAPES", "shape_mask"]

DEFAULT_SHAPES = ("circle", "square", "triangle", "cross")
_BG_NOISE, _FG_NOISE, _MIN_CONTRAST = 0.08, 0.03, 0.4
_SQRT3 = 3 ** 0.5


def _circle(x: np.ndarray, y: np.ndarray, r: float) -> np.ndarray:
    return x ** 2 + y ** 2 <= r ** 2


def _square(x: np.ndarray, y: np.ndarray, r: float) -> np.ndarray:
    h = r * 0.8  # same area scale as the circle, roughly
    return (np.abs(x) <= h) & (np.abs(y) <= h)


def _triangle(x: np.ndarray, y: np.ndarray, r: float) -> np.ndarray:
    # equilateral, inscribed in the circle of radius r, apex up (y grows downwards)
    below_left = _SQRT3 * x - y <= r    # right edge
    below_right = -_SQRT3 * x - y <= r  # left edge
    above_base = y <= r / 2
    return below_left & below_right & above_base


def _cross(x: np.ndarray, y: np.ndarray, r: float) -> np.ndarray:
    t = max(r / 3, 1.0)
    return ((np.abs(x) <= t) & (np.abs(y) <= r)) | ((np.abs(y) <= t) & (np.abs(x) <= r))


def _diamond(x: np.ndarray, y: np.ndarray, r: float) -> np.ndarray:
    return np.abs(x) + np.abs(y) <= r


def _ring(x: np.ndarray, y: np.ndarray, r: float) -> np.ndarray:
    d2 = x ** 2 + y ** 2
    return (d2 <= r ** 2) & (d2 >= (0.55 * r) ** 2)


SHAPE_CLASSES: dict[str, Callable[[np.ndarray, np.ndarray, float], np.ndarray]] = {
    "circle": _circle, "square": _square, "triangle": _triangle,
    "cross": _cross, "diamond": _diamond, "ring": _ring,
}


def shape_mask(shape: str, image_size: int, cx: float, cy: float, r: float) -> np.ndarray:
    """Boolean [H, W] mask of ``shape`` centred at (cx, cy) with radius ``r`` (pixel units)."""
    coords = np.arange(image_size, dtype=np.float64) + 0.5  # pixel centres
    x = coords[None, :] - cx  # [1, W]
    y = coords[:, None] - cy  # [H, 1]
    x, y = np.broadcast_arrays(x, y)
    return SHAPE_CLASSES[shape](x, y, r)


def make_shapes(n: int, seed: int, image_size: int = 32,
                classes: Sequence[str] = DEFAULT_SHAPES) -> ImageSet:
    """``n`` RGB images of shapes with masks; labels balanced (counts differ by at most 1).

    Deterministic for ``seed``. Radius is 15-35% of ``image_size``; the shape lies fully inside.
    """

    classes = list(classes)
    unknown = [c for c in classes if c not in SHAPE_CLASSES]
    if unknown:
        raise ConfigError(f"unknown shape class {unknown[0]!r}; choose from: {', '.join(SHAPE_CLASSES)}")
    if len(classes) < 2 or len(set(classes)) != len(classes):
        raise ConfigError(f"need at least 2 distinct shape classes, got {classes}")
    if image_size < 8:
        raise ConfigError(f"image_size must be >= 8 pixels, got {image_size}")
    if n < 1:
        raise ConfigError(f"n must be >= 1, got {n}")
    rng = np.random.default_rng(seed)
    labels = rng.permutation(np.arange(n) % len(classes))
    images = np.empty((n, 3, image_size, image_size), dtype=np.float32)
    masks = np.empty((n, image_size, image_size), dtype=bool)
    for i, label in enumerate(labels):
        r = rng.uniform(0.15, 0.35) * image_size
        cx, cy = rng.uniform(r + 0.5, image_size - r - 0.5, size=2)
        mask = shape_mask(classes[label], image_size, cx, cy, r)
        bg = rng.uniform(0.0, 1.0, size=3)
        fg = rng.uniform(0.0, 1.0, size=3)
        while np.abs(fg - bg).max() < _MIN_CONTRAST:
            fg = rng.uniform(0.0, 1.0, size=3)
        img = bg[:, None, None] + rng.normal(0.0, _BG_NOISE, size=(3, image_size, image_size))  # [3, H, W]
        obj = fg[:, None, None] + rng.normal(0.0, _FG_NOISE, size=(3, image_size, image_size))
        img = np.where(mask[None], obj, img)
        images[i] = np.clip(img, 0.0, 1.0)
        masks[i] = mask
    return ImageSet(images=torch.from_numpy(images), labels=torch.from_numpy(labels.astype(np.int64)),
                    class_names=classes, masks=torch.from_numpy(masks))
