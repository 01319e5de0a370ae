"""Attention math: worked examples, score functions, the sqrt(d_k) experiment, fast vs explicit path."""

from __future__ import annotations

import math

import pytest
import torch

from playground.models.attention import (
    AdditiveScore,
    DotScore,
    GeneralScore,
    KVCache,
    MultiHeadAttention,
    ScaledDotScore,
    make_score,
    masked_softmax,
    record_attention,
    scored_attend,
)
from playground.models.positional import Rotary


def test_additive_worked_example() -> None:
    """Bahdanau scores with W = [I; I] on [s; h_j] (i.e. W_a = I on s + h_j) and v = (1, 1)."""
    score = AdditiveScore(query_dim=2, key_dim=2, attn_dim=2)
    with torch.no_grad():
        score.W.weight.copy_(torch.cat([torch.eye(2), torch.eye(2)], dim=1))  # [A, Dq + Dk]
        score.v.weight.fill_(1.0)
    s = torch.tensor([[[1.0, 0.0]]])  # [B=1, Q=1, 2]
    h = torch.tensor([[[1.0, 0.0], [0.2, 0.1], [-0.5, 0.3], [0.1, -0.4]]])  # [1, T=4, 2]
    scores = score(s, score.prepare(h))[0, 0]
    context, weights = scored_attend(score, s, h, h)
    assert torch.allclose(scores, torch.tensor([0.964, 0.933, 0.753, 0.421]), atol=5e-4)
    assert torch.allclose(weights[0, 0], torch.tensor([0.298, 0.289, 0.241, 0.173]), atol=5e-4)
    assert torch.allclose(context[0, 0], torch.tensor([0.252, 0.032]), atol=5e-4)
    # the lecture notes' printed numbers are not what the formula gives
    assert not torch.allclose(weights[0, 0], torch.tensor([0.292, 0.283, 0.236, 0.190]), atol=5e-4)


def test_soft_dictionary_lookup() -> None:
    q = torch.tensor([[[0.9, 0.1]]])
    keys = torch.tensor([[[1.0, 0.0], [0.0, 1.0], [0.7, 0.7], [-1.0, 0.0]]])
    values = torch.tensor([[[10.0, 20.0], [30.0, 40.0], [15.0, 25.0], [50.0, 60.0]]])
    out, w = scored_attend(DotScore(), q, keys, values)
    assert torch.allclose(w[0, 0], torch.tensor([0.411, 0.185, 0.336, 0.068]), atol=5e-4)
    assert torch.allclose(out[0, 0], torch.tensor([18.09, 28.09]), atol=5e-3)


def test_general_and_scaled_scores_match_their_formulas() -> None:
    s, h = torch.randn(2, 3, 4), torch.randn(2, 5, 6)
    general = GeneralScore(4, 6)
    expected = torch.einsum("bqd,de,bke->bqk", s, general.W.weight, h)  # s^T W h
    assert torch.allclose(general(s, general.prepare(h)), expected, atol=1e-5)
    k = torch.randn(2, 5, 4)
    assert torch.allclose(ScaledDotScore()(s, k), s @ k.transpose(1, 2) / 2.0, atol=1e-6)
    assert torch.allclose(ScaledDotScore(scale=False)(s, k), s @ k.transpose(1, 2), atol=1e-6)
    with pytest.raises(ValueError):
        make_score("dot", 4, 6)


def test_masked_softmax_zero_where_masked_and_on_empty_rows() -> None:
    scores = torch.randn(2, 3, 4)
    mask = torch.tensor([[True, True, False, False]]).expand(2, 3, 4).clone()
    mask[1, 2] = False  # a fully masked row
    w = masked_softmax(scores, mask)
    assert torch.all(w[~mask] == 0)
    assert torch.allclose(w[0].sum(-1), torch.ones(3))
    assert torch.all(w[1, 2] == 0)


def test_unscaled_dot_products_have_variance_d_k() -> None:
    g = torch.Generator().manual_seed(0)
    for d_k in (16, 256):
        q, k = torch.randn(20000, d_k, generator=g), torch.randn(20000, d_k, generator=g)
        dots = (q * k).sum(-1)
        assert dots.var().item() == pytest.approx(d_k, rel=0.1)
        assert (dots / math.sqrt(d_k)).var().item() == pytest.approx(1.0, rel=0.1)


def test_softmax_entropy_collapses_without_scaling() -> None:
    """Over 64 keys: unscaled attention gets peaky as d_k grows; scaled stays near log 64."""
    g = torch.Generator().manual_seed(0)

    def mean_entropy(d_k: int, scale: bool) -> float:
        q, k = torch.randn(200, 1, d_k, generator=g), torch.randn(200, 64, d_k, generator=g)
        w = ScaledDotScore(scale)(q, k).softmax(-1)  # [200, 1, 64]
        return -(w * w.clamp_min(1e-30).log()).sum(-1).mean().item()

    unscaled = [mean_entropy(d, False) for d in (4, 64, 512)]
    scaled = [mean_entropy(d, True) for d in (4, 64, 512)]
    assert unscaled[0] > unscaled[1] > unscaled[2]
    assert unscaled[2] < 0.5 * math.log(64)
    for h in scaled:
        assert h > 0.85 * math.log(64)


def _explicit_vs_fast(attn: MultiHeadAttention, *args, **kwargs) -> tuple[torch.Tensor, torch.Tensor]:
    fast, _ = attn(*args, **kwargs)
    explicit, w = attn(*args, need_weights=True, **kwargs)
    assert w is not None
    return fast, explicit


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("pos", ["none", "rope", "alibi"])
@pytest.mark.parametrize("scale", [True, False])
def test_fast_path_matches_explicit_path(causal: bool, pos: str, scale: bool) -> None:
    rotary = Rotary(8, 32) if pos == "rope" else None
    attn = MultiHeadAttention(32, 4, causal=causal, scale=scale, rotary=rotary, alibi=pos == "alibi").eval()
    x = torch.randn(3, 9, 32)
    key_mask = torch.ones(3, 9, dtype=torch.bool)
    key_mask[1, 6:] = False
    for km in (None, key_mask):
        fast, explicit = _explicit_vs_fast(attn, x, key_mask=km)
        assert torch.allclose(fast, explicit, atol=1e-5), (fast - explicit).abs().max()


def test_is_causal_path_used_on_gpus_matches_the_cpu_mask_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """GPUs call SDPA with is_causal=True, CPU with a boolean mask: run both branches on CPU."""
    import playground.models.attention as attention

    attn = MultiHeadAttention(32, 4, causal=True).train()
    x = torch.randn(3, 9, 32, requires_grad=True)
    mask_out = attn(x)[0]
    (mask_grad,) = torch.autograd.grad(mask_out.square().sum(), x)
    monkeypatch.setattr(attention, "IS_CAUSAL_DEVICE_TYPES", frozenset({"cpu"}))
    causal_out = attn(x)[0]
    (causal_grad,) = torch.autograd.grad(causal_out.square().sum(), x)
    assert torch.allclose(mask_out, causal_out, atol=1e-5)
    assert torch.allclose(mask_grad, causal_grad, atol=1e-5)
    assert torch.allclose(causal_out, attn(x, need_weights=True)[0], atol=1e-5)


def test_fast_path_matches_explicit_path_cross_and_cached() -> None:
    cross = MultiHeadAttention(32, 4, cross=True).eval()
    x, mem = torch.randn(2, 5, 32), torch.randn(2, 7, 32)
    mask = torch.tensor([[True] * 7, [True] * 4 + [False] * 3])
    fast, explicit = _explicit_vs_fast(cross, x, context=mem, key_mask=mask)
    assert torch.allclose(fast, explicit, atol=1e-5)

    self_attn = MultiHeadAttention(32, 4, causal=True, alibi=True).eval()
    full, _ = self_attn(torch.cat([x, x], 1))
    for need in (False, True):
        cache = KVCache(1, 16)
        first, _ = self_attn(x, cache=cache, need_weights=need)
        cache.length = 5
        second, _ = self_attn(x[:, :3], cache=cache, offset=5, need_weights=need)  # a chunk of 3 after 5
        assert torch.allclose(torch.cat([first, second], 1), full[:, :8], atol=1e-5)


def test_explicit_weights_are_causal_and_padding_masked() -> None:
    attn = MultiHeadAttention(16, 2, causal=True)
    x = torch.randn(2, 6, 16)
    key_mask = torch.ones(2, 6, dtype=torch.bool)
    key_mask[0, 0] = False  # a padded first key: row 0 of sample 0 sees nothing
    with record_attention(attn) as maps:
        attn(x, key_mask=key_mask)
    (w,) = maps.values()
    assert w.shape == (2, 2, 6, 6)
    future = torch.triu(torch.ones(6, 6, dtype=torch.bool), 1)
    assert torch.all(w[:, :, future] == 0)
    assert torch.all(w[0, :, :, 0] == 0)
    assert torch.allclose(w[1].sum(-1), torch.ones(2, 6), atol=1e-6)
    assert torch.allclose(w[0, :, 1:].sum(-1), torch.ones(2, 5), atol=1e-6)
