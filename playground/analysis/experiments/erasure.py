"""Erasure and faithfulness over a set of examples.

- Serrano & Smith (ACL 2019) erasure to flip: remove units in the order of each method's
  ranking until the predicted output changes; report the fraction removed and the share of
  examples that never flip. ``level="attention"`` (their setting) zeroes the units' weights in
  the explained attention row and renormalises; ``level="input"`` replaces the units by the
  baseline (pad/unk token, black patch).
- Deletion / insertion curves (input level) with AOPC over the bins {1, 5, 10, 20, 50}% and
  ERASER comprehensiveness / sufficiency (DeYoung et al. 2020) from the same curves.
- Pointing game over a dataset with object masks (vit-shapes).

The core functions take closures (``predict(keep) -> probs``, ``score(keep) -> f``) over a
boolean keep-mask [N, m] of the m ranked units, so they can be tested on any model, e.g. a
linear one; :class:`~playground.analysis.experiments.core.Probe` supplies them for real models.

AOPC here is the mean over the bins of f(x) − f(x with the top-k% removed) (deletion), and
of f(top-k% only) − f(nothing) (insertion); comprehensiveness is the deletion AOPC and
sufficiency the mean over the bins of f(x) − f(top-k% only). f is the probability of the
explained output.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import torch
from torch import Tensor

from playground.analysis.experiments.core import (
    ExperimentGen,
    ExperimentResult,
    Probe,
    ProgressFn,
    StopFlag,
    drive,
    loop_examples,
    make_generator,
    row_stats,
)
from playground.analysis.experiments.jain_wallace import compute_importances, methods_for
from playground.analysis.explain.pointing import pointing_game
from playground.analysis.query import Query
from playground.errors import PlaygroundError

AOPC_BINS = (0.01, 0.05, 0.10, 0.20, 0.50)
CURVE_GRID = (0.0, 0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
ERASURE_METHODS = ("attention", "attention_grad", "saliency", "ig", "loo", "random")
CURVE_METHODS = ("attention", "rollout", "ig", "loo", "random")
# plausibility of the app's methods and of Jain & Wallace's own definitions (jw_grad, loo_delete)
POINTING_METHODS = ("attention", "rollout", "saliency", "jw_grad", "ig", "loo", "loo_delete", "random")

KeepFn = Callable[[Tensor], Tensor]  # keep [N,m] bool -> [N,V] probabilities (or [N] scores)


# ----------------------------------------------------------------------------------------
# Pure pieces over closures


SIGNED_METHODS = frozenset({"ixg", "ig", "deeplift", "attention_grad", "attention_grad_only"})


def ranking(importance: np.ndarray | Tensor, signed: bool = False) -> np.ndarray:
    """Unit order, most important first (ties by lower index).

    Unsigned importances (attention, saliency, leave-one-out) rank by |value|; signed ones
    (IG, input × gradient, gradients) by value, so the units that support the explained output
    most go first and units that argue against it go last.
    """
    v = np.asarray(importance.detach().cpu() if isinstance(importance, Tensor) else importance, dtype=np.float64)
    v = v if signed else np.abs(v)
    return np.lexsort((np.arange(v.size), -v))


def prefix_masks(order: Sequence[int], m: int, counts: Sequence[int], keep_top: bool = False,
                 device: str | torch.device = "cpu") -> Tensor:
    """Keep-masks [len(counts), m]: row i removes (or, with keep_top, keeps only) the first counts[i] of order."""
    order_t = torch.as_tensor(np.asarray(order), dtype=torch.long, device=device)
    rank = torch.empty(m, dtype=torch.long, device=device)
    rank[order_t] = torch.arange(m, device=device)
    c = torch.as_tensor(list(counts), dtype=torch.long, device=device)[:, None]  # [N,1]
    top = rank[None, :] < c  # [N,m] True = among the first c
    return top if keep_top else ~top


def removals_to_flip(predict: KeepFn, order: Sequence[int], m: int, max_remove: int | None = None) -> int | None:
    """How many units, removed in ``order``, until argmax of ``predict`` changes (None: never).

    ``predict(keep [N,m]) -> [N,C]``; all prefixes 0..max_remove are evaluated in one batch.
    """
    max_remove = m if max_remove is None else min(m, max_remove)
    keep = prefix_masks(order, m, range(max_remove + 1))
    out = predict(keep)  # [N,C]
    pred = out.argmax(-1)
    flipped = (pred != pred[0]).nonzero().flatten()
    return int(flipped[0]) if flipped.numel() else None


def bin_counts(m: int, bins: Sequence[float] = AOPC_BINS) -> list[int]:
    """Units in each bin: ceil(fraction · m), at least 1, at most m."""
    return [min(m, max(1, math.ceil(b * m - 1e-9))) for b in bins]


@dataclass
class Curves:
    """Deletion / insertion scores at ``counts`` units (counts[0] = 0) and the AOPC numbers."""

    counts: list[int]
    deletion: list[float]  # f(x with the top-k removed); deletion[0] = f(x)
    insertion: list[float]  # f(only the top-k kept); insertion[0] = f(nothing)
    f_x: float
    f_empty: float
    aopc_deletion: float
    aopc_insertion: float
    comprehensiveness: float
    sufficiency: float


def erasure_curves(score: KeepFn, order: Sequence[int], m: int, bins: Sequence[float] = AOPC_BINS,
                   grid: Sequence[float] = CURVE_GRID) -> Curves:
    """Deletion and insertion curves of one ranking, in one batched call of ``score(keep) -> [N]``.

    Points: k = 0, the bins' counts and the grid's counts (fractions of m); AOPC and ERASER
    numbers use the bins.
    """
    b_counts = bin_counts(m, bins)
    g_counts = [min(m, round(f * m)) for f in grid]
    counts = sorted({0, m, *b_counts, *g_counts})
    dele = prefix_masks(order, m, counts)  # [N,m]
    ins = prefix_masks(order, m, counts, keep_top=True)
    s = score(torch.cat([dele, ins])).detach().double().cpu()  # [2N]
    n = len(counts)
    d, i = s[:n].tolist(), s[n:].tolist()
    f_x, f_empty = d[0], i[0]
    at = {c: j for j, c in enumerate(counts)}
    d_b = np.array([d[at[c]] for c in b_counts])
    i_b = np.array([i[at[c]] for c in b_counts])
    return Curves(counts, d, i, f_x, f_empty, float(np.mean(f_x - d_b)), float(np.mean(i_b - f_empty)),
                  float(np.mean(f_x - d_b)), float(np.mean(f_x - i_b)))


# ----------------------------------------------------------------------------------------
# Closures over a Probe


def attention_keep_fn(probe: Probe) -> KeepFn:
    """keep [N,m] over the probe's real keys -> outputs [N,V] with removed keys zeroed in the
    explained row of the chosen heads and each head's row renormalised."""
    real = probe.real_keys.nonzero().flatten()
    base = probe.head_rows()  # [Hs,K]

    def predict(keep: Tensor) -> Tensor:
        N = keep.shape[0]
        factor = torch.ones(N, base.shape[1], device=base.device)
        factor[:, real] = keep.to(base.device).float()
        rows = base[None] * factor[:, None, :]  # [N,Hs,K]
        rows = rows / rows.sum(-1, keepdim=True).clamp_min(1e-12)
        return probe.run_rows(rows)

    return predict


def attention_max_remove(probe: Probe) -> int:
    """How many real keys may be zeroed while every chosen head keeps some weight."""
    base = probe.head_rows()
    special_mass = base[:, probe.special_keys].sum(-1) if probe.special_keys.any() else base.new_zeros(base.shape[0])
    return probe.n_real if bool((special_mass > 0).all()) else probe.n_real - 1


def unit_keep_fn(probe: Probe) -> KeepFn:
    """keep [N,m] over the probe's real input units -> outputs [N,V] with removed units replaced by the baseline."""
    units = probe.real_unit_mask.nonzero().flatten()
    U = probe.query.n_units

    def predict(keep: Tensor) -> Tensor:
        full = torch.ones(keep.shape[0], U, dtype=torch.bool, device=probe.device)
        full[:, units] = keep.to(probe.device)
        return probe.run_units(full)

    return predict


def target_score(predict: KeepFn, target: int) -> KeepFn:
    """score(keep) = predict(keep)[:, target]."""
    return lambda keep: predict(keep)[:, target]


def attention_gradient(probe: Probe) -> Tensor:
    """∂ log p(target) / ∂α over the keys of the explained row (mean over the chosen heads), [K].

    Serrano & Smith's gradient ranking of attention weights.
    """
    rows = probe.head_rows().clone()[None].requires_grad_(True)  # [1,Hs,K]
    out = probe.run_rows(rows, grad=True)  # [1,V]
    (g,) = torch.autograd.grad(out[0, probe.target].clamp_min(1e-30).log(), [rows])
    return g[0].mean(0).detach()


# ----------------------------------------------------------------------------------------
# Importances in the probe's unit space


def probe_importances(probe: Probe, methods: Sequence[str], importance_fn: Callable[[Query], dict[str, np.ndarray]] | None,
                      layer: int | None = None, head: int | None = None) -> dict[str, np.ndarray]:
    """Importance over the probe's input units [U] for each method (random handled by callers).

    ``attention`` is the probe's own row (module/heads being erased), ``attention_grad`` its
    gradient × attention (S&S); the rest come from the per-input analyzer.
    """
    out: dict[str, np.ndarray] = {}
    rest = [m for m in methods if m not in ("attention", "attention_grad", "attention_grad_only", "random")]
    if rest:
        out.update(importance_fn(probe.query) if importance_fn else compute_importances(probe.query, rest, layer, head))
    if "attention" in methods:
        out["attention"] = probe.keys_to_units(probe.alpha)
    if "attention_grad" in methods:
        out["attention_grad"] = probe.keys_to_units(attention_gradient(probe) * probe.alpha)
    if "attention_grad_only" in methods:
        out["attention_grad_only"] = probe.keys_to_units(attention_gradient(probe))
    return out


def _order_over(real_units: np.ndarray, importance: np.ndarray, method: str = "") -> np.ndarray:
    """Order (indices into real_units) by the importance of those units."""
    return ranking(importance[real_units], signed=method in SIGNED_METHODS)


# ----------------------------------------------------------------------------------------
# Erasure to flip


@dataclass
class ErasureRow:
    """One example, one ranking method: units removed until the decision flipped."""

    example: int
    method: str
    level: str
    n_units: int
    removed: float  # units removed at the flip (random: mean over draws; NaN when never)
    fraction: float  # removed / n_units
    flipped: float  # 1 flipped, 0 never (random: share of draws that flipped)


@dataclass
class ErasureResult(ExperimentResult):
    experiment: ClassVar[str] = "erasure"

    def method_stats(self) -> list[dict[str, Any]]:
        out = []
        for method in dict.fromkeys(r.method for r in self.rows):
            rows = [r for r in self.rows if r.method == method]
            fr = [r.fraction for r in rows if math.isfinite(r.fraction)]
            s = row_stats(fr)
            # never flipped counts as "all units" (a lower bound): comparable across methods
            censored = [r.flipped * r.fraction + (1 - r.flipped) if math.isfinite(r.fraction) else 1.0 for r in rows]
            out.append({"method": method, "n": len(rows), "mean_fraction": s["mean"], "median_fraction": s["median"],
                        "std_fraction": s["std"], "share_never": float(np.mean([1 - r.flipped for r in rows])),
                        "mean_fraction_censored": float(np.mean(censored))})
        return out

    def stats(self) -> dict[str, Any]:
        return {"methods": self.method_stats()}


def iter_erasure(
    queries: Sequence[Query],
    methods: Sequence[str] = ERASURE_METHODS,
    level: str = "attention",
    module: str | None = None,
    heads: Sequence[int] | None = None,
    random_draws: int = 20,
    seed: int = 0,
    importance_fn: Callable[[Query], dict[str, np.ndarray]] | None = None,
    stop: StopFlag = None,
    settings: dict[str, Any] | None = None,
) -> ExperimentGen:
    """Serrano & Smith erasure to flip for each ranking method on every example."""
    if level not in ("attention", "input"):
        raise PlaygroundError(f"Erasure level {level!r}; choose 'attention' (zero and renormalise) or 'input'.")
    queries = list(queries)
    skipped: list[str] = []
    if queries and importance_fn is None:
        methods, skipped = methods_for(queries[0], methods)
    gen = make_generator(seed)
    result = ErasureResult(settings={"methods": list(methods), "skipped_methods": skipped, "level": level, "module": module,
                                     "heads": None if heads is None else list(heads), "random_draws": random_draws,
                                     "seed": seed, **(settings or {})})

    def work(i: int, q: Query) -> list[ErasureRow]:
        probe = Probe(q, module, heads)
        result.settings["module"] = probe.module
        if level == "attention":
            units = probe.real_units().cpu().numpy()
            predict, max_remove = attention_keep_fn(probe), attention_max_remove(probe)
        else:
            units = probe.real_unit_mask.nonzero().flatten().cpu().numpy()
            predict, max_remove = unit_keep_fn(probe), None
        m = len(units)
        if m < 2:
            return []
        imp = probe_importances(probe, methods, importance_fn)
        rows = []
        for method in methods:
            if method == "random":
                got = []
                for _ in range(random_draws):
                    order = torch.randperm(m, generator=gen).numpy()
                    got.append(removals_to_flip(predict, order, m, max_remove))
                flips = [g for g in got if g is not None]
                removed = float(np.mean(flips)) if flips else math.nan
                rows.append(ErasureRow(i, method, level, m, removed, removed / m, len(flips) / len(got)))
                continue
            order = _order_over(units, imp[method], method)
            k = removals_to_flip(predict, order, m, max_remove)
            rows.append(ErasureRow(i, method, level, m, math.nan if k is None else float(k),
                                   math.nan if k is None else k / m, 0.0 if k is None else 1.0))
        return rows

    return (yield from loop_examples("erasure", list(queries), result, work, stop))


def erasure(queries: Sequence[Query], progress: ProgressFn | None = None, **kwargs: Any) -> ErasureResult:
    """:func:`iter_erasure` run to the end."""
    return drive(iter_erasure(queries, **kwargs), progress)


# ----------------------------------------------------------------------------------------
# Deletion / insertion, AOPC, ERASER


@dataclass
class CurveRow:
    """One example, one method: AOPC and ERASER numbers (input-level erasure)."""

    example: int
    method: str
    n_units: int
    f_x: float
    f_empty: float
    aopc_deletion: float
    aopc_insertion: float
    comprehensiveness: float
    sufficiency: float


@dataclass
class CurvesResult(ExperimentResult):
    """Rows: per example and method. ``extra["curves"]``: per method, the mean deletion and
    insertion curves over examples at the grid fractions."""

    experiment: ClassVar[str] = "aopc"

    def method_stats(self) -> list[dict[str, Any]]:
        out = []
        for method in dict.fromkeys(r.method for r in self.rows):
            rows = [r for r in self.rows if r.method == method]
            entry: dict[str, Any] = {"method": method, "n": len(rows)}
            for key in ("aopc_deletion", "aopc_insertion", "comprehensiveness", "sufficiency"):
                vals = [getattr(r, key) for r in rows]
                entry[key] = float(np.mean(vals))
                entry[key + "_std"] = float(np.std(vals, ddof=1)) if len(vals) > 1 else 0.0
            out.append(entry)
        return out

    def stats(self) -> dict[str, Any]:
        return {"methods": self.method_stats(), "bins": list(self.settings.get("bins", AOPC_BINS))}

    def curve_frame(self) -> pd.DataFrame:
        """Long DataFrame: method, fraction, curve ("deletion"|"insertion"), mean score, n."""
        rows = []
        for method, c in self.extra.get("curves", {}).items():
            n = c["n"]
            for f, d, ins in zip(c["fractions"], c["deletion_sum"], c["insertion_sum"]):
                rows.append({"method": method, "fraction": f, "curve": "deletion", "score": d / n if n else math.nan, "n": n})
                rows.append({"method": method, "fraction": f, "curve": "insertion", "score": ins / n if n else math.nan, "n": n})
        return pd.DataFrame(rows, columns=["method", "fraction", "curve", "score", "n"])


def _interp(counts: list[int], values: list[float], m: int, grid: Sequence[float]) -> list[float]:
    x = np.asarray(counts, dtype=np.float64) / max(1, m)
    return np.interp(np.asarray(grid), x, np.asarray(values)).tolist()


def iter_curves(
    queries: Sequence[Query],
    methods: Sequence[str] = CURVE_METHODS,
    bins: Sequence[float] = AOPC_BINS,
    random_draws: int = 10,
    seed: int = 0,
    module: str | None = None,
    heads: Sequence[int] | None = None,
    importance_fn: Callable[[Query], dict[str, np.ndarray]] | None = None,
    stop: StopFlag = None,
    settings: dict[str, Any] | None = None,
) -> ExperimentGen:
    """Deletion / insertion curves, AOPC and ERASER comprehensiveness / sufficiency per method.

    Units are removed at the input (replaced by the query's baseline); f = probability of the
    explained output. ``random`` averages ``random_draws`` random orders per example.
    """
    queries = list(queries)
    skipped: list[str] = []
    if queries and importance_fn is None:
        methods, skipped = methods_for(queries[0], methods)
    gen = make_generator(seed)
    grid = list(CURVE_GRID)
    result = CurvesResult(settings={"methods": list(methods), "skipped_methods": skipped, "bins": list(bins), "random_draws": random_draws,
                                    "seed": seed, "module": module, **(settings or {})},
                          extra={"curves": {m: {"fractions": grid, "deletion_sum": [0.0] * len(grid),
                                                "insertion_sum": [0.0] * len(grid), "n": 0} for m in methods}})

    def work(i: int, q: Query) -> list[CurveRow]:
        probe = Probe(q, module, heads)
        units = probe.real_unit_mask.nonzero().flatten().cpu().numpy()
        m = len(units)
        if m < 1:
            return []
        score = target_score(unit_keep_fn(probe), probe.target)
        imp = probe_importances(probe, methods, importance_fn)
        rows = []
        for method in methods:
            if method == "random":
                draws = [erasure_curves(score, torch.randperm(m, generator=gen).numpy(), m, bins) for _ in range(random_draws)]
                c = draws[0]
                dele = np.mean([d.deletion for d in draws], 0).tolist()
                ins = np.mean([d.insertion for d in draws], 0).tolist()
                vals = {k: float(np.mean([getattr(d, k) for d in draws]))
                        for k in ("aopc_deletion", "aopc_insertion", "comprehensiveness", "sufficiency")}
                c = Curves(c.counts, dele, ins, c.f_x, c.f_empty, **vals)
            else:
                c = erasure_curves(score, _order_over(units, imp[method], method), m, bins)
            rows.append(CurveRow(i, method, m, c.f_x, c.f_empty, c.aopc_deletion, c.aopc_insertion,
                                 c.comprehensiveness, c.sufficiency))
            acc = result.extra["curves"][method]
            for j, v in enumerate(_interp(c.counts, c.deletion, m, grid)):
                acc["deletion_sum"][j] += v
            for j, v in enumerate(_interp(c.counts, c.insertion, m, grid)):
                acc["insertion_sum"][j] += v
            acc["n"] += 1
        return rows

    return (yield from loop_examples("aopc", list(queries), result, work, stop))


def curves(queries: Sequence[Query], progress: ProgressFn | None = None, **kwargs: Any) -> CurvesResult:
    """:func:`iter_curves` run to the end."""
    return drive(iter_curves(queries, **kwargs), progress)


# ----------------------------------------------------------------------------------------
# Pointing game over a dataset


@dataclass
class PointingRow:
    example: int
    method: str
    mass_share: float
    hit: bool
    k: int
    object_patches: int


@dataclass
class PointingResult(ExperimentResult):
    experiment: ClassVar[str] = "pointing"

    def method_stats(self) -> list[dict[str, Any]]:
        out = []
        for method in dict.fromkeys(r.method for r in self.rows):
            rows = [r for r in self.rows if r.method == method]
            out.append({"method": method, "n": len(rows), "mean_mass_share": float(np.mean([r.mass_share for r in rows])),
                        "hit_rate": float(np.mean([r.hit for r in rows]))})
        return out

    def stats(self) -> dict[str, Any]:
        return {"methods": self.method_stats()}


def iter_pointing(
    queries: Sequence[Query],
    masks: Sequence[Tensor | None],
    methods: Sequence[str] = POINTING_METHODS,
    seed: int = 0,
    importance_fn: Callable[[Query], dict[str, np.ndarray]] | None = None,
    stop: StopFlag = None,
    settings: dict[str, Any] | None = None,
) -> ExperimentGen:
    """Pointing game of each method on every image that has an object mask (vit-shapes)."""
    if len(masks) != len(queries):
        raise ValueError("one mask (or None) per query")
    if not any(m is not None for m in masks):
        raise PlaygroundError("The pointing game needs known ground truth: images with object masks (a model trained on "
                              "vit-shapes) or generated reviews with rationales (a text classifier on data.texts = reviews).")
    queries = list(queries)
    skipped: list[str] = []
    if queries and importance_fn is None:
        methods, skipped = methods_for(queries[0], methods)
    gen = make_generator(seed)
    result = PointingResult(settings={"methods": list(methods), "skipped_methods": skipped, "seed": seed,
                                      **(settings or {})})
    items = list(zip(queries, masks))

    def work(i: int, item: tuple[Query, Tensor | None]) -> list[PointingRow]:
        q, mask = item
        if mask is None:
            return []
        pm = q.explainer.unit_mask(q, mask)  # [U] bool: object patches / rationale tokens
        names = [m for m in methods if m != "random"]
        imp = importance_fn(q) if importance_fn else compute_importances(q, names)
        rows = []
        for method in methods:
            values = torch.rand(q.n_units, generator=gen).numpy() if method == "random" else imp[method]
            s = pointing_game(values, pm, method=method)
            rows.append(PointingRow(i, method, s.mass_share, s.hit, s.k, int(pm.sum())))
        return rows

    return (yield from loop_examples("pointing", items, result, work, stop))


def pointing(queries: Sequence[Query], masks: Sequence[Tensor | None], progress: ProgressFn | None = None,
             **kwargs: Any) -> PointingResult:
    """:func:`iter_pointing` run to the end."""
    return drive(iter_pointing(queries, masks, **kwargs), progress)
