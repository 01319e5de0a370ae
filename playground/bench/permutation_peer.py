"""The peer of `bench experiments`: Jain & Wallace's permutation test done the plain way.

Per example, every permutation runs the full forward with the explaining row of the chosen
layer replaced (``override_attention``): nothing of the prefix is reused. The app's own
permutation test is :func:`playground.analysis.experiments.jain_wallace.permutation`, which
runs the prefix once; the bench times both on the same model and compares their statistics.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from playground.analysis.explain import attention as am
from playground.analysis.query import Query
from playground.models.attention import override_attention, permute_override


@dataclass
class PermutationResult:
    """TVD of ŷ under ``n`` random permutations of the explaining attention row, per example."""

    tvd: Tensor  # [B,n]
    median: Tensor  # [B]
    max_attention: Tensor  # [B] largest head-mean weight of the row over the real units

    def to_dict(self) -> dict[str, list]:
        return {"tvd": self.tvd.tolist(), "median": self.median.tolist(), "max_attention": self.max_attention.tolist()}


def permutation_test(query: Query, n: int = 100, layers: list[int] | None = None, heads: list[int] | None = None,
                     seed: int = 0) -> PermutationResult:
    """Permute the explaining row over the real units ``n`` times (all permutations of one example in one forward).

    ``layers``: indices into the explaining maps (default: the last); ``heads``: None = all heads.
    """
    names = am.explaining_maps(query)
    chosen = [names[i] for i in (layers if layers is not None else [-1])]
    rec = am.record(query)
    gen = torch.Generator().manual_seed(seed)
    ref = query.probs()  # [B,V]
    tvds, maxes = [], []
    for b in range(query.batch_size):
        sub = query.select([b] * n)
        a = rec.maps[chosen[-1]][b]  # [H,Q,K]
        K = a.shape[-1]
        keys = query.explainer.permutable_keys(query, b, K)  # the real, visible units' keys
        perm = torch.arange(K).repeat(n, 1)  # [n,K]
        for i in range(n):
            perm[i, keys] = keys[torch.randperm(keys.numel(), generator=gen)]
        perm = perm.to(query.device)[:, None, None, :]  # [n,1,1,K]
        q_row = query.explainer.query_row(query, b)  # None: no single row (mean pooling), permute every row
        row = None if q_row is None else [q_row]
        with override_attention(query.model, {name: permute_override(perm, rows=row, heads=heads) for name in chosen}):
            p = sub.probs()  # [n,V]
        tvds.append(0.5 * (p - ref[b]).abs().sum(-1))
        row_weights = am.rows(query.select([b]), rec.maps[chosen[-1]][b:b + 1]).mean(1)[0]  # [U]
        real = query.units_mask[b]  # type: ignore[index]
        maxes.append(row_weights[real].max() if bool(real.any()) else row_weights.new_zeros(()))
    tvd = torch.stack(tvds)
    return PermutationResult(tvd.cpu(), tvd.median(dim=1).values.cpu(), torch.stack(maxes).cpu())
