"""Jain & Wallace (NAACL 2019), "Attention is not Explanation", over a set of examples.

- :func:`iter_agreement`: Kendall τ between each attention view and each gradient /
  leave-one-out importance, and between gradient and leave-one-out as the reference.
- :func:`iter_permutation`: permute the explained query's attention over the real positions
  (hidden states before that row fixed), 100 times per example; median TVD of the output.
- :func:`iter_adversarial`: k adversarial attention rows per example that keep the output
  within ε (TVD) while maximising JSD from the original row.

Every ``iter_*`` is a generator of :class:`~playground.analysis.experiments.core.Progress`
events that returns its result; the plain functions (``agreement``, ``permutation``,
``adversarial``) run it to the end with an optional callback.
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import torch
from torch import Tensor

from playground.analysis.divergences import LN2, jsd, tvd
from playground.analysis.experiments.core import (
    ExperimentGen,
    ExperimentResult,
    Probe,
    ProgressFn,
    StopFlag,
    Stopped,
    drive,
    is_stopped,
    loop_examples,
    make_generator,
    row_stats,
)
from playground.analysis.explain import attention as am
from playground.analysis.explain import attributions as at
from playground.analysis.explain.agreement import kendall_tau, spearman_rho
from playground.analysis.numerics import (
    LOO_METHODS,
    loo_at_noise,
    model_dtype,
    noisy_methods,
    pair_note,
    saturation,
)
from playground.analysis.query import Query
from playground.errors import PlaygroundError

# Jain & Wallace 2019, Table 2 (BiLSTM + additive attention): mean τ ± std (share p ≤ 0.05).
JW_TABLE2: list[dict[str, Any]] = [
    {"dataset": "SST", "tau_attn_grad": 0.35, "tau_attn_grad_std": 0.21, "sig_attn_grad": 0.49,
     "tau_attn_loo": 0.29, "tau_attn_loo_std": 0.19, "sig_attn_loo": 0.36, "tau_grad_loo": 0.66},
    {"dataset": "IMDB", "tau_attn_grad": 0.44, "tau_attn_grad_std": 0.06, "sig_attn_grad": 1.00,
     "tau_attn_loo": 0.34, "tau_attn_loo_std": 0.07, "sig_attn_loo": 0.99, "tau_grad_loo": 0.52},
    {"dataset": "AG News", "tau_attn_grad": 0.39, "tau_attn_grad_std": 0.13, "sig_attn_grad": 0.86,
     "tau_attn_loo": 0.37, "tau_attn_loo_std": 0.15, "sig_attn_loo": 0.80, "tau_grad_loo": 0.61},
    {"dataset": "20News", "tau_attn_grad": 0.13, "tau_attn_grad_std": 0.21, "sig_attn_grad": 0.48,
     "tau_attn_loo": 0.12, "tau_attn_loo_std": 0.19, "sig_attn_loo": 0.44, "tau_grad_loo": 0.53},
    {"dataset": "SNLI", "tau_attn_grad": 0.31, "tau_attn_grad_std": 0.22, "sig_attn_grad": 0.37,
     "tau_attn_loo": 0.29, "tau_attn_loo_std": 0.24, "sig_attn_loo": 0.35, "tau_grad_loo": 0.24},
]
JW_DOT_SST_TAU_ATTN_GRAD = 0.07  # dot-product attention agreed less


def jw_reference_frame() -> pd.DataFrame:
    """Jain & Wallace Table 2 as a DataFrame (for display next to the user's numbers)."""
    return pd.DataFrame(JW_TABLE2)


def jw_reference_column(method_a: str, method_b: str) -> str | None:
    """The Table 2 column (JW_TABLE2) a pair of methods compares with: attention against a
    gradient (tau_attn_grad), against leave-one-out (tau_attn_loo), a gradient against
    leave-one-out (tau_grad_loo); None for a pair the paper did not measure."""
    kinds = {m: "grad" if m in GRADIENT_REFERENCES else "loo" if m in LOO_REFERENCES
             else "attn" if m in ATTENTION_VIEWS else None for m in (method_a, method_b)}
    pair = {kinds[method_a], kinds[method_b]}
    if None in pair or len(pair) != 2:
        return None
    return {frozenset({"attn", "grad"}): "tau_attn_grad", frozenset({"attn", "loo"}): "tau_attn_loo",
            frozenset({"grad", "loo"}): "tau_grad_loo"}[frozenset(pair)]


# ========================================================================================
# Agreement


@dataclass
class AgreementRow:
    """Kendall τ-b of two importance vectors on one example (real units only).

    ``one_minus_p``: how far the example's explained output is from certainty; ``at_noise``: a
    side of the pair ranks values at floating-point noise (saturated output, or every
    leave-one-out change within noise), and ``precision`` says which and the remedy (float64).
    """

    example: int
    method_a: str
    method_b: str
    n_units: int
    tau: float
    p_value: float
    one_minus_p: float = math.nan
    at_noise: bool = False
    precision: str = ""


ImportanceFn = Callable[[Query], dict[str, np.ndarray]]

ATTENTION_VIEWS = ("attention", "attention_mean", "rollout", "norm", "relevancy", "flow")
REFERENCE_METHODS = ("jw_grad", "loo_delete", "saliency", "ixg", "ig", "loo")
GRADIENT_REFERENCES = ("jw_grad", "saliency", "ixg", "ig")  # gradient-based importances
LOO_REFERENCES = ("loo_delete", "loo")  # leave-one-out importances
DEFAULT_VIEWS = ("attention", "attention_mean", "rollout", "norm")
# Jain & Wallace's own definitions: |Σ_d e·∂ŷ/∂e| with attention detached, and LOO by deleting
# the token (TVD of the output distribution). The experiment uses them by default.
JW_REFERENCES = ("jw_grad", "loo_delete")
# the app's earlier defaults, kept as a named alternative: ‖∂F/∂e‖₂ and LOO by the baseline token
APP_REFERENCES = ("saliency", "loo")
DEFAULT_REFERENCES = JW_REFERENCES
REFERENCE_SETS = {"jw": JW_REFERENCES, "app": APP_REFERENCES}


def compute_importances(query: Query, methods: Sequence[str], layer: int | None = None,
                        head: int | None = None, ig_steps: int = 50) -> dict[str, np.ndarray]:
    """Importance over the input units [U] of a one-example query for each named method.

    Dispatches to playground.analysis.explain.attention / attributions (the per-input analyzer).
    Attention views: attention (``layer``/``head``, default last layer head mean),
    attention_mean, rollout, norm, relevancy, flow; references: jw_grad, loo_delete (J&W's),
    saliency, ixg, ig, loo (replace by the baseline).
    """
    out: dict[str, np.ndarray] = {}
    rec = None
    for m in methods:
        if m in ("attention", "attention_mean", "rollout", "norm", "flow"):
            if rec is None:
                rec = am.record(query, values=True)
            if m == "attention":
                a = am.attention(query, rec, layer, head)
            elif m == "attention_mean":
                a = am.mean_attention(query, rec)
            elif m == "rollout":
                a = am.rollout(query, rec)
            elif m == "norm":
                a = am.norm_weighted(query, rec, layer, head)
            else:
                a = am.flow(query, rec)
        elif m == "relevancy":
            a = am.grad_relevancy(query)
        elif m == "saliency":
            a = at.saliency(query)
        elif m == "ixg":
            a = at.input_x_gradient(query)
        elif m == "jw_grad":
            a = at.jw_gradient(query)
        elif m == "ig":
            a = at.integrated_gradients(query, n_steps=ig_steps)
        elif m in ("loo", "loo_delete"):
            a = at.leave_one_out(query, "replace" if m == "loo" else "delete")
        else:
            raise PlaygroundError(f"Unknown importance method {m!r}; choose from {ATTENTION_VIEWS + REFERENCE_METHODS}.")
        out[m] = a.values[0].detach().double().cpu().numpy()  # float64: rank float64 runs at their precision
    return out


def methods_for(query: Query, methods: Sequence[str]) -> tuple[list[str], list[str]]:
    """(usable, skipped) methods for this query's model (what its family's explainer skips)."""
    skip = query.explainer.skipped_methods(query)
    usable = [m for m in methods if m not in skip]
    return usable, [m for m in methods if m in skip]


def real_unit_mask(query: Query) -> np.ndarray:
    """Units of a one-example query that take part in rankings: real (not special / padding) and
    able to influence the output (lm: not after the query position). [U] bool."""
    return query.explainer.reachable_units(query).cpu().numpy()


@dataclass
class AgreementResult(ExperimentResult):
    """Kendall τ per example for every (attention view, reference) pair and reference pair."""

    experiment: ClassVar[str] = "agreement"

    def pair_stats(self) -> list[dict[str, Any]]:
        """Per pair: n, mean τ, std, median, share with p ≤ 0.05."""
        groups: dict[tuple[str, str], list[AgreementRow]] = {}
        for r in self.rows:
            groups.setdefault((r.method_a, r.method_b), []).append(r)
        out = []
        for (a, b), rows in groups.items():
            taus = [r.tau for r in rows if math.isfinite(r.tau)]
            s = row_stats(taus)
            sig = [r.p_value <= 0.05 for r in rows if math.isfinite(r.p_value)]
            out.append({"method_a": a, "method_b": b, "n": s["n"], "mean_tau": s["mean"], "std_tau": s["std"],
                        "median_tau": s["median"], "share_p05": float(np.mean(sig)) if sig else math.nan,
                        "reference_pair": a in REFERENCE_METHODS and b in REFERENCE_METHODS,
                        "n_at_noise": sum(bool(getattr(r, "at_noise", False)) for r in rows)})
        return out

    def stats(self) -> dict[str, Any]:
        return {"pairs": self.pair_stats()}


def iter_agreement(
    queries: Sequence[Query],
    views: Sequence[str] = DEFAULT_VIEWS,
    references: Sequence[str] = DEFAULT_REFERENCES,
    importance_fn: ImportanceFn | None = None,
    layer: int | None = None,
    head: int | None = None,
    stop: StopFlag = None,
    settings: dict[str, Any] | None = None,
) -> ExperimentGen:
    """Kendall τ(view, reference) for every view × reference and τ(reference, reference).

    ``queries`` are one-example queries; ``importance_fn(query) -> {method: [U]}`` defaults to
    :func:`compute_importances` over ``views + references``.
    """
    if not views or not references:
        raise PlaygroundError("Pick at least one attention view and one reference method (gradient or leave-one-out).")
    queries = list(queries)
    skipped: list[str] = []
    if queries and importance_fn is None:
        views, s1 = methods_for(queries[0], views)
        references, s2 = methods_for(queries[0], references)
        skipped = s1 + s2
        if not views or not references:
            raise PlaygroundError(f"None of the chosen views or references apply to this model (skipped: {skipped}).")
    methods = list(dict.fromkeys([*views, *references]))
    fn = importance_fn or (lambda q: compute_importances(q, methods, layer, head))
    pairs = [(v, r) for v in views for r in references] + list(itertools.combinations(references, 2))
    result = AgreementResult(settings={"views": list(views), "references": list(references), "layer": layer,
                                       "head": head, "skipped_methods": skipped, **(settings or {})})

    def work(i: int, q: Query) -> list[AgreementRow]:
        imp = fn(q)
        keep = real_unit_mask(q)
        sat = saturation(q)
        dtype = model_dtype(q.model)
        loo_noise = {m: loo_at_noise(imp[m][keep], dtype) for m in methods if m in LOO_METHODS}
        noisy = noisy_methods(methods, bool(sat.saturated[0]), loo_noise)
        rows = []
        for a, b in pairs:
            va, vb = np.abs(imp[a][keep]), np.abs(imp[b][keep])
            tau, p = kendall_tau(va, vb)
            note = pair_note(a, b, noisy, sat.dtype)
            rows.append(AgreementRow(i, a, b, int(keep.sum()), tau, p, float(sat.complement[0]), bool(note), note))
        return rows

    return (yield from loop_examples("agreement", queries, result, work, stop))


def agreement(queries: Sequence[Query], progress: ProgressFn | None = None, **kwargs: Any) -> AgreementResult:
    """:func:`iter_agreement` run to the end."""
    return drive(iter_agreement(queries, **kwargs), progress)


# ========================================================================================
# Random permutation


@dataclass
class PermutationRow:
    """One example: how much permuting the explained attention row moves the output."""

    example: int
    n_units: int  # real positions permuted
    max_attention: float  # largest head-mean weight on a real position
    median_tvd: float
    mean_tvd: float
    max_tvd: float
    flip_share: float  # share of permutations that change the predicted output


@dataclass
class PermutationResult(ExperimentResult):
    experiment: ClassVar[str] = "permutation"

    def stats(self) -> dict[str, Any]:
        med = [r.median_tvd for r in self.rows]
        s = row_stats(med)
        tiny = self.settings.get("small_tvd", 0.01)
        return {"median_tvd": s, "share_below": float(np.mean([m <= tiny for m in med])) if med else math.nan,
                "small_tvd": tiny, "n_skipped": self.extra.get("n_skipped", 0),
                **dict(zip(("corr_max_attention", "corr_max_attention_p"),
                           _spearman([r.max_attention for r in self.rows], med)))}


def _spearman(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    """Spearman's ρ and its p-value (NaN, NaN below three examples)."""
    if len(a) < 3:
        return math.nan, math.nan
    return spearman_rho(np.asarray(a), np.asarray(b))


def permutation_rows(probe: Probe, n_perm: int, gen: torch.Generator) -> Tensor:
    """``n_perm`` rows [n_perm, len(heads), K]: the original row of each chosen head with its
    weights on the real keys randomly permuted (independently per head); others unchanged."""
    base = probe.head_rows()  # [Hs,K]
    real = probe.real_keys.nonzero().flatten()  # [m]
    Hs, m = base.shape[0], real.numel()
    order = torch.rand(n_perm, Hs, m, generator=gen).argsort(-1).to(base.device)  # [P,Hs,m]
    rows = base.expand(n_perm, Hs, base.shape[1]).clone()
    rows[:, :, real] = base[:, real][None].expand(n_perm, Hs, m).gather(-1, order)
    return rows


def permutation_one(probe: Probe, n_perm: int, gen: torch.Generator, chunk: int = 256) -> tuple[Tensor, Tensor]:
    """TVDs [n_perm] of the output under ``n_perm`` permutations and whether the argmax changed.

    A permutation that leaves the row unchanged (equal weights swapped, e.g. uniform attention)
    leaves the output unchanged by definition: its TVD is exactly 0 without a forward.
    """
    rows = permutation_rows(probe, n_perm, gen)  # [P,Hs,K]
    ident = probe.head_rows()[None]  # the reference goes through the same batched path
    same = (rows == ident).flatten(1).all(-1)  # [P] a permutation that leaves the row as it was
    tvds = torch.zeros(n_perm, device=rows.device, dtype=rows.dtype)  # float64 on a float64 model
    flips = torch.zeros(n_perm, dtype=torch.bool, device=rows.device)
    todo = (~same).nonzero().flatten()
    for s in range(0, todo.numel(), chunk):
        idx = todo[s : s + chunk]
        out = probe.run_rows(torch.cat([ident, rows[idx]]))  # [1+c,V]
        tvds[idx] = tvd(out[1:], out[:1])
        flips[idx] = out[1:].argmax(-1) != out[0].argmax()
    return tvds, flips


def iter_permutation(
    queries: Sequence[Query],
    module: str | None = None,
    heads: Sequence[int] | None = None,
    n_perm: int = 100,
    seed: int = 0,
    stop: StopFlag = None,
    settings: dict[str, Any] | None = None,
    small_tvd: float = 0.01,
) -> ExperimentGen:
    """J&W random permutation: per example, ``n_perm`` permutations of the explained row of
    ``module`` (default: last layer) / ``heads`` over the real positions; median TVD of ŷ."""
    if n_perm < 1:
        raise PlaygroundError("Use at least one permutation per example.")
    gen = make_generator(seed)
    result = PermutationResult(settings={"module": module, "heads": None if heads is None else list(heads),
                                         "n_perm": n_perm, "seed": seed, "small_tvd": small_tvd, **(settings or {})},
                               extra={"n_skipped": 0})

    def work(i: int, q: Query) -> PermutationRow | None:
        probe = Probe(q, module, heads)
        result.settings["module"] = probe.module
        if probe.n_real < 2:
            result.extra["n_skipped"] += 1
            return None
        t, flips = permutation_one(probe, n_perm, gen)
        alpha = probe.alpha[probe.real_keys]
        return PermutationRow(i, probe.n_real, float(alpha.max()), float(t.median()), float(t.mean()),
                              float(t.max()), float(flips.float().mean()))

    return (yield from loop_examples("permutation", list(queries), result, work, stop))


def permutation(queries: Sequence[Query], progress: ProgressFn | None = None, **kwargs: Any) -> PermutationResult:
    """:func:`iter_permutation` run to the end."""
    return drive(iter_permutation(queries, **kwargs), progress)


# ========================================================================================
# Adversarial attention


@dataclass
class Adversaries:
    """The adversaries of one example that keep the output within ε, best first."""

    rows: Tensor  # [n, len(heads), K] adversarial rows of the chosen heads
    jsd: Tensor  # [n] JSD from the original row (mean over the chosen heads)
    tvd: Tensor  # [n] TVD of the output from the original output
    epsilon: float
    steps_run: int

    @property
    def max_jsd(self) -> float:
        return float(self.jsd.max()) if self.jsd.numel() else math.nan


def head_jsd(a: Tensor, b: Tensor) -> Tensor:
    """JSD per head averaged over heads: [..., Hs, K] x [..., Hs, K] -> [...]."""
    return jsd(a, b).mean(-1)


def adversarial_one(
    probe: Probe,
    gen: torch.Generator,
    k: int = 5,
    epsilon: float = 0.05,
    steps: int = 500,
    lr: float = 0.01,
    penalty: float = 500.0,
    init_std: float = 3.0,
    stop: StopFlag = None,
) -> Adversaries:
    """J&W adversarial search on one example.

    k adversaries are free logits over the real keys (init: uniform logits + N(0, init_std²));
    each adversarial row keeps the original weights on the special keys and spreads the
    original real-key mass by softmax(logits). Adam(lr) for ``steps`` steps on
    Σ_i [−JSD(α_i, α̂) + penalty·ReLU(TVD_i − ε)] − mean pairwise JSD(α_i, α_j).
    Each adversary's best iterate with TVD ≤ ε is kept; returned adversaries are re-checked
    with a fresh forward and only those with TVD ≤ ε survive. Raises Stopped when asked to stop.
    """
    base = probe.head_rows()  # [Hs,K]
    real = probe.real_keys.nonzero().flatten()  # [m]
    Hs, K, m = base.shape[0], base.shape[1], real.numel()
    if m < 2:
        return Adversaries(base.new_zeros(0, Hs, K), base.new_zeros(0), base.new_zeros(0), epsilon, 0)
    mass = base[:, real].sum(-1)  # [Hs] mass the adversary may move
    init = math.log(1.0 / m) + init_std * torch.randn(k, Hs, m, generator=gen)
    logits = init.to(base.device).requires_grad_(True)
    opt = torch.optim.Adam([logits], lr=lr)
    ref = probe.run_rows(base[None])[0]  # [V] through the same path as the adversaries
    pairs = torch.triu_indices(k, k, offset=1)

    def rows_of(lg: Tensor) -> Tensor:
        rows = base.expand(k, Hs, K).clone()
        rows[:, :, real] = torch.softmax(lg, -1) * mass[None, :, None]
        return rows  # [k,Hs,K]

    best_rows = base.new_zeros(k, Hs, K)
    best_jsd = torch.full((k,), -1.0, dtype=base.dtype)
    done = 0
    for step in range(steps):
        if is_stopped(stop):
            raise Stopped
        rows = rows_of(logits)
        out = probe.run_rows(rows, grad=True)  # [k,V]
        t = tvd(out, ref[None])  # [k]
        j = head_jsd(rows, base[None])  # [k]
        pair = head_jsd(rows[pairs[0]], rows[pairs[1]]).mean() if k > 1 else rows.new_zeros(())
        loss = (-j + penalty * torch.relu(t - epsilon)).sum() - pair
        with torch.no_grad():
            ok = (t <= epsilon) & (j > best_jsd.to(j.device))
            if ok.any():
                best_rows[ok] = rows.detach()[ok]
                best_jsd[ok.cpu()] = j.detach()[ok].cpu()
        (grad,) = torch.autograd.grad(loss, [logits])
        logits.grad = grad
        opt.step()
        done = step + 1
    found = best_jsd >= 0
    if not found.any():
        return Adversaries(base.new_zeros(0, Hs, K), base.new_zeros(0), base.new_zeros(0), epsilon, done)
    cand = best_rows[found.to(best_rows.device)]  # [n,Hs,K]
    with torch.no_grad():
        out = probe.run_rows(torch.cat([base[None], cand]))  # re-check through one fresh forward
        t = tvd(out[1:], out[:1])
        j = head_jsd(cand, base[None])
    keep = t <= epsilon
    cand, t, j = cand[keep], t[keep], j[keep]
    order = j.argsort(descending=True)
    return Adversaries(cand[order], j[order].clamp(0.0, LN2), t[order], epsilon, done)


@dataclass
class AdversarialRow:
    """One example: the most different attention found that keeps the output within ε."""

    example: int
    n_units: int
    epsilon: float
    n_found: int  # adversaries with TVD ≤ ε (of k)
    max_jsd: float  # NaN when none was found
    tvd_at_max: float
    max_attention: float  # largest original weight on a real position (head mean)
    max_jsd_possible: float  # JSD of the original row from a one-hot row on its least-attended real key


@dataclass
class AdversarialResult(ExperimentResult):
    experiment: ClassVar[str] = "adversarial"

    def stats(self) -> dict[str, Any]:
        vals = [r.max_jsd for r in self.rows]
        s = row_stats(vals)
        found = [r.n_found > 0 for r in self.rows]
        high = self.settings.get("high_jsd", 0.5)
        finite = [v for v in vals if math.isfinite(v)]
        return {"max_jsd": s, "share_found": float(np.mean(found)) if found else math.nan,
                "share_above": float(np.mean([v >= high for v in finite])) if finite else math.nan,
                "high_jsd": high, "ln2": LN2}


def max_possible_jsd(alpha_real: Tensor) -> float:
    """Largest JSD a distribution over the same keys can reach from ``alpha_real``
    (a one-hot on its least-attended key)."""
    a = alpha_real / alpha_real.sum().clamp_min(1e-12)
    onehot = torch.zeros_like(a)
    onehot[a.argmin()] = 1.0
    return float(jsd(a, onehot))


def iter_adversarial(
    queries: Sequence[Query],
    module: str | None = None,
    heads: Sequence[int] | None = None,
    k: int = 5,
    epsilon: float | None = None,
    steps: int = 500,
    lr: float = 0.01,
    penalty: float = 500.0,
    seed: int = 0,
    stop: StopFlag = None,
    settings: dict[str, Any] | None = None,
    keep_attention: bool = True,
) -> ExperimentGen:
    """J&W adversarial attention on every example; ε defaults to 0.01 for classifiers and 0.05
    for next-token / seq2seq outputs (the explainer's ``adversarial_epsilon``). With ``keep_attention`` the original and
    the best adversarial row (head mean, over input units) of each example go to
    ``result.extra["attention"][str(example)]``."""
    if k < 1 or steps < 1:
        raise PlaygroundError("The adversarial search needs k >= 1 adversaries and at least one step.")
    queries = list(queries)
    if epsilon is None:
        epsilon = queries[0].explainer.adversarial_epsilon if queries else 0.05
    gen = make_generator(seed)
    result = AdversarialResult(settings={"module": module, "heads": None if heads is None else list(heads), "k": k,
                                         "epsilon": epsilon, "steps": steps, "lr": lr, "penalty": penalty,
                                         "seed": seed, "high_jsd": 0.5, **(settings or {})},
                               extra={"attention": {}})

    def work(i: int, q: Query) -> AdversarialRow | None:
        probe = Probe(q, module, heads)
        result.settings["module"] = probe.module
        if probe.n_real < 2:
            return None
        adv = adversarial_one(probe, gen, k, epsilon, steps, lr, penalty, stop=stop)
        alpha_real = probe.alpha[probe.real_keys]
        n = int(adv.jsd.numel())
        row = AdversarialRow(i, probe.n_real, float(epsilon), n, adv.max_jsd,
                             float(adv.tvd[0]) if n else math.nan, float(alpha_real.max()),
                             max_possible_jsd(alpha_real))
        if keep_attention:
            result.extra["attention"][str(i)] = {
                "original": probe.keys_to_units(probe.alpha).tolist(),
                "adversarial": probe.keys_to_units(adv.rows[0].mean(0)).tolist() if n else None,
                "real": probe.real_unit_mask.cpu().numpy().astype(bool).tolist(),
                "tvd": float(adv.tvd[0]) if n else None,
                "jsd": adv.max_jsd if n else None,
            }
        return row

    return (yield from loop_examples("adversarial", queries, result, work, stop))


def adversarial(queries: Sequence[Query], progress: ProgressFn | None = None, **kwargs: Any) -> AdversarialResult:
    """:func:`iter_adversarial` run to the end."""
    return drive(iter_adversarial(queries, **kwargs), progress)


__all__ = [
    "JW_TABLE2",
    "AdversarialResult",
    "AdversarialRow",
    "Adversaries",
    "AgreementResult",
    "AgreementRow",
    "PermutationResult",
    "PermutationRow",
    "adversarial",
    "adversarial_one",
    "agreement",
    "compute_importances",
    "head_jsd",
    "iter_adversarial",
    "iter_agreement",
    "iter_permutation",
    "jw_reference_column",
    "jw_reference_frame",
    "max_possible_jsd",
    "permutation",
    "permutation_one",
    "permutation_rows",
    "real_unit_mask",
]
