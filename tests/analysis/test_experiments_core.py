"""Shared machinery of the dataset-level experiments: divergences, the Probe, progress/stop, export."""
from __future__ import annotations

import json
import math
import threading

import numpy as np
import pytest
import torch
from scipy.spatial.distance import jensenshannon

from playground.analysis.divergences import LN2, jsd, tvd
from playground.analysis.experiments.core import (
    ExperimentResult,
    Probe,
    Progress,
    drive,
    loop_examples,
    make_generator,
)
from playground.analysis.experiments.data import classifier_queries, lm_queries, seq2seq_queries
from playground.families import build_model


def gpt(**kw):
    torch.manual_seed(0)
    cfg = dict(vocab_size=20, block_size=16, n_layer=2, n_head=2, d_model=16)
    cfg.update(kw)
    return build_model("gpt", cfg).eval()


def vit():
    torch.manual_seed(0)
    return build_model("vit", dict(image_size=8, patch_size=4, channels=1, n_classes=3, d_model=16, n_layer=2, n_head=2)).eval()


def seq2seq(family):
    torch.manual_seed(0)
    if family == "rnn_seq2seq":
        cfg = dict(vocab_size=12, emb_dim=8, hidden=16, attention="additive")
    else:
        cfg = dict(vocab_size=12, d_model=16, n_head=2, max_len=24, n_encoder_layers=1, n_decoder_layers=2)
    return build_model(family, cfg).eval()


def all_queries():
    g = torch.Generator().manual_seed(1)
    out = {"gpt": lm_queries(gpt(), torch.randint(0, 20, (2, 10), generator=g)),
           "vit": classifier_queries(vit(), torch.rand(2, 1, 8, 8, generator=g))}
    for fam in ("rnn_seq2seq", "transformer_seq2seq"):
        out[fam] = seq2seq_queries(seq2seq(fam), [[4, 5, 6, 7], [8, 9, 10]], make_generator(0))[0]
    return out


def test_tvd_jsd_match_numpy_and_bounds():
    g = torch.Generator().manual_seed(0)
    p = torch.rand(5, 7, generator=g).softmax(-1)
    q = torch.rand(5, 7, generator=g).softmax(-1)
    for i in range(5):
        pi, qi = p[i].double().numpy(), q[i].double().numpy()
        assert float(tvd(p[i], q[i])) == pytest.approx(0.5 * np.abs(pi - qi).sum(), abs=1e-6)
        assert float(jsd(p[i], q[i])) == pytest.approx(jensenshannon(pi, qi) ** 2, abs=1e-6)  # scipy's is the square root
    a, b = torch.tensor([1.0, 0, 0]), torch.tensor([0, 0.5, 0.5])
    assert float(jsd(a, b)) == pytest.approx(LN2)  # disjoint supports
    assert float(jsd(a, a)) == 0.0
    assert torch.all(jsd(p, q) <= LN2) and torch.all(jsd(p, q) >= 0)


@pytest.mark.parametrize("family", ["gpt", "vit", "rnn_seq2seq", "transformer_seq2seq"])
def test_probe_reproduces_the_model(family):
    for q in all_queries()[family]:
        probe = Probe(q)
        assert torch.allclose(probe.base, q.probs()[0], atol=1e-5)  # cached prefix / decode state == full forward
        assert torch.allclose(probe.run_base(3), probe.base.expand(3, -1), atol=1e-5)
        assert torch.allclose(probe.weights.sum(-1), torch.ones(probe.weights.shape[0]), atol=1e-5)
        assert probe.real_keys.sum() >= 1
        if family == "vit":
            assert not bool(probe.real_keys[0])  # CLS key is not a unit


def test_probe_real_keys_respect_causality_and_specials():
    model = gpt()
    ids = torch.tensor([[0, 3, 4, 5, 6, 7]])
    q = lm_queries(model, ids, specials={0}, baseline=1)[0]
    probe = Probe(q)
    assert probe.n_keys == 6
    assert probe.real_keys.tolist() == [False, True, True, True, True, True]  # token 0 is special
    assert probe.special_keys.tolist() == [True, False, False, False, False, False]
    assert bool(q.baselines[0, 0] == 0) and bool((q.baselines[0, 1:] == 1).all())


def test_cached_path_gradient_equals_full_forward():
    q = lm_queries(gpt(), torch.randint(0, 20, (1, 9), generator=torch.Generator().manual_seed(2)))[0]
    cached, full = Probe(q), Probe(q)
    full._prefix = None  # force the full-sequence forward
    rows = cached.head_rows()[None].clone()
    grads = []
    for p in (cached, full):
        r = rows.clone().requires_grad_(True)
        out = p.run_rows(r, grad=True)
        (g,) = torch.autograd.grad(out[0, 3].log(), [r])
        grads.append(g)
    assert torch.allclose(grads[0], grads[1], atol=1e-5)
    assert grads[0].abs().sum() > 0


def test_probe_leaves_global_rng_and_model_alone():
    q = lm_queries(gpt(), torch.randint(0, 20, (1, 8)))[0]
    state = torch.get_rng_state()
    params = [p.detach().clone() for p in q.model.parameters()]
    probe = Probe(q)
    probe.run_rows(probe.head_rows()[None].expand(4, -1, -1))
    assert torch.equal(state, torch.get_rng_state())
    assert all(torch.equal(a, b) for a, b in zip(params, q.model.parameters()))
    assert all(p.grad is None for p in q.model.parameters())


def test_unit_inputs_replace_by_baseline():
    q = classifier_queries(vit(), torch.ones(1, 1, 8, 8))[0]  # 2x2 grid of 4-pixel patches
    probe = Probe(q)
    keep = torch.tensor([[True, False, True, True]])
    x = probe.unit_inputs(keep)[0, 0]
    assert float(x[:4, 4:].sum()) == 0 and float(x[:4, :4].sum()) == 16 and float(x[4:].sum()) == 32
    full = probe.run_units(torch.ones(1, 4, dtype=torch.bool))
    assert torch.allclose(full[0], probe.base, atol=1e-5)


class _Result(ExperimentResult):
    experiment = "dummy"


def test_loop_progress_stop_and_export(tmp_path):
    stop = threading.Event()
    result = _Result(settings={"x": math.nan})
    events: list[Progress] = []

    def work(i, item):
        return {"example": i, "value": item * 2.0}

    def on_event(ev):
        events.append(ev)
        if ev.done == 2:
            stop.set()

    out = drive(loop_examples("dummy", [1, 2, 3, 4], result, work, stop), on_event)
    assert out is result and out.stopped and out.n_done == 2 and out.n_requested == 4
    assert [e.done for e in events] == [0, 1, 2] and events[-1].partial is result
    d = json.loads(out.to_json())  # strict JSON: NaN became null
    assert d["settings"]["x"] is None and d["rows"][1]["value"] == 4.0 and d["stopped"] is True
    assert out.save(tmp_path / "r.csv").read_text().splitlines()[0] == "example,value"
    assert json.loads(out.save(tmp_path / "r.json").read_text())["n_done"] == 2
