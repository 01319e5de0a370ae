"""The reference :func:`attend`: a hand-computed example, and every fast path of
MultiHeadAttention (SDPA with and without KV cache, causal, cross, ALiBi, RoPE, padding, the
GPU is_causal branch, weight dropout from a generator) equal to it within float tolerance."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor

from playground.models import attention
from playground.models.attention import KVCache, MultiHeadAttention, attend
from playground.models.dropout import set_dropout_generator
from playground.models.positional import Rotary, alibi_bias

ATOL = 1e-5


# ----------------------------------------------------------------------------------------
# attend itself, by hand


def _example() -> tuple[Tensor, Tensor, Tensor]:
    """One head, one query q = (1, 0) over keys (1, 0), (0, 1), (1, 1); values (1,2), (3,4), (5,6)."""
    q = torch.tensor([1.0, 0.0]).view(1, 1, 1, 2)  # [B=1,H=1,Tq=1,hd=2]
    k = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]).view(1, 1, 3, 2)  # [1,1,Tk=3,2]
    v = torch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]).view(1, 1, 3, 2)
    return q, k, v


def test_attend_matches_a_hand_computed_example() -> None:
    q, k, v = _example()
    # scores q.k / sqrt(2) = (0.7071, 0, 0.7071); exp = (2.0281, 1, 2.0281), sum 5.0562
    out, w = attend(q, k, v)
    assert torch.allclose(w.flatten(), torch.tensor([0.4011, 0.1978, 0.4011]), atol=1e-4)
    assert torch.allclose(out.flatten(), torch.tensor([3.0, 4.0]), atol=1e-4)  # symmetric weights: the mean
    # key 2 masked: softmax over (0.7071, 0) = (0.6698, 0.3302); 0.6698 (1,2) + 0.3302 (3,4)
    out, w = attend(q, k, v, mask=torch.tensor([True, True, False]))
    assert torch.allclose(w.flatten(), torch.tensor([0.6698, 0.3302, 0.0]), atol=1e-4)
    assert torch.allclose(out.flatten(), torch.tensor([1.6605, 2.6605]), atol=1e-4)
    # a bias of -1 on key 2 (ALiBi-like): scores (0.7071, 0, -0.2929) -> (0.5374, 0.2650, 0.1977)
    out, w = attend(q, k, v, bias=torch.tensor([0.0, 0.0, -1.0]))
    assert torch.allclose(w.flatten(), torch.tensor([0.5374, 0.2650, 0.1977]), atol=1e-4)
    assert torch.allclose(out.flatten(), torch.tensor([2.3206, 3.3206]), atol=1e-4)
    # scale=1: scores (1, 0, 1) -> exp (e, 1, e)
    _, w = attend(q, k, v, scale=1.0)
    e = math.e
    assert torch.allclose(w.flatten(), torch.tensor([e, 1.0, e]) / (2 * e + 1), atol=1e-6)


def test_attend_gives_zero_to_a_query_that_sees_no_key() -> None:
    q, k, v = _example()
    out, w = attend(q, k, v, mask=torch.zeros(3, dtype=torch.bool))
    assert torch.equal(w, torch.zeros_like(w)) and torch.equal(out, torch.zeros_like(out))


# ----------------------------------------------------------------------------------------
# MultiHeadAttention's paths against attend on projections computed by hand


def reference(attn: MultiHeadAttention, x: Tensor, context: Tensor | None = None,
              key_mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """attend() on the whole sequence with attn's weights: (out [B,T,D], weights [B,H,T,K])."""
    B, T, D = x.shape
    H, hd = attn.n_head, attn.head_dim

    def split(t: Tensor) -> Tensor:  # [B,L,D] -> [B,H,L,hd]
        return t.view(B, t.shape[1], H, hd).transpose(1, 2)

    if attn.cross:
        q = split(F.linear(x, attn.q_proj.weight, attn.q_proj.bias))
        k, v = map(split, F.linear(context, attn.kv_proj.weight, attn.kv_proj.bias).chunk(2, dim=-1))
    else:
        q, k, v = map(split, F.linear(x, attn.qkv.weight, attn.qkv.bias).chunk(3, dim=-1))
        if attn.rotary is not None:
            q, k = attn.rotary(q), attn.rotary(k)
    K = k.shape[2]
    mask = torch.ones(T, K, dtype=torch.bool).tril() if attn.causal else None  # [T,K]
    if key_mask is not None:
        mask = key_mask[:, None, None, :] if mask is None else mask & key_mask[:, None, None, :]
    bias = alibi_bias(attn.alibi_slopes, torch.arange(T), torch.arange(K), attn.causal) if attn.alibi else None
    out, w = attend(q, k, v, mask, bias, scale=attn.scale)  # [B,H,T,hd]
    return F.linear(out.transpose(1, 2).reshape(B, T, D), attn.out_proj.weight, attn.out_proj.bias), w


def spy_sdpa(monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    """Record the keyword arguments of every F.scaled_dot_product_attention call."""
    calls: list[dict] = []
    sdpa = F.scaled_dot_product_attention

    def spy(*args: object, **kwargs: object) -> Tensor:
        calls.append(kwargs)
        return sdpa(*args, **kwargs)

    monkeypatch.setattr(F, "scaled_dot_product_attention", spy)
    return calls


def _padding(B: int, K: int) -> Tensor:
    km = torch.ones(B, K, dtype=torch.bool)
    km[1, K - 3:] = False  # sample 1: the last 3 keys are padding
    return km


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("pos", ["none", "rope", "alibi"])
@pytest.mark.parametrize("padded", [False, True])
@pytest.mark.parametrize("scale", [True, False])
def test_self_attention_fast_path_equals_attend(causal: bool, pos: str, padded: bool, scale: bool) -> None:
    g = torch.Generator().manual_seed(0)
    attn = MultiHeadAttention(32, 4, causal=causal, scale=scale, rotary=Rotary(8, 16) if pos == "rope" else None,
                              alibi=pos == "alibi").eval()
    x = torch.randn(3, 9, 32, generator=g)
    km = _padding(3, 9) if padded else None
    expected, expected_w = reference(attn, x, key_mask=km)
    fast, none = attn(x, key_mask=km)
    assert none is None
    assert torch.allclose(fast, expected, atol=ATOL), (fast - expected).abs().max()
    explicit, w = attn(x, key_mask=km, need_weights=True)
    assert torch.allclose(explicit, expected, atol=ATOL) and torch.allclose(w, expected_w, atol=ATOL)


@pytest.mark.parametrize("padded", [False, True])
def test_cross_attention_fast_path_equals_attend_with_and_without_cache(padded: bool) -> None:
    g = torch.Generator().manual_seed(1)
    attn = MultiHeadAttention(32, 4, cross=True).eval()
    x, memory = torch.randn(3, 5, 32, generator=g), torch.randn(3, 7, 32, generator=g)
    km = _padding(3, 7) if padded else None
    expected, _ = reference(attn, x, context=memory, key_mask=km)
    assert torch.allclose(attn(x, context=memory, key_mask=km)[0], expected, atol=ATOL)
    cache = KVCache(1, 0)  # the memory is projected once, then read from the cache
    steps = [attn(x[:, t:t + 1], context=memory if t == 0 else None, key_mask=km, cache=cache)[0] for t in range(5)]
    assert torch.allclose(torch.cat(steps, dim=1), expected, atol=ATOL)


@pytest.mark.parametrize("pos", ["none", "rope", "alibi"])
def test_cached_decoding_equals_attend_on_the_whole_sequence(pos: str) -> None:
    g = torch.Generator().manual_seed(2)
    attn = MultiHeadAttention(32, 4, causal=True, rotary=Rotary(8, 16) if pos == "rope" else None,
                              alibi=pos == "alibi").eval()
    x = torch.randn(2, 10, 32, generator=g)
    expected, _ = reference(attn, x)
    cache = KVCache(1, 16)
    outs = []
    for start, end in ((0, 4), (4, 5), (5, 8), (8, 9), (9, 10)):  # a prompt, single tokens, a chunk of 3
        outs.append(attn(x[:, start:end], cache=cache, offset=start)[0])
        cache.length = end
    assert torch.allclose(torch.cat(outs, dim=1), expected, atol=ATOL)


def test_the_gpu_is_causal_branch_equals_attend(monkeypatch: pytest.MonkeyPatch) -> None:
    """GPUs hand SDPA is_causal=True instead of a mask: run that branch on CPU."""
    calls = spy_sdpa(monkeypatch)
    monkeypatch.setattr(attention, "IS_CAUSAL_DEVICE_TYPES", frozenset({"cpu"}))
    attn = MultiHeadAttention(32, 4, causal=True).eval()
    x = torch.randn(2, 9, 32, generator=torch.Generator().manual_seed(3))
    expected, _ = reference(attn, x)
    assert torch.allclose(attn(x)[0], expected, atol=ATOL)
    assert calls[-1]["is_causal"] and calls[-1]["attn_mask"] is None


def test_training_without_dropout_keeps_the_sdpa_path(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = spy_sdpa(monkeypatch)
    attn = MultiHeadAttention(32, 4, causal=True).train()
    x = torch.randn(2, 9, 32, generator=torch.Generator().manual_seed(4))
    attn(x)
    assert len(calls) == 1 and calls[0].get("dropout_p", 0.0) == 0.0
    MultiHeadAttention(32, 4, causal=True, dropout=0.3).eval()(x)  # evaluation: no dropout, SDPA
    assert len(calls) == 2


def test_weight_dropout_draws_its_mask_from_the_generator(monkeypatch: pytest.MonkeyPatch) -> None:
    """Training with dropout: softmax weights times a mask drawn from the run's generator."""
    sdpa_calls = spy_sdpa(monkeypatch)
    p = 0.25
    attn = MultiHeadAttention(32, 4, causal=True, dropout=p).train()
    set_dropout_generator(attn, torch.Generator().manual_seed(7))
    x = torch.randn(2, 9, 32, generator=torch.Generator().manual_seed(5))
    out, _ = attn(x)
    assert not sdpa_calls  # SDPA's dropout_p would draw from the global RNG

    _, w = reference(attn, x)  # [B,H,T,K]
    keep = torch.empty_like(w).bernoulli_(1 - p, generator=torch.Generator().manual_seed(7))
    B, H, T, hd = 2, 4, 9, 8
    v = F.linear(x, attn.qkv.weight, attn.qkv.bias).chunk(3, dim=-1)[2].view(B, T, H, hd).transpose(1, 2)
    y = (w * keep / (1 - p)) @ v  # [B,H,T,hd]
    expected = attn.out_proj(y.transpose(1, 2).reshape(B, T, H * hd))
    assert torch.allclose(out, expected, atol=ATOL)
    set_dropout_generator(attn, torch.Generator().manual_seed(7))
    assert torch.equal(attn(x)[0], out)  # the same generator state, the same masks
