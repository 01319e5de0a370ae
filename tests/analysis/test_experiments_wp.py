"""Wiegreffe & Pinter experiments: uniform baseline, seed variance, diagnostic classifier."""
from __future__ import annotations

import dataclasses
import math

import pytest
import torch
import torch.nn.functional as F

from playground.analysis.experiments import jain_wallace as jw
from playground.analysis.experiments import wiegreffe_pinter as wp
from playground.analysis.divergences import LN2
from playground.analysis.experiments.data import classifier_queries, lm_queries
from playground.errors import ConfigError
from playground.models.attention import override_attention
from playground.families import build_model, get_family


def gpt(seed=0):
    torch.manual_seed(seed)
    return build_model("gpt", dict(vocab_size=20, block_size=16, n_layer=2, n_head=2, d_model=16)).eval()


def vit(seed=0):
    torch.manual_seed(seed)
    return build_model("vit", dict(image_size=8, patch_size=4, channels=1, n_classes=3, d_model=16, n_layer=2, n_head=2)).eval()


WINDOWS = torch.randint(0, 20, (6, 11), generator=torch.Generator().manual_seed(0))


def lm_eval(model):
    with torch.no_grad():
        logits = model(WINDOWS[:, :-1])
        loss = F.cross_entropy(logits.flatten(0, 1), WINDOWS[:, 1:].flatten())
        acc = (logits.argmax(-1) == WINDOWS[:, 1:]).float().mean()
    return {"val_loss": float(loss), "accuracy": float(acc), "accuracy@bucket": 0.0}


def test_uniform_baseline_rows_and_uniform_model_permutes_to_zero():
    model = gpt()
    res = wp.uniform(model, lm_eval)
    table = res.stats()["variants"]
    assert set(table) == {wp.LEARNED, wp.UNIFORM}
    assert set(table[wp.LEARNED]) == {"val_loss", "accuracy"}  # bucketed metrics left out
    assert table[wp.LEARNED]["val_loss"] == pytest.approx(lm_eval(model)["val_loss"])
    with override_attention(model, wp.uniform_overrides(model)):
        assert table[wp.UNIFORM]["val_loss"] == pytest.approx(lm_eval(model)["val_loss"])
        perm = jw.permutation(lm_queries(model, WINDOWS[:3]), n_perm=20)
    assert all(r.median_tvd == 0.0 and r.max_tvd == 0.0 for r in perm.rows)
    assert table[wp.LEARNED]["val_loss"] != table[wp.UNIFORM]["val_loss"]
    assert {"metric", wp.LEARNED, wp.UNIFORM} <= set(res.table().columns)


def test_uniform_baseline_with_a_retrained_model():
    res = wp.uniform(gpt(), lm_eval, retrained=gpt(seed=1))
    assert wp.RETRAINED in res.stats()["variants"] and res.examples_done == 3


def test_every_family_names_a_uniform_retrain_switch_its_config_accepts(monkeypatch):
    for family in ("gpt", "vit", "rnn_seq2seq", "transformer_seq2seq"):
        spec = get_family(family)
        (key, value), = wp.uniform_model_override(family).items()
        section, field = key.split(".", 1)
        assert section == "model" and field in {f.name for f in dataclasses.fields(spec.config_cls)}, family
        spec.config_cls(**{field: value})  # a value the config accepts
    monkeypatch.setattr(get_family("gpt").explainer, "uniform_override", None)
    with pytest.raises(ConfigError, match="uniform"):  # a family without one is told so
        wp.uniform_model_override("gpt")


def test_seed_variance_zero_for_the_same_model_and_positive_across_seeds():
    qs = lm_queries(gpt(), WINDOWS[:3])
    same = wp.seed_variance([gpt(), gpt()], qs)
    assert all(r.mean_jsd == 0.0 and r.max_jsd == 0.0 for r in same.rows)
    other = wp.seed_variance([gpt(), gpt(1), gpt(2)], qs, adversarial_jsd=[0.5, 0.6, 0.7])
    assert all(0 < r.mean_jsd <= r.max_jsd <= LN2 for r in other.rows)
    assert [r.adversarial_jsd for r in other.rows] == [0.5, 0.6, 0.7] and other.rows[0].n_models == 3
    with pytest.raises(Exception, match="two models"):
        wp.seed_variance([gpt()], qs)


def test_diagnostic_fits_every_variant_deterministically():
    g = torch.Generator().manual_seed(0)
    images = torch.rand(24, 1, 8, 8, generator=g)
    labels = (images[:, 0, :4, :4].mean((1, 2)) > images[:, 0, 4:, 4:].mean((1, 2))).long().tolist()
    qs = classifier_queries(vit(), images)
    kw = dict(n_train=16, seed=3, adversarial_steps=5)
    a = wp.diagnostic(qs, labels, **kw)
    b = wp.diagnostic(qs, labels, **kw)
    assert [r.variant for r in a.rows] == list(wp.DIAGNOSTIC_VARIANTS)
    assert all(0 <= r.accuracy <= 1 and r.n_train == 16 and r.n_test == 8 for r in a.rows)
    assert a.to_frame().equals(b.to_frame())
    assert 0 <= a.stats()["model_accuracy"] <= 1 and "features" not in a.extra


def test_diagnostic_with_too_few_labels_says_so():
    qs = classifier_queries(vit(), torch.rand(3, 1, 8, 8))
    res = wp.diagnostic(qs, [0, None, 1], n_train=2, variants=("learned", "uniform"))
    assert res.rows == [] and "too few" in res.extra["note"]
    assert not math.isnan(len(res.to_frame()))
