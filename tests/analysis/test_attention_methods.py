"""Attention-based importance on real models: recorded maps, rows, norm-weighted, causality."""
from __future__ import annotations

import pytest
import torch

from playground.analysis.explain import attention as am
from playground.analysis.query import Query
from playground.families import get_family
from tests.analysis.conftest import tiny_gpt, tiny_vit


def _gpt_query(model, T: int = 9, pos: int = 5, B: int = 1) -> Query:
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(1, model.config.vocab_size, (B, T), generator=g)
    return Query(model, get_family("gpt").explainer, ids, torch.full((B,), 3), model.tok_emb, positions=torch.full((B,), pos),
                 baselines=torch.zeros_like(ids))


def test_recorded_attention_rows_sum_to_one_and_future_is_zero() -> None:
    model = tiny_gpt(20)
    q = _gpt_query(model)
    rec = am.record(q)
    assert set(rec.maps) == {"blocks.0.attn", "blocks.1.attn"}
    for a in rec.maps.values():  # [B,H,T,T]
        torch.testing.assert_close(a.sum(-1), torch.ones(a.shape[:-1]))
        assert torch.equal(a.triu(1), torch.zeros_like(a))


def test_every_attention_method_gives_zero_after_the_query() -> None:
    model = tiny_gpt(20)
    q = _gpt_query(model, T=9, pos=5, B=2)
    rec = am.record(q, values=True)
    results = [am.attention(q, rec), am.attention(q, rec, layer=0, head=1), am.mean_attention(q, rec),
               am.rollout(q, rec), am.flow(q, rec), am.norm_weighted(q, rec), am.grad_relevancy(q)]
    for r in results:
        assert r.values.shape == (2, 9), r.method
        assert torch.equal(r.values[:, 6:], torch.zeros(2, 3)), r.method
        assert (r.values[:, :6] >= 0).all(), r.method
    for r in results[:5]:  # distributions over the keys
        torch.testing.assert_close(r.values.sum(-1), torch.ones(2), msg=r.method)


def test_rows_pick_each_examples_position() -> None:
    model = tiny_gpt(20)
    q = _gpt_query(model, B=2)
    q.positions = torch.tensor([2, 7])
    rec = am.record(q)
    a = rec.maps["blocks.1.attn"]
    r = am.rows(q, a)
    torch.testing.assert_close(r[0], a[0, :, 2])
    torch.testing.assert_close(r[1], a[1, :, 7])


def test_norm_weighted_equals_attention_ranking_when_value_norms_are_equal() -> None:
    model = tiny_gpt(20, n_layer=1, n_head=1)
    q = _gpt_query(model, T=6, pos=5)
    rec = am.record(q, values=True)
    name = "blocks.0.attn"
    x = rec.values_in[name]
    module = model.blocks[0].attn
    f = am.value_vectors(module, x)  # [B,H,K,D]
    # make every ||f(x_j)|| equal: scale each x_j so its value vector has unit norm (no bias)
    with torch.no_grad():
        module.qkv.bias.zero_()
        f = am.value_vectors(module, x)
        rec.values_in[name] = x / f.norm(dim=-1)[:, 0, :, None]
    norm = am.norm_weighted(q, rec).values[0]
    alpha = am.attention(q, rec).values[0]
    torch.testing.assert_close(norm, alpha, rtol=1e-4, atol=1e-6)


def test_vit_reads_the_cls_row_over_patches() -> None:
    model = tiny_vit()
    x = torch.rand(1, 3, 16, 16)
    q = Query(model, get_family("vit").explainer, x, torch.tensor([1]), model.patch_emb, baselines=torch.zeros_like(x), grid=model.grid)
    rec = am.record(q, values=True)
    a = rec.maps["blocks.1.attn"]
    torch.testing.assert_close(am.attention(q, rec).values[0], a[0, :, 0, 1:].mean(0))
    for r in (am.rollout(q, rec), am.flow(q, rec)):
        assert r.values.shape == (1, 16)
        assert float(r.values.sum()) == pytest.approx(1.0, abs=1e-5)
    assert am.norm_weighted(q, rec).values.shape == (1, 16)
    assert am.grad_relevancy(q).values.shape == (1, 16)
