"""Proxies scored against causal effect: the effects, τ, and each summary sentence where it fails."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.stats import kendalltau

from playground.analysis.causal.proxies import (
    CausalResult,
    CausalRow,
    causal_findings,
    iter_causal,
    position_effects,
)
from playground.analysis.experiments.core import drive
from playground.analysis.experiments.data import lm_queries
from playground.analysis.experiments.jain_wallace import compute_importances
from playground.models.gpt import GPT, GPTConfig


def model() -> GPT:
    torch.manual_seed(0)
    return GPT(GPTConfig(vocab_size=12, block_size=16, n_layer=2, n_head=2, d_model=16, init_std=0.2)).eval()


def test_position_effect_is_the_drop_when_one_token_is_resampled_by_hand():
    m = model()
    g = torch.Generator().manual_seed(0)
    w = torch.randint(0, 12, (2, 8), generator=g)
    q = lm_queries(m, w)[0]
    eff = position_effects(q, w[1:2])
    target = int(q.targets[0])
    with torch.no_grad():
        base = m(w[:1])[0, -1].log_softmax(-1)[target]
        for p in range(8):
            x = w[:1].clone()
            x[0, p] = w[1, p]  # resampling the embedding at p = feeding the other window's token there
            drop = abs(float(base - m(x)[0, -1].log_softmax(-1)[target]))
            assert eff["input"][p] == pytest.approx(drop, abs=1e-5)


def test_experiment_rows_are_scipy_tau_of_the_proxy_and_the_effect():
    m = model()
    w = torch.randint(0, 12, (4, 8), generator=torch.Generator().manual_seed(1))
    qs = lm_queries(m, w)
    result = drive(iter_causal(qs, proxies=("attention", "loo")))
    assert result.examples_done == 4
    row = next(r for r in result.rows if r.example == 0 and r.proxy == "loo" and r.target == "input")
    eff = position_effects(qs[0], qs[1].inputs)["input"]
    loo = np.abs(compute_importances(qs[0], ["loo"])["loo"])
    tau, p = kendalltau(loo, eff)
    assert row.tau == pytest.approx(tau) and row.p == pytest.approx(p)
    table = result.table()
    assert {r["proxy"] for r in table} == {"attention", "loo"} and len(table) == 4


def rows(spec: dict[str, list[tuple[float, float]]], target: str = "input") -> CausalResult:
    r = CausalResult()
    for proxy, values in spec.items():
        r.rows += [CausalRow(i, proxy, target, tau, p, 10) for i, (tau, p) in enumerate(values)]
    r.examples_done = max(len(v) for v in spec.values())
    return r


def findings(result: CausalResult) -> str:
    return " ".join(causal_findings(result.per_target(), result.examples_done))


def test_best_proxy_named_and_ahead_only_when_significant_and_wilcoxon_backs_it():
    ahead = rows({"ig": [(0.8 + 0.01 * i, 0.001) for i in range(10)], "attention": [(0.2, 0.3)] * 10})
    text = findings(ahead)
    assert "**integrated gradients** tracks the causal effect best" in text
    assert "ahead of last-layer attention" in text and "not distinguishably" not in text
    tied = rows({"ig": [(0.8, 0.001)] * 10, "attention": [(0.8 - 0.01 * (i % 2), 0.001) for i in range(10)]})
    assert "not distinguishably ahead" in findings(tied)


def test_no_claim_when_no_proxy_is_significant_in_most_examples():
    weak = rows({"ig": [(0.8, 0.001)] * 4 + [(0.8, 0.2)] * 6, "attention": [(0.5, 0.3)] * 10})
    text = findings(weak)
    assert "none tracks the causal effect reliably" in text and "tracks the causal effect best" not in text


def test_do_not_track_sentence_only_below_ten_percent():
    spec = {"ig": [(0.8, 0.001)] * 10, "loo": [(0.1, 0.5)] * 10}
    assert "do not track the causal effect here: leave-one-out (0%)" in findings(rows(spec))
    spec["loo"] = [(0.6, 0.01)] * 5 + [(0.1, 0.5)] * 5
    assert "do not track" not in findings(rows(spec))


@pytest.mark.slow
def test_the_experiment_runs_from_the_runner_on_the_shipped_gpt():
    from pathlib import Path

    from playground.analysis.experiments.runner import (
        ExperimentOptions,
        iter_experiment,
    )
    from playground.analysis.experiments.summary import summarize
    from playground.bundle import load_bundle
    from playground.workspace import Workspace

    ws = Workspace(Path(__file__).resolve().parents[3] / "checkpoints")
    res = drive(iter_experiment("causal", load_bundle("gpt-python-docs-char", ws), ExperimentOptions(n=2), ws))
    assert res.examples_done == 2 and {r.target for r in res.rows} == {"input", "last"}
    assert "What it cannot show" in summarize(res).to_markdown()


def test_the_experiment_chart_draws_each_proxy_under_its_title():
    from playground.charts.causal import causal_experiment_chart

    r = rows({"ig": [(0.8, 0.001)] * 3, "attention": [(0.2, 0.3)] * 3})
    spec = causal_experiment_chart(r.table()).to_dict(validate=True)
    values = next(iter(spec["datasets"].values()))
    assert {v["proxy"] for v in values} == {"integrated gradients", "last-layer attention"}
    assert {round(v["mean tau"], 6) for v in values} == {0.8, 0.2}
