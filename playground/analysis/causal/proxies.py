"""Attention and gradients scored against causal effect: the debate's question answered with
interventions.

Per held-out example (a GPT window; the explained output is the log-probability of the
model's own next-token prediction at the last position):

- causal effect per position p: how far that log-probability falls when the residual stream
  at p is replaced by a *resampled* run's (another held-out window of the same length:
  Chan et al. 2022's resample ablation), i.e. noising patching. Two depths: ``input``, the
  stream entering block 0 (the token at p; what gradients, leave-one-out and rollout
  describe), and ``last``, the stream entering the last block (what the last layer's
  attention reads).
- proxies: last-layer attention (head mean), rollout, integrated gradients, J&W's gradient,
  leave-one-out (the analyzer's own methods).
- per example and proxy: Kendall τ-b (scipy) with its p-value between |proxy| and the effect;
  over the set: mean ± std of τ and the share of examples with p ≤ 0.05.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from playground.analysis.causal.patching import (
    Layout,
    Metric,
    clean_and_corrupted,
    patch_grids,
)
from playground.analysis.experiments.core import (
    ExperimentGen,
    ExperimentResult,
    StopFlag,
    loop_examples,
    row_stats,
)
from playground.analysis.experiments.jain_wallace import (
    compute_importances,
    real_unit_mask,
)
from playground.analysis.explain.agreement import kendall_tau
from playground.analysis.query import Query
from playground.errors import PlaygroundError

PROXIES = ("attention", "rollout", "ig", "jw_grad", "loo")
PROXY_TITLES = {"attention": "last-layer attention", "rollout": "attention rollout", "ig": "integrated gradients",
                "jw_grad": "J&W gradient", "loo": "leave-one-out"}
TARGETS = {"input": "the residual stream entering block 0 (the token itself)",
           "last": "the residual stream entering the last block (what its attention reads)"}
ALPHA = 0.05
MAJORITY = 0.5  # a proxy "tracks" the effect when more than this share of examples is significant


@dataclass
class CausalRow:
    """One example x proxy x target: τ-b and its p-value over the example's positions."""

    example: int
    proxy: str
    target: str
    tau: float
    p: float
    units: int


def position_effects(query: Query, corrupted: Tensor) -> dict[str, np.ndarray]:
    """{target: [T]}: |drop of the explained log-probability| when position p's stream is noised."""
    position = int(query.positions[0]) if query.positions is not None else 0  # a classifier: no position
    metric = Metric(position, int(query.targets[0]))
    runs = clean_and_corrupted(query.model, query.inputs, corrupted, metric, ("resid",))
    grid = patch_grids(query.model, runs, ("resid",), "noise")["resid"]
    drop = np.abs(runs.clean - grid.values)  # [L,S]: S stream positions
    drop = drop[:, runs.stream_len - query.inputs.shape[1]:]  # [L,T]: the tokens' positions (a [CLS] left out)
    return {"input": drop[0], "last": drop[-1]}


def score_example(i: int, query: Query, corrupted: Tensor, proxies: Sequence[str] = PROXIES) -> list[CausalRow]:
    """Kendall τ of each proxy against each causal target on one example."""
    effects = position_effects(query, corrupted)
    imp = compute_importances(query, proxies)
    keep = real_unit_mask(query)
    rows = []
    for target, eff in effects.items():
        for proxy in proxies:
            tau, p = kendall_tau(np.abs(imp[proxy])[keep], eff[keep])
            rows.append(CausalRow(i, proxy, target, tau, p, int(keep.sum())))
    return rows


@dataclass
class CausalResult(ExperimentResult):
    """Rows per example x proxy x target."""

    experiment = "causal"

    def stats(self) -> dict[str, Any]:
        """{target: {proxy: mean/std/... of τ, share_significant, per-example τ}}, and ``methods``: :meth:`table`."""
        per = self.per_target()
        return {**per, "methods": _table(per)}

    def per_target(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for target in TARGETS:
            out[target] = {}
            for proxy in dict.fromkeys(r.proxy for r in self.rows):
                rows = [r for r in self.rows if r.proxy == proxy and r.target == target and math.isfinite(r.tau)]
                st = row_stats([r.tau for r in rows])
                sig = [r for r in rows if math.isfinite(r.p) and r.p <= ALPHA and r.tau > 0]
                out[target][proxy] = {**st, "share_significant": len(sig) / len(rows) if rows else math.nan,
                                      "taus": [r.tau for r in sorted(rows, key=lambda r: r.example)],
                                      "examples": [r.example for r in sorted(rows, key=lambda r: r.example)]}
        return out

    def table(self) -> list[dict[str, Any]]:
        """One row per target x proxy: mean ± std of τ and the share significant (the view's table)."""
        return _table(self.per_target())


def _table(stats: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"causal target": target, "proxy": proxy, "mean tau": s["mean"], "std": s["std"],
             "share p<=0.05": s["share_significant"], "examples": s["n"]}
            for target, per in stats.items() for proxy, s in per.items() if s["n"]]


def resampled(queries: Sequence[Query]) -> list[Tensor]:
    """Each example's corrupted input: the next example's tokens (repeated to this length where
    it is shorter), cyclically; the positions that are not ranked (specials) keep their token."""
    if len(queries) < 2:
        raise PlaygroundError("The causal experiment resamples each input from another one: use at least 2 examples.")
    out = []
    for i, q in enumerate(queries):
        other = queries[(i + 1) % len(queries)].inputs[0]  # [T']
        T = q.inputs.shape[1]
        tiled = other.repeat((T + other.numel() - 1) // other.numel())[:T]  # [T]
        keep = q.units_mask[0] if q.units_mask is not None else torch.ones(T, dtype=torch.bool)
        out.append(torch.where(keep.to(tiled.device), tiled, q.inputs[0])[None])  # [1,T]
    return out


def iter_causal(queries: Sequence[Query], proxies: Sequence[str] = PROXIES, stop: StopFlag = None,
                settings: dict[str, Any] | None = None) -> ExperimentGen:
    """The experiment over held-out queries (GPT windows) as a progress generator."""
    if not queries:
        raise PlaygroundError("The causal experiment needs held-out examples.")
    Layout.of(queries[0].model)  # a clear message for a model without transformer blocks
    corrupted = resampled(queries)
    result = CausalResult(settings={**(settings or {}), "proxies": list(proxies), "targets": TARGETS,
                                    "corruption": "resample (the next held-out example's tokens)"})

    result.extra["skipped"] = 0

    def work(i: int, q: Query) -> list[CausalRow] | None:
        try:
            return score_example(i, q, corrupted[i], proxies)
        except PlaygroundError:  # this input and its resample give almost the same log-probability
            result.extra["skipped"] += 1
            return None

    return (yield from loop_examples("causal", list(queries), result, work, stop))


# ----------------------------------------------------------------------------------------
# The summary: sentences only where the statistic backs them


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _wilcoxon(a: dict[str, Any], b: dict[str, Any]) -> float:
    """Paired two-sided Wilcoxon signed-rank p of two proxies' τ over the examples both have (NaN if < 6)."""
    from scipy.stats import wilcoxon  # here: scipy.stats adds ~1 s to start-up

    ta, tb = dict(zip(a["examples"], a["taus"])), dict(zip(b["examples"], b["taus"]))
    common = sorted(set(ta) & set(tb))
    diffs = [ta[e] - tb[e] for e in common]
    if len(common) < 6 or not any(diffs):
        return math.nan
    return float(wilcoxon(diffs).pvalue)


def causal_findings(stats: dict[str, Any], n: int) -> list[str]:
    """Plain sentences, each backed by its statistic (see the module docstring)."""
    out = []
    for target, where in TARGETS.items():
        per = stats.get(target) or {}
        if not per:
            continue
        ranked = sorted(per, key=lambda p: -per[p]["mean"] if math.isfinite(per[p]["mean"]) else math.inf)
        tracks = [p for p in ranked if per[p]["share_significant"] > MAJORITY and per[p]["mean"] > 0]
        if not tracks:
            out.append(f"Against {where}: no proxy has a significant positive τ (p ≤ {ALPHA}) in more than half of "
                       f"the {n} examples, so none tracks the causal effect reliably on this model.")
        else:
            best = tracks[0]
            s = per[best]
            line = (f"Against {where}: **{PROXY_TITLES[best]}** tracks the causal effect best, mean τ = "
                    f"{s['mean']:.2f} ± {s['std']:.2f}, significant in {_pct(s['share_significant'])} of examples")
            others = [p for p in ranked if p != best]
            if others:
                second = others[0]
                pw = _wilcoxon(s, per[second])
                verdict = "ahead of" if math.isfinite(pw) and pw <= ALPHA and s["mean"] > per[second]["mean"] \
                    else "but not distinguishably ahead of"
                p_text = f"paired Wilcoxon p = {pw:.2g}" if math.isfinite(pw) else "too few paired examples to test"
                line += f", {verdict} {PROXY_TITLES[second]} (mean τ = {per[second]['mean']:.2f}; {p_text})"
            out.append(line + ".")
        weak = [p for p in ranked if per[p]["share_significant"] <= 0.1]
        if weak:
            names = ", ".join(f"{PROXY_TITLES[p]} ({_pct(per[p]['share_significant'])})" for p in weak)
            out.append(f"Against {where}, these proxies are significant in at most 10% of examples, so they do not "
                       f"track the causal effect here: {names}.")
    return out


def summary_parts(result: CausalResult) -> tuple[str, list[str], str, str]:
    """(title, findings, can show, cannot show) for playground.analysis.experiments.summary."""
    skipped = int(result.extra.get("skipped", 0))
    n = (result.examples_done or result.n_done) - skipped
    title = f"Proxies scored against causal effect ({n} examples)"
    can = ("Which importance method ranks the positions the way an intervention on the model's own residual "
           "stream does, per example (Kendall τ with its p) and over the held-out set.")
    cannot = ("The causal effect depends on the corruption (here the tokens of another held-out example) and on the depth "
              "patched; positions that matter only together, or only through several layers, are not single-"
              "position effects. Leave-one-out at the input is itself an intervention, so its agreement with the "
              "input-level effect is expected.")
    findings = causal_findings(result.per_target(), n)
    if skipped:
        findings.append(f"{skipped} example(s) left out: the resample moved the explained log-probability by less "
                        "than 0.05, so there was no effect to rank positions by.")
    return title, findings, can, cannot
