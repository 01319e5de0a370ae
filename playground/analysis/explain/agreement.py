"""Agreement between importance vectors: Kendall tau-b, Spearman rho, top-k Jaccard, JSD.

All functions take 1-d arrays over the same input units. Special units (BOS/EOS/PAD, CLS)
are dropped with ``keep`` (True = a real unit that takes part in the ranking) before anything
is computed. Importances are compared by magnitude by default (``absolute=True``): a signed
attribution (IG, input x gradient) that pushes strongly *against* the target is as important
as one that pushes for it; attention is non-negative, so the choice does not change it.
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
import torch

from playground.analysis import divergences

ArrayLike = Sequence[float] | np.ndarray


def _vec(values: ArrayLike, keep: ArrayLike | None = None, absolute: bool = False) -> np.ndarray:
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    if keep is not None:
        mask = np.asarray(keep, dtype=bool).reshape(-1)
        if mask.shape != v.shape:
            raise ValueError(f"keep has {mask.size} entries for {v.size} values")
        v = v[mask]
    return np.abs(v) if absolute else v


def kendall_tau(a: ArrayLike, b: ArrayLike) -> tuple[float, float]:
    """Kendall tau-b and its two-sided p-value (scipy.stats.kendalltau); NaN for < 2 units or a constant vector."""
    from scipy.stats import kendalltau  # here, not at the top: scipy.stats adds ~1 s to the app's start

    a, b = _vec(a), _vec(b)
    if a.size < 2 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return math.nan, math.nan
    res = kendalltau(a, b, variant="b")
    return float(res.statistic), float(res.pvalue)


def spearman_rho(a: ArrayLike, b: ArrayLike) -> tuple[float, float]:
    """Spearman rank correlation and p-value (scipy.stats.spearmanr); NaN when undefined."""
    from scipy.stats import spearmanr  # here, not at the top: scipy.stats adds ~1 s to the app's start

    a, b = _vec(a), _vec(b)
    if a.size < 2 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return math.nan, math.nan
    res = spearmanr(a, b)
    return float(res.statistic), float(res.pvalue)


def top_k(values: ArrayLike, k: int) -> set[int]:
    """Indices of the k largest values (ties broken by lower index, deterministic)."""
    v = _vec(values)
    k = max(0, min(int(k), v.size))
    order = np.lexsort((np.arange(v.size), -v))  # by value desc, then index asc
    return {int(i) for i in order[:k]}


def topk_jaccard(a: ArrayLike, b: ArrayLike, k: int) -> float:
    """|top_k(a) ∩ top_k(b)| / |top_k(a) ∪ top_k(b)| (1.0 when both are empty)."""
    sa, sb = top_k(a, k), top_k(b, k)
    union = sa | sb
    return len(sa & sb) / len(union) if union else 1.0


def normalise(values: ArrayLike) -> np.ndarray:
    """|v| / Σ|v| (a distribution); the uniform distribution when every entry is 0."""
    v = np.abs(_vec(values))
    total = v.sum()
    if v.size == 0:
        return v
    return v / total if total > 0 else np.full(v.size, 1.0 / v.size)


def jsd(p: ArrayLike, q: ArrayLike, normalize: bool = True) -> float:
    """Jensen–Shannon divergence (natural log) of two vectors, 0 ≤ JSD ≤ ln 2
    (:func:`playground.analysis.divergences.jsd` in float64).

    With ``normalize`` the inputs are first mapped to |v| / Σ|v|.
    """
    p = normalise(p) if normalize else _vec(p)
    q = normalise(q) if normalize else _vec(q)
    if p.shape != q.shape:
        raise ValueError(f"JSD of vectors of different lengths {p.size} and {q.size}")
    return float(divergences.jsd(torch.from_numpy(p), torch.from_numpy(q)))


def tvd(p: ArrayLike, q: ArrayLike) -> float:
    """Total variation distance ½Σ|p − q| of two distributions (float64)."""
    return float(divergences.tvd(torch.from_numpy(_vec(p)), torch.from_numpy(_vec(q))))


@dataclass(frozen=True)
class Agreement:
    """How much two importance vectors agree (over the real units only)."""

    method_a: str
    method_b: str
    n_units: int
    kendall_tau: float
    kendall_p: float
    spearman_rho: float
    spearman_p: float
    topk_jaccard: float
    k: int
    jsd: float

    def to_dict(self) -> dict[str, float | int | str]:
        return asdict(self)


def default_k(n_units: int) -> int:
    """Top-k size used when none is given: a fifth of the units, between 1 and 5."""
    return max(1, min(5, math.ceil(n_units / 5)))


def agreement(
    a: ArrayLike,
    b: ArrayLike,
    keep: ArrayLike | None = None,
    k: int | None = None,
    absolute: bool = True,
    names: tuple[str, str] = ("a", "b"),
) -> Agreement:
    """Every agreement statistic of two importance vectors over the units where ``keep`` is True."""
    va, vb = _vec(a, keep, absolute), _vec(b, keep, absolute)
    if va.shape != vb.shape:
        raise ValueError(f"importance vectors differ in length: {va.size} and {vb.size}")
    k = default_k(va.size) if k is None else int(k)
    tau, tau_p = kendall_tau(va, vb)
    rho, rho_p = spearman_rho(va, vb)
    return Agreement(names[0], names[1], int(va.size), tau, tau_p, rho, rho_p,
                     topk_jaccard(va, vb, k), k, jsd(va, vb))


def agreement_table(
    importances: Mapping[str, ArrayLike],
    keep: ArrayLike | None = None,
    k: int | None = None,
    absolute: bool = True,
) -> pd.DataFrame:
    """A pandas DataFrame with one row per unordered pair of methods (in the given order)."""
    rows = [
        agreement(importances[x], importances[y], keep, k, absolute, (x, y)).to_dict()
        for x, y in itertools.combinations(list(importances), 2)
    ]
    columns = list(Agreement.__dataclass_fields__)
    return pd.DataFrame(rows, columns=columns)
