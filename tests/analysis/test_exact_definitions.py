"""The papers' exact definitions (J&W's gradient with attention detached, LOO by deletion),
and numerical honesty on a saturated classifier (the float64 option and its warning)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from playground.analysis.explain import attributions as at
from playground.analysis.explain.agreement import kendall_tau
from playground.analysis.explain.per_input import AnalysisOptions, analyze_prepared
from playground.analysis.inputs import prepare_text_classifier
from playground.analysis.numerics import NOISE_ULPS, query_in_float64, saturation
from playground.data.reviews import make_reviews, text_tokenizer
from playground.models.text_classifier import TextClassifier, TextClassifierConfig


@pytest.fixture(scope="module")
def reviews_tok():
    reviews = make_reviews(40, seed=0)
    return reviews, text_tokenizer(r.text for r in reviews)


def tiny_jw(tok, attention: str = "additive", seed: int = 0) -> TextClassifier:
    """A small averaging-encoder + attention classifier (untrained, eval mode)."""
    torch.manual_seed(seed)
    cfg = TextClassifierConfig(vocab_size=tok.get_vocab_size(), encoder="avg", attention=attention, emb_dim=8,
                               hidden=8, max_len=32)
    model = TextClassifier(cfg).eval()
    model.init_family_weights(torch.Generator().manual_seed(seed))
    return model


def test_jw_gradient_detaches_attention(reviews_tok) -> None:
    reviews, tok = reviews_tok
    # uniform attention does not depend on the input: detaching it changes nothing, so J&W's
    # gradient is |input x gradient| exactly
    q = prepare_text_classifier(tiny_jw(tok, "uniform"), tok, reviews[0].text).query
    assert torch.allclose(at.jw_gradient(q).values, at.input_x_gradient(q).values.abs(), atol=1e-9)
    # learned additive attention depends on the input: the gradient that no longer flows through α differs
    q = prepare_text_classifier(tiny_jw(tok), tok, reviews[0].text).query
    before = q.score()
    jw, ixg = at.jw_gradient(q).values, at.input_x_gradient(q).values.abs()  # [1,T]
    assert jw.shape == ixg.shape and (jw >= 0).all()
    assert not torch.allclose(jw, ixg, atol=1e-6)
    assert torch.equal(q.score(), before)  # the forward itself is unchanged


def saturated_model(tok, ids: torch.Tensor) -> TextClassifier:
    """A tiny classifier whose head is scaled until its softmax saturates on ``ids`` [1,T]:
    a logit margin of 15 nats, 1 − p ≈ 3e-7 (a few float32 ulps of p)."""
    model = tiny_jw(tok, seed=1)
    with torch.no_grad():
        model.head.bias.zero_()
        margin = model(ids)[0].diff().abs().item()  # [C=2] -> the logit gap
        model.head.weight.mul_(15.0 / margin)
    return model


def test_saturated_output_warns_and_float64_changes_the_ranking(reviews_tok) -> None:
    reviews, tok = reviews_tok
    text = max((r.text for r in reviews), key=lambda t: len(t.split()))  # many tokens to rank
    ids = prepare_text_classifier(tiny_jw(tok), tok, text).query.inputs
    prepared = prepare_text_classifier(saturated_model(tok, ids), tok, text)
    sat = saturation(prepared.query)
    assert bool(sat.saturated[0]) and sat.complement[0] <= NOISE_ULPS * sat.eps

    methods = ("attention", "jw_grad", "loo_delete")
    r32 = analyze_prepared(prepared, AnalysisOptions(methods=methods))
    assert r32.numerics["saturated"] == [True] and r32.numerics["warning"]
    assert any("float64" in n for n in r32.notes)  # the warning sits beside the numbers, with the remedy

    r64 = analyze_prepared(prepared, AnalysisOptions(methods=methods, float64=True))
    assert r64.numerics["dtype"] == "float64" and not r64.numerics["warning"]
    assert prepared.query.model.head.weight.dtype == torch.float32  # the float64 run used a copy

    keep = r32.keep
    l32, l64 = r32.row("loo_delete")[keep], r64.row("loo_delete")[keep]
    # float32's rounding error is as large as the differences being ranked ...
    assert np.abs(l32 - l64).max() > 0.05 * l64.max()
    tau, _ = kendall_tau(l32, l64)
    assert tau < 0.99  # the float32 ranking is not the float64 one
    # float64 is stable: a second float64 copy gives the same numbers
    again = at.leave_one_out(query_in_float64(prepared.query), "delete").values[0].numpy()[keep]
    assert np.array_equal(again, l64)
