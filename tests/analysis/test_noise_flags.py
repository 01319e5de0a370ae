"""Per-example precision flags: an agreement row (and a per-input agreement pair) whose gradient or
leave-one-out side ranks values at float32 noise says so beside its τ, with the float64 remedy."""
from __future__ import annotations

import torch

from playground.analysis.experiments.jain_wallace import agreement
from playground.analysis.explain.per_input import AnalysisOptions, analyze_prepared
from playground.analysis.inputs import prepare_text_classifier
from playground.analysis.numerics import NOISE_ULPS, query_in_float64
from tests.analysis.test_exact_definitions import reviews_tok, saturated_model, tiny_jw  # noqa: F401 - reviews_tok is a fixture


def _texts(reviews):
    by_length = sorted((r.text for r in reviews), key=lambda t: -len(t.split()))
    return by_length[0], by_length[1]


def test_a_saturated_example_is_flagged_in_its_agreement_rows(reviews_tok) -> None:  # noqa: F811 - the imported fixture
    reviews, tok = reviews_tok
    long_text, other = _texts(reviews)
    ids = prepare_text_classifier(tiny_jw(tok), tok, long_text).query.inputs
    sat_q = prepare_text_classifier(saturated_model(tok, ids), tok, long_text).query
    plain_q = prepare_text_classifier(tiny_jw(tok, seed=3), tok, other).query
    result = agreement([sat_q, plain_q], views=("attention",), references=("jw_grad", "loo_delete"))
    by_example = {i: [r for r in result.rows if r.example == i] for i in (0, 1)}
    eps = float(torch.finfo(torch.float32).eps)
    for i, q in ((0, sat_q), (1, plain_q)):
        with torch.no_grad():
            p = q.model(q.inputs).double().softmax(-1)[0]  # [C] computed here, independently
        for row in by_example[i]:
            assert abs(row.one_minus_p - (1 - float(p.max()))) <= 4 * eps  # 1 − p of that example
    assert by_example[0][0].one_minus_p <= NOISE_ULPS * eps
    assert all(r.at_noise and "float64" in r.precision for r in by_example[0])  # every pair has a noisy side
    assert "jw_grad" in by_example[0][0].precision
    assert not any(r.at_noise or r.precision for r in by_example[1])  # an unsaturated example is not flagged
    pairs = {(p["method_a"], p["method_b"]): p["n_at_noise"] for p in result.pair_stats()}
    assert pairs[("attention", "jw_grad")] == 1 and pairs[("jw_grad", "loo_delete")] == 1

    rerun = agreement([query_in_float64(sat_q)], views=("attention",), references=("jw_grad", "loo_delete"))
    assert not any(r.at_noise for r in rerun.rows)  # float64 lifts the flag


def test_the_per_input_agreement_table_flags_pairs_at_noise(reviews_tok) -> None:  # noqa: F811 - the imported fixture
    reviews, tok = reviews_tok
    text, _ = _texts(reviews)
    ids = prepare_text_classifier(tiny_jw(tok), tok, text).query.inputs
    prepared = prepare_text_classifier(saturated_model(tok, ids), tok, text)
    methods = ("attention", "attention_mean", "jw_grad")
    r32 = analyze_prepared(prepared, AnalysisOptions(methods=methods))
    flags = {(a, b): note for a, b, note in r32.agreement[["method_a", "method_b", "precision"]].itertuples(index=False)}
    assert flags[("attention", "attention_mean")] == ""  # attention weights are not output changes
    assert "jw_grad" in flags[("attention", "jw_grad")] and "float64" in flags[("attention", "jw_grad")]
    r64 = analyze_prepared(prepared, AnalysisOptions(methods=methods, float64=True))
    assert (r64.agreement["precision"] == "").all()
