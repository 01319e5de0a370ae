"""How far apart two distributions are: total variation and Jensen–Shannon, in one place.

Both work on torch tensors over the last axis, batched and differentiable (the adversarial
search backpropagates through :func:`jsd`); the agreement table calls them on one pair of
float64 vectors. Natural log throughout, so 0 ≤ JSD ≤ ln 2 and 0 ≤ TVD ≤ 1.
"""
from __future__ import annotations

import math

import torch
from torch import Tensor

LN2 = math.log(2.0)  # the largest JSD: two distributions with disjoint supports


def wide(t: Tensor) -> Tensor:
    """``t`` in float32 at least: float16/bfloat16 widen to float32, float64 stays float64 (a
    model cast to float64 for numerical honesty keeps its precision through the softmax)."""
    return t if t.dtype == torch.float64 else t.float()


def tvd(p: Tensor, q: Tensor) -> Tensor:
    """Total variation distance ½Σ|p − q| over the last axis. p, q [..., V] -> [...]."""
    return 0.5 * (p - q).abs().sum(-1)


def jsd(p: Tensor, q: Tensor) -> Tensor:
    """Jensen–Shannon divergence ½KL(p‖m) + ½KL(q‖m), m = (p+q)/2, over the last axis, clamped
    to [0, ln 2]. p, q [..., K] -> [...]. 0·log 0 = 0, so disjoint supports give exactly ln 2."""
    m = 0.5 * (p + q)
    kl_p = torch.special.xlogy(p, p) - torch.special.xlogy(p, m)  # [..., K]
    kl_q = torch.special.xlogy(q, q) - torch.special.xlogy(q, m)
    return (0.5 * kl_p.sum(-1) + 0.5 * kl_q.sum(-1)).clamp(0.0, LN2)
