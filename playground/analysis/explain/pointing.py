"""Pointing game on images with a known object mask (vit-shapes).

Score = share of the top-k importance mass that lies inside the object: take the k patches
with the largest |importance| (k = number of object patches unless given) and divide the
importance they carry inside the mask by all the importance they carry. A perfect oracle map
(importance = the mask) scores 1. ``hit`` is the classic pointing game (Zhang et al. 2016):
whether the single most important patch touches the object.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import torch


def patch_mask(mask: torch.Tensor | np.ndarray, patch_size: int, min_fraction: float = 0.0) -> np.ndarray:
    """Pixel mask [H,W] -> patch mask [H/p, W/p]: patches whose share of object pixels exceeds min_fraction."""
    m = np.asarray(mask.cpu() if isinstance(mask, torch.Tensor) else mask, dtype=np.float64)
    H, W = m.shape
    if H % patch_size or W % patch_size:
        raise ValueError(f"mask {H}x{W} is not a whole number of {patch_size}-pixel patches")
    frac = m.reshape(H // patch_size, patch_size, W // patch_size, patch_size).mean(axis=(1, 3))
    return frac > min_fraction


@dataclass(frozen=True)
class PointingScore:
    """Pointing-game result of one importance map."""

    method: str
    mass_share: float  # share of top-k |importance| inside the mask, in [0, 1]
    hit: bool  # the top patch touches the object
    k: int

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def pointing_game(importance: np.ndarray | torch.Tensor, mask: np.ndarray, k: int | None = None,
                  method: str = "") -> PointingScore:
    """Score a patch-importance map ([h,w] or [h*w]) against a patch mask of the same size."""
    imp = np.abs(np.asarray(importance.detach().cpu() if isinstance(importance, torch.Tensor) else importance,
                            dtype=np.float64)).reshape(-1)
    inside = np.asarray(mask, dtype=bool).reshape(-1)
    if imp.shape != inside.shape:
        raise ValueError(f"importance has {imp.size} patches, mask {inside.size}")
    k = int(inside.sum()) if k is None else int(k)
    k = max(1, min(k, imp.size))
    order = np.lexsort((np.arange(imp.size), -imp))[:k]
    total = imp[order].sum()
    share = float(imp[order][inside[order]].sum() / total) if total > 0 else 0.0
    return PointingScore(method, share, bool(inside[order[0]]) and total > 0, k)


def alignment_accuracy(matrix: np.ndarray, gold: list[tuple[int, int]], special: list[bool] | None = None) -> float:
    """Share of aligned target tokens whose most important source token (by |value|, specials
    excluded) is one of its gold source tokens. ``matrix`` [T_out, S]; ``gold`` (target, source)
    pairs in the same units. NaN when no target token is aligned."""
    m = np.abs(np.asarray(matrix, dtype=np.float64))
    if special is not None:
        m = np.where(np.asarray(special, dtype=bool)[None, :], -np.inf, m)
    wanted: dict[int, set[int]] = {}
    for t, s in gold:
        if 0 <= t < m.shape[0]:
            wanted.setdefault(int(t), set()).add(int(s))
    if not wanted:
        return float("nan")
    hits = sum(int(np.argmax(m[t])) in srcs for t, srcs in wanted.items())
    return hits / len(wanted)
