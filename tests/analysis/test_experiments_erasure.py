"""Erasure to flip, deletion/insertion AOPC, ERASER, pointing game over a dataset."""
from __future__ import annotations

import math
import threading

import numpy as np
import pytest
import torch

from playground.analysis.experiments import erasure as er
from playground.analysis.experiments.core import Probe
from playground.analysis.experiments.data import classifier_queries, lm_queries
from playground.families import build_model


def gpt():
    torch.manual_seed(0)
    return build_model("gpt", dict(vocab_size=20, block_size=16, n_layer=2, n_head=2, d_model=16)).eval()


def vit():
    torch.manual_seed(0)
    return build_model("vit", dict(image_size=8, patch_size=2, channels=1, n_classes=3, d_model=16, n_layer=2, n_head=2)).eval()


def linear_predict(w: torch.Tensor, bias: float):
    """Two classes on binary features: logit_1 − logit_0 = bias + w · keep (all features present)."""
    def predict(keep: torch.Tensor) -> torch.Tensor:
        margin = bias + keep.float() @ w  # [N]
        return torch.stack([torch.zeros_like(margin), margin], -1).softmax(-1)
    return predict


def test_random_ranking_removes_at_least_as_many_as_gradient_on_a_linear_model():
    g = torch.Generator().manual_seed(0)
    for _trial in range(5):
        w = torch.randn(20, generator=g) + 0.3
        s_pos = float(w.clamp_min(0).sum())
        # margin 0.1 + S+/2 > 0 with every feature; 0.1 − S+/2 < 0 once all positive ones are gone
        predict = linear_predict(w, bias=0.1 + 0.5 * s_pos - float(w.sum()))
        assert int(predict(torch.ones(1, 20, dtype=torch.bool)).argmax()) == 1
        grad_order = er.ranking(w.numpy(), signed=True)  # ∂margin/∂x = w
        k_grad = er.removals_to_flip(predict, grad_order, 20)
        assert k_grad is not None
        draws = [er.removals_to_flip(predict, torch.randperm(20, generator=g).numpy(), 20) for _ in range(200)]
        k_rand = np.mean([20 if d is None else d for d in draws])
        assert k_rand >= k_grad
        assert all(d is None or d >= k_grad for d in draws)  # greedy by gradient is optimal on a linear margin


def test_removals_to_flip_none_when_it_never_flips():
    predict = linear_predict(torch.ones(5), bias=10.0)
    assert er.removals_to_flip(predict, np.arange(5), 5) is None


def test_prefix_masks():
    keep = er.prefix_masks([2, 0, 1], 3, [0, 1, 2, 3])
    assert keep.tolist() == [[True, True, True], [True, True, False], [False, True, False], [False, False, False]]
    top = er.prefix_masks([2, 0, 1], 3, [1], keep_top=True)
    assert top.tolist() == [[False, False, True]]


def test_deletion_starts_at_f_x_and_full_rationale_has_zero_sufficiency():
    w = torch.tensor([2.0, -1.0, 0.5, 0.0, 1.0])
    predict = linear_predict(w, bias=0.0)
    score = er.target_score(predict, 1)
    c = er.erasure_curves(score, er.ranking(w.numpy(), signed=True), 5, bins=(0.2, 0.6, 1.0))
    f_x = float(score(torch.ones(1, 5, dtype=torch.bool))[0])
    assert c.counts[0] == 0 and c.deletion[0] == pytest.approx(f_x) and c.f_x == pytest.approx(f_x)
    assert c.insertion[0] == pytest.approx(float(score(torch.zeros(1, 5, dtype=torch.bool))[0]))
    assert c.insertion[-1] == pytest.approx(f_x)  # r = everything: m(r) = m(x)
    full = er.erasure_curves(score, np.arange(5), 5, bins=(1.0,))
    assert full.sufficiency == pytest.approx(0.0, abs=1e-7)
    assert full.comprehensiveness == pytest.approx(f_x - c.f_empty)
    assert er.bin_counts(10) == [1, 1, 1, 2, 5] and er.bin_counts(200) == [2, 10, 20, 40, 100]


def test_curves_on_a_model_start_at_the_model_output():
    qs = lm_queries(gpt(), torch.randint(0, 20, (3, 10), generator=torch.Generator().manual_seed(0)))
    res = er.curves(qs, methods=("attention", "loo", "random"), random_draws=3)
    assert res.n_done == 9 and res.examples_done == 3
    for r in res.rows:
        q = qs[r.example]
        assert r.f_x == pytest.approx(float(q.probs()[0, q.targets[0]]), abs=1e-5)
    frame = res.curve_frame()
    start = frame[(frame.fraction == 0) & (frame.curve == "deletion")]
    assert set(start.method) == {"attention", "loo", "random"}
    assert np.allclose(start.score, np.mean([r.f_x for r in res.rows if r.method == "attention"]), atol=1e-5)


def test_attention_erasure_keeps_rows_distributions_and_flips_are_found():
    q = lm_queries(gpt(), torch.randint(0, 20, (1, 8), generator=torch.Generator().manual_seed(1)))[0]
    probe = Probe(q)
    predict = er.attention_keep_fn(probe)
    m = probe.n_real
    out = predict(torch.ones(1, m, dtype=torch.bool))
    assert torch.allclose(out[0], probe.base, atol=1e-5)
    assert er.attention_max_remove(probe) == m - 1  # no special key holds weight
    res = er.erasure([q], methods=("attention", "attention_grad", "saliency", "random"), random_draws=5)
    assert {r.method for r in res.rows} == {"attention", "attention_grad", "saliency", "random"}
    for r in res.rows:
        assert r.flipped in (0.0, 1.0) or 0 <= r.flipped <= 1
        assert math.isnan(r.fraction) or 0 < r.fraction <= 1


def test_erasure_same_seed_identical_and_cancel_keeps_finished():
    qs = lm_queries(gpt(), torch.randint(0, 20, (4, 8), generator=torch.Generator().manual_seed(2)))
    kw = dict(methods=("attention", "random"), random_draws=4, seed=7, level="input")
    a, b = er.erasure(qs, **kw), er.erasure(qs, **kw)
    assert a.to_frame().equals(b.to_frame())
    stop = threading.Event()
    part = er.erasure(qs, progress=lambda ev: ev.done == 1 and stop.set(), stop=stop, **kw)
    assert part.stopped and part.examples_done == 1 and part.to_frame().equals(a.to_frame().iloc[:2])


def test_pointing_game_oracle_scores_one():
    model = vit()
    images = torch.zeros(2, 1, 8, 8)
    masks = [torch.zeros(8, 8, dtype=torch.bool), torch.zeros(8, 8, dtype=torch.bool)]
    masks[0][:4, :4] = True
    masks[1][4:, 2:6] = True
    qs = classifier_queries(model, images)

    def oracle(q):
        i = 1 if q is qs[1] else 0
        m = masks[i].reshape(4, 2, 4, 2).any(-1).any(1).flatten().float().numpy()
        return {"oracle": m}

    res = er.pointing(qs, masks, methods=("oracle", "random"), importance_fn=oracle)
    oracle_rows = [r for r in res.rows if r.method == "oracle"]
    assert [r.mass_share for r in oracle_rows] == [1.0, 1.0] and all(r.hit for r in oracle_rows)
    stats = {m["method"]: m for m in res.stats()["methods"]}
    assert stats["oracle"]["mean_mass_share"] == 1.0 and stats["random"]["mean_mass_share"] < 1.0


def test_pointing_needs_masks():
    from playground.errors import PlaygroundError

    qs = classifier_queries(vit(), torch.zeros(1, 1, 8, 8))
    with pytest.raises(PlaygroundError, match="masks"):
        er.pointing(qs, [None])
