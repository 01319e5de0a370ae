"""What the analyzer writes must be true: a relationship is stated only with its significance,
and a chart's legend promises only what it draws."""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from playground.analysis.experiments.jain_wallace import (
    DEFAULT_REFERENCES,
    DEFAULT_VIEWS,
    AgreementRow,
    PermutationResult,
    PermutationRow,
    jw_reference_column,
    jw_reference_frame,
)
from playground.analysis.experiments.summary import summarize
from playground.charts.experiments import agreement_chart


def _permutation(max_attention: list[float], median_tvd: list[float]) -> PermutationResult:
    rows = [PermutationRow(i, 8, a, t, t, t, 0.0) for i, (a, t) in enumerate(zip(max_attention, median_tvd))]
    return PermutationResult(settings={"n_perm": 100, "kind": "classifier"}, rows=rows, n_requested=len(rows))


def test_a_weak_correlation_on_few_examples_is_not_written_as_a_relationship():
    rng = np.random.default_rng(0)
    peaks, tvds = rng.uniform(0.2, 0.9, 20), rng.uniform(0.0, 0.05, 20)
    _, p = spearmanr(peaks, tvds)
    assert p > 0.05  # the case of the report: a sign on noise (ρ = -0.07 on 20 examples)
    text = " ".join(summarize(_permutation(list(peaks), list(tvds))).findings)
    assert "changed less" not in text and "changed more" not in text
    assert "no clear link" in text and f"p = {p:.2g}" in text and "20 examples" in text


def test_a_significant_correlation_is_written_with_its_p_value():
    peaks = list(np.linspace(0.2, 0.9, 20))
    tvds = [0.05 - 0.002 * i for i in range(20)]  # peakier -> smaller change, perfectly ranked
    rho, p = spearmanr(peaks, tvds)
    text = " ".join(summarize(_permutation(peaks, tvds)).findings)
    assert rho < 0 and p <= 0.05
    assert "peakier attention (higher maximum weight) changed less" in text and f"p = {p:.2g}" in text


def _tick_layers(chart) -> list[dict]:
    return [layer for layer in chart.to_dict()["layer"] if layer["mark"].get("type") == "tick"]


def test_the_default_methods_get_jain_and_wallaces_red_ticks():
    pairs = [(a, b) for a in DEFAULT_VIEWS for b in DEFAULT_REFERENCES] + [DEFAULT_REFERENCES]
    rows = [AgreementRow(i, a, b, 10, 0.3, 0.01) for i in range(3) for a, b in pairs]
    frame = pd.DataFrame([r.__dict__ for r in rows])
    chart = agreement_chart(frame, jw_reference_frame())
    assert "red ticks" in chart.to_dict()["title"]
    ticks = _tick_layers(chart)
    assert ticks, "the legend promises red ticks: they must be drawn"
    drawn = {(r["pair"], r["tau"]) for r in ticks[0]["data"]["values"]}
    table = jw_reference_frame()
    assert ("τ(attention, jw_grad)", 0.35) in drawn and ("τ(attention, loo_delete)", 0.29) in drawn  # SST
    assert {("τ(jw_grad, loo_delete)", t) for t in table["tau_grad_loo"]} <= drawn
    assert jw_reference_column("attention", "jw_grad") == "tau_attn_grad"
    assert jw_reference_column("loo_delete", "attention") == "tau_attn_loo"
    assert jw_reference_column("jw_grad", "saliency") is None  # two gradients: the paper has no number


def test_no_ticks_no_promise():
    rows = [AgreementRow(i, "jw_grad", "saliency", 10, 0.5, 0.01) for i in range(3)]
    frame = pd.DataFrame([r.__dict__ for r in rows])
    chart = agreement_chart(frame, jw_reference_frame())
    assert not _tick_layers(chart) and "red ticks" not in chart.to_dict()["title"]
