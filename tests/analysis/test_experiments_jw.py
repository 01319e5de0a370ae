"""Jain & Wallace experiments: permutation, adversarial attention, agreement."""
from __future__ import annotations

import math
import threading

import numpy as np
import pytest
import torch

from playground.analysis.experiments import jain_wallace as jw
from playground.analysis.divergences import LN2
from playground.analysis.experiments.core import Probe, make_generator
from playground.analysis.experiments.data import classifier_queries, lm_queries
from playground.families import build_model, get_family


def gpt(**kw):
    torch.manual_seed(0)
    cfg = dict(vocab_size=20, block_size=16, n_layer=2, n_head=2, d_model=16)
    cfg.update(kw)
    return build_model("gpt", cfg).eval()


def windows(n, T=10, seed=0):
    return torch.randint(0, 20, (n, T), generator=torch.Generator().manual_seed(seed))


def uniform_attention_gpt():
    """Query and key projections zeroed: every score is 0, so every row is uniform over the visible keys."""
    model = gpt()
    with torch.no_grad():
        for block in model.blocks:
            D = block.attn.qkv.weight.shape[1]
            block.attn.qkv.weight[: 2 * D] = 0
            block.attn.qkv.bias[: 2 * D] = 0
    return model


def attention_ignoring_gpt(sharp: float = 30.0):
    """Attention output projections zeroed (the model ignores attention); q/k scaled so rows are peaked."""
    model = gpt()
    with torch.no_grad():
        for block in model.blocks:
            D = block.attn.qkv.weight.shape[1]
            block.attn.qkv.weight[: 2 * D] *= sharp
            block.attn.out_proj.weight.zero_()
            block.attn.out_proj.bias.zero_()
    return model


def test_permutation_on_uniform_attention_is_exactly_zero():
    qs = lm_queries(uniform_attention_gpt(), windows(4))
    res = jw.permutation(qs, n_perm=30, seed=0)
    assert res.n_done == 4
    assert all(r.median_tvd == 0.0 and r.max_tvd == 0.0 and r.flip_share == 0.0 for r in res.rows)
    assert all(r.max_attention == pytest.approx(1 / 10) for r in res.rows)


def test_permutation_changes_output_of_a_normal_model_and_only_real_positions_move():
    model = gpt()
    q = lm_queries(model, torch.tensor([[0, 5, 6, 7, 8, 9, 10, 11]]), specials={0}, baseline=1)[0]
    probe = Probe(q, heads=[1])
    rows = jw.permutation_rows(probe, 50, make_generator(0))
    assert rows.shape == (50, 1, 8)
    assert torch.equal(rows[:, :, 0], probe.head_rows()[:, 0].expand(50, 1))  # the special key keeps its weight
    assert torch.allclose(rows.sum(-1), torch.ones(50, 1))
    assert torch.allclose(rows[:, 0, 1:].sort(-1).values, probe.head_rows()[0, 1:].sort().values.expand(50, -1))
    t, _ = jw.permutation_one(probe, 50, make_generator(0))
    assert (t > 0).any() and bool((t >= 0).all())


def test_permutation_same_seed_identical_and_cancel_keeps_finished():
    qs = lm_queries(gpt(), windows(5))
    a = jw.permutation(qs, n_perm=20, seed=3).to_frame()
    b = jw.permutation(qs, n_perm=20, seed=3).to_frame()
    assert a.equals(b)
    c = jw.permutation(qs, n_perm=20, seed=4).to_frame()
    assert not a["median_tvd"].equals(c["median_tvd"])
    stop = threading.Event()
    partial = jw.permutation(qs, progress=lambda ev: ev.done == 2 and stop.set(), n_perm=20, seed=3, stop=stop)
    assert partial.stopped and partial.n_done == 2
    assert partial.to_frame().equals(a.iloc[:2])


def test_adversaries_keep_tvd_within_epsilon_and_jsd_below_ln2():
    qs = lm_queries(gpt(), windows(2, seed=5))
    for eps, q in zip((0.01, 0.05), qs):
        if True:
            probe = Probe(q)
            adv = jw.adversarial_one(probe, make_generator(0), k=5, epsilon=eps, steps=40)
            assert adv.rows.shape[0] >= 1
            out = probe.run_rows(torch.cat([probe.head_rows()[None], adv.rows]))
            tv = 0.5 * (out[1:] - out[:1]).abs().sum(-1)
            assert bool((tv <= eps).all()) and bool((adv.tvd <= eps).all())
            assert bool((adv.jsd <= LN2).all()) and bool((adv.jsd >= 0).all())
            assert torch.allclose(adv.rows.sum(-1), torch.ones(adv.rows.shape[:2]), atol=1e-5)
            assert bool((adv.rows[..., ~probe.real_keys] == probe.head_rows()[..., ~probe.real_keys]).all())


def test_adversaries_reach_near_ln2_when_attention_is_ignored():
    q = lm_queries(attention_ignoring_gpt(), windows(1, T=6, seed=1))[0]
    probe = Probe(q, module="blocks.1.attn", heads=[0])
    best = jw.max_possible_jsd(probe.alpha[probe.real_keys])
    assert best > 0.6  # peaked attention: a distribution far from it exists
    adv = jw.adversarial_one(probe, make_generator(0), k=3, epsilon=0.01, steps=300)
    assert adv.max_jsd >= 0.9 * best
    assert adv.max_jsd <= LN2 and float(adv.tvd.max()) <= 1e-6


def test_adversarial_result_same_seed_identical_and_stoppable():
    qs = lm_queries(gpt(), windows(3, seed=2))
    a = jw.adversarial(qs[:2], steps=20, seed=1)
    b = jw.adversarial(qs[:2], steps=20, seed=1)
    assert a.to_frame().equals(b.to_frame())
    assert a.settings["epsilon"] == 0.05  # next-token default
    assert set(a.extra["attention"]) == {"0", "1"}
    entry = a.extra["attention"]["0"]
    assert len(entry["original"]) == 10 and math.isclose(sum(entry["original"]), 1.0, rel_tol=1e-5)
    stop = threading.Event()
    partial = jw.adversarial(qs, progress=lambda ev: ev.done == 1 and stop.set(), steps=20, seed=1, stop=stop)
    assert partial.stopped and partial.n_done == 1


def test_default_epsilon_by_kind():
    torch.manual_seed(0)
    model = build_model("vit", dict(image_size=8, patch_size=4, channels=1, n_classes=3, d_model=16, n_layer=1, n_head=2)).eval()
    qs = classifier_queries(model, torch.rand(1, 1, 8, 8))
    res = jw.adversarial(qs, steps=5)
    assert res.settings["epsilon"] == 0.01 and get_family("gpt").explainer.adversarial_epsilon == 0.05


def test_agreement_identical_and_reversed_rankings():
    qs = lm_queries(gpt(), windows(3))
    ramp = np.arange(1.0, 11.0)
    imp = {"attention": ramp, "saliency": ramp * 2, "loo": ramp[::-1].copy()}
    res = jw.agreement(qs, views=("attention",), references=("saliency", "loo"), importance_fn=lambda q: imp)
    st = {(p["method_a"], p["method_b"]): p for p in res.stats()["pairs"]}
    assert st[("attention", "saliency")]["mean_tau"] == pytest.approx(1.0)
    assert st[("attention", "loo")]["mean_tau"] == pytest.approx(-1.0)
    assert st[("saliency", "loo")]["reference_pair"] and st[("saliency", "loo")]["share_p05"] == 1.0
    assert len(res.rows) == 3 * 3


def test_agreement_with_the_analyzer_methods_and_unsupported_skipped():
    qs = lm_queries(gpt(), windows(2))
    res = jw.agreement(qs, views=("attention", "rollout"), references=("saliency", "loo"))
    assert res.n_done == 2 * 5 and res.examples_done == 2 and all(-1 <= r.tau <= 1 for r in res.rows if not math.isnan(r.tau))
    torch.manual_seed(0)
    rnn = build_model("rnn_seq2seq", dict(vocab_size=12, emb_dim=8, hidden=16)).eval()
    from playground.analysis.experiments.data import seq2seq_queries

    sq = seq2seq_queries(rnn, [[4, 5, 6, 7]], make_generator(0))[0]
    res = jw.agreement(sq, views=("attention", "rollout"), references=("loo",))
    assert res.settings["skipped_methods"] == ["rollout"] and {r.method_a for r in res.rows} == {"attention"}
