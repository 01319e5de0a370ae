"""Jain & Wallace permutation of the explaining attention row."""
from __future__ import annotations

import torch

from playground.bench.permutation_peer import permutation_test
from playground.analysis.query import Query
from playground.families import get_family
from playground.models.attention import attention_modules, override_attention, uniform_override
from tests.analysis.conftest import tiny_gpt, tiny_seq2seq, tiny_vit


def _query(model, B: int = 2) -> Query:
    ids = torch.randint(1, 20, (B, 9), generator=torch.Generator().manual_seed(0))
    return Query(model, get_family("gpt").explainer, ids, torch.tensor([3, 4][:B]), model.tok_emb, positions=torch.tensor([8, 5][:B]),
                 baselines=torch.zeros_like(ids))


def test_permuting_frozen_uniform_attention_changes_nothing() -> None:
    model = tiny_gpt(20)
    q = _query(model)
    with override_attention(model, {name: uniform_override() for name in attention_modules(model)}):
        res = permutation_test(q, n=20, layers=[0, 1])
    assert torch.equal(res.tvd, torch.zeros(2, 20))
    assert torch.equal(res.median, torch.zeros(2))


def test_permuting_learned_attention_changes_the_output_and_stays_causal() -> None:
    model = tiny_gpt(20)
    q = _query(model)
    res = permutation_test(q, n=20, layers=[0])
    assert res.tvd.shape == (2, 20) and bool((res.tvd > 0).any())
    assert bool((res.max_attention > 0).all()) and bool((res.max_attention <= 1).all())


def test_permutation_is_reproducible_and_works_for_vit_and_seq2seq() -> None:
    model = tiny_gpt(20)
    q = _query(model, B=1)
    torch.testing.assert_close(permutation_test(q, 10, seed=3).tvd, permutation_test(q, 10, seed=3).tvd)
    vit = tiny_vit()
    x = torch.rand(1, 3, 16, 16)
    qv = Query(vit, get_family("vit").explainer, x, torch.tensor([0]), vit.patch_emb, baselines=torch.zeros_like(x), grid=vit.grid)
    assert permutation_test(qv, 5).tvd.shape == (1, 5)
    for fam in ("rnn_seq2seq", "transformer_seq2seq"):
        m = tiny_seq2seq(fam, 14)
        src = torch.tensor([[4, 5, 6, 7, 8]])
        qs = Query(m, get_family(fam).explainer, src.expand(2, -1), torch.tensor([9, 2]), m.src_emb, positions=torch.tensor([0, 1]),
                   decoder_inputs=torch.tensor([[1, 9]]).expand(2, -1), baselines=torch.full((2, 5), 3))
        res = permutation_test(qs, 6)
        assert res.tvd.shape == (2, 6) and bool((res.tvd >= 0).all())
