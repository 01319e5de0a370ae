"""Attention propagated through the layers: rollout, flow and gradient-weighted relevancy.

These are hand-written (they are the lesson) and pure: attention maps in, matrices out.

- Rollout (Abnar & Zuidema 2020): per layer Â = ½·mean_h A + ½·I with rows renormalised,
  R = Â_L ··· Â_1; row q of R is how much each input token reaches query q.
- Flow (same paper): the layered graph whose edges (layer l, token i) -> (layer l-1, token j)
  have capacity Â_l[i, j]; the importance of input j is the max flow from (L, q) to (0, j),
  then normalised to sum 1. scipy's max-flow needs integer capacities, so capacities are
  scaled by ``FLOW_SCALE`` and rounded.
- Relevancy (Chefer, Gur & Wolf 2021): Ā_l = mean_h (∇A_l ⊙ A_l)⁺, R ← R + Ā_l R from R = I.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor

from playground.errors import PlaygroundError

FLOW_SCALE = 1 << 20  # capacities are rounded to multiples of 2^-20 (~1e-6)
FLOW_MAX_TOKENS = 128  # attention flow is T max-flow problems on an (L+1)·T-node graph


def head_mean(attn: Tensor) -> Tensor:
    """[B,H,Q,K] -> [B,Q,K] (a [B,Q,K] map is returned as is)."""
    return attn.mean(dim=-3) if attn.dim() == 4 else attn


def with_residual(attn: Tensor, residual: float = 0.5) -> Tensor:
    """Â = (1 − r)·A + r·I with rows renormalised. attn [..., T, T] (square, self-attention)."""
    T = attn.shape[-1]
    if attn.shape[-2] != T:
        raise ValueError(f"rollout needs square self-attention maps, got {tuple(attn.shape)}")
    eye = torch.eye(T, dtype=attn.dtype, device=attn.device)
    a = (1.0 - residual) * attn + residual * eye  # [..., T, T]
    return a / a.sum(-1, keepdim=True).clamp_min(1e-12)


def attention_rollout(layers: Sequence[Tensor], residual: float = 0.5) -> Tensor:
    """Rollout R = Â_L ··· Â_1 from per-layer maps ([B,H,T,T] or head-mean [B,T,T]), first layer first.

    Returns [B,T,T]; row q is the rolled-out attention of query q over the input tokens.
    """
    if not layers:
        raise ValueError("rollout needs at least one attention map")
    rollout: Tensor | None = None
    for attn in layers:
        a_hat = with_residual(head_mean(attn).to(torch.float64), residual)  # [B,T,T]
        rollout = a_hat if rollout is None else a_hat @ rollout
    return rollout.to(layers[0].dtype)  # type: ignore[union-attr]


def attention_flow(layers: Sequence[Tensor], query: int, residual: float = 0.5,
                   max_tokens: int = FLOW_MAX_TOKENS) -> np.ndarray:
    """Attention flow of one example: max flow from (layer L, ``query``) to each (layer 0, j).

    ``layers``: per-layer maps of ONE example, [H,T,T] or [T,T], first layer first.
    Returns the flow values [T] normalised to sum 1 (zeros where no flow reaches).
    """
    # function-level: scipy.sparse.csgraph adds ~0.25 s to the app's start and only flow needs it
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import maximum_flow

    mats = [with_residual((a.detach().mean(0) if a.dim() == 3 else a.detach()).to(torch.float64), residual)
            for a in layers]  # each [T,T]
    T = mats[0].shape[-1]
    if T > max_tokens:
        raise PlaygroundError(
            f"Attention flow is capped at {max_tokens} tokens (it solves one max-flow problem per token); "
            f"this input has {T}. Shorten the input or use rollout."
        )
    L = len(mats)
    n_nodes = (L + 1) * T
    rows, cols, caps = [], [], []
    for layer, a_hat in enumerate(mats, start=1):
        cap = np.rint(a_hat.cpu().numpy() * FLOW_SCALE).astype(np.int64)  # [T,T]
        i, j = np.nonzero(cap)
        rows.append(layer * T + i)  # node (layer, i) ...
        cols.append((layer - 1) * T + j)  # ... feeds (layer - 1, j)
        caps.append(cap[i, j])
    graph = csr_matrix(
        (np.concatenate(caps).astype(np.int32), (np.concatenate(rows), np.concatenate(cols))),
        shape=(n_nodes, n_nodes),
    )
    source = L * T + query
    flows = np.zeros(T)
    for j in range(T):
        flows[j] = maximum_flow(graph, source, j).flow_value / FLOW_SCALE
    total = flows.sum()
    return flows / total if total > 0 else flows


def relevancy(attn: Sequence[Tensor], grads: Sequence[Tensor]) -> Tensor:
    """Chefer et al. 2021 relevancy from per-layer maps and their gradients ([B,H,T,T] each).

    Ā_l = mean_h max(∇A_l ⊙ A_l, 0); R = I; R ← R + Ā_l R for l = 1..L. Returns R [B,T,T] (≥ 0).
    """
    if len(attn) != len(grads) or not attn:
        raise ValueError("relevancy needs one gradient per attention map (and at least one map)")
    B, _, T, _ = attn[0].shape
    R = torch.eye(T, dtype=torch.float64, device=attn[0].device).expand(B, T, T).clone()
    for a, g in zip(attn, grads):
        a_bar = (g.to(torch.float64) * a.to(torch.float64)).clamp_min(0).mean(dim=1)  # [B,T,T]
        R = R + a_bar @ R
    return R


def entropy(dist: Tensor, dim: int = -1) -> Tensor:
    """Shannon entropy in nats along ``dim`` (0·log 0 = 0)."""
    p = dist.to(torch.float64)
    return -(torch.special.xlogy(p, p)).sum(dim)
