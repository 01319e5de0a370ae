"""Automatic head scores from recorded attention maps ``[B,H,Q,K]`` (one per module).

- positional: the mean attention mass a query puts on a fixed key: ``previous`` (key q-1),
  ``self`` (key q), ``next`` (key q+1, 0 under a causal mask) and ``first`` (key 0); queries
  without such a key are left out, and so is query 0 for ``previous`` and ``first`` (under a
  causal mask its only key is itself).
- induction: on a random token sequence of length L repeated twice (2L tokens), the mean
  attention from each query q of the second copy (q = L .. 2L-1, token r[q-L]) to the key after
  that token's earlier occurrence, key q-L+1 (Olsson et al. 2022's induction pattern).
- in-context loss: the next-token loss on the first copy (targets 1 .. L-1) and on the second
  (targets L+1 .. 2L-1, each predictable by copying); an induction circuit makes the second
  much lower. Target L (r[0] after r[L-1]) is in neither: nothing predicts it.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor

POSITIONAL = ("previous", "self", "next", "first")


def _diagonal_mean(w: Tensor, offset: int) -> Tensor:
    """Mean over batch and the queries that have key q + offset of w[b, h, q, q + offset] -> [H]."""
    d = w.diagonal(offset=offset, dim1=-2, dim2=-1)  # [B,H,n]: entries (q, q+offset)
    if d.shape[-1] == 0:
        return w.new_zeros(w.shape[1])
    return d.mean(dim=(0, 2))


def positional_scores(maps: Mapping[str, Tensor]) -> dict[str, dict[str, list[float]]]:
    """``{score: {module: [H]}}`` for the scores in :data:`POSITIONAL`, from maps [B,H,Q,K] (Q == K)."""
    out: dict[str, dict[str, list[float]]] = {s: {} for s in POSITIONAL}
    for name, w in maps.items():
        w = w.float()
        out["previous"][name] = _diagonal_mean(w, -1).tolist()
        out["self"][name] = _diagonal_mean(w, 0).tolist()
        out["next"][name] = _diagonal_mean(w, 1).tolist()
        out["first"][name] = w[:, :, 1:, 0].mean(dim=(0, 2)).tolist() if w.shape[2] > 1 else [0.0] * w.shape[1]
    return out


def uniform_causal_baseline(T: int, offset: int = -1, first_query: int = 1) -> float:
    """What a head attending uniformly to the visible keys scores under a causal mask: the mean
    of 1 / (q + 1) over queries q = first_query .. T-1 (every causal key gets 1 / (q + 1))."""
    qs = range(max(first_query, -offset), T)
    return sum(1.0 / (q + 1) for q in qs) / max(1, len(qs))


def repeated_random_tokens(vocab: Sequence[int], length: int, batch: int, generator: torch.Generator) -> Tensor:
    """``batch`` random sequences of ``length`` tokens drawn from ``vocab``, each repeated: [B, 2L]."""
    pool = torch.as_tensor(list(vocab), dtype=torch.long)
    first = pool[torch.randint(len(pool), (batch, length), generator=generator)]  # [B,L]
    return torch.cat([first, first], dim=1)  # [B,2L]


def induction_scores(maps: Mapping[str, Tensor], length: int) -> dict[str, list[float]]:
    """``{module: [H]}``: mean of w[b, h, q, q-L+1] over b and q = L .. 2L-1 (maps [B,H,2L,2L])."""
    out = {}
    for name, w in maps.items():
        d = w.float().diagonal(offset=1 - length, dim1=-2, dim2=-1)  # [B,H,L+1]: queries L-1 .. 2L-1
        out[name] = d[..., 1:].mean(dim=(0, 2)).tolist()  # drop query L-1 (still the first copy)
    return out


def in_context_losses(logits: Tensor, tokens: Tensor, length: int) -> dict[str, float]:
    """Next-token loss on each copy of a repeated sequence: logits [B,2L,V], tokens [B,2L].

    ``first``: targets 1 .. L-1; ``second``: targets L+1 .. 2L-1; ``drop`` = first - second.
    """
    loss = F.cross_entropy(logits[:, :-1].flatten(0, 1).float(), tokens[:, 1:].flatten(),
                           reduction="none").view(tokens.shape[0], -1)  # [B,2L-1]: target t at column t-1
    first = loss[:, : length - 1].mean()  # targets 1 .. L-1
    second = loss[:, length:].mean()  # targets L+1 .. 2L-1
    return {"first": float(first), "second": float(second), "drop": float(first - second)}
