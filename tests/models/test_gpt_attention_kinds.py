"""GPT's attention kinds (#17): grouped-query attention against multi-head attention with its
key/value heads repeated, sliding-window attention against a band mask built here, and both
through the KV cache, the batched row cache and the recorded attention maps."""
from __future__ import annotations

import pytest
import torch

from playground.errors import ConfigError
from playground.generation.batching import RowKVCache
from playground.models.attention import MultiHeadAttention, attend, record_attention
from playground.models.gpt import GPT, GPTConfig

D, H = 32, 4


def _gpt(**overrides) -> GPT:
    torch.manual_seed(0)
    cfg = dict(vocab_size=40, block_size=24, n_layer=2, n_head=H, d_model=D)
    return GPT(GPTConfig(**{**cfg, **overrides})).eval()


@pytest.mark.parametrize("n_kv", [1, 2])
def test_gqa_equals_mha_with_repeated_key_value_heads(n_kv: int) -> None:
    """An MHA whose K/V projection rows are the GQA ones, each head copied for its query group."""
    torch.manual_seed(1)
    gqa = MultiHeadAttention(D, H, causal=True, n_kv_heads=n_kv).eval()
    mha = MultiHeadAttention(D, H, causal=True).eval()
    hd, group = D // H, H // n_kv
    wq, wk, wv = gqa.qkv.weight.split([D, n_kv * hd, n_kv * hd])  # [D,D], [n_kv*hd,D] x2
    bq, bk, bv = gqa.qkv.bias.split([D, n_kv * hd, n_kv * hd])

    def repeat(w):  # [n_kv*hd, ...] -> [H*hd, ...]: query head h gets key/value head h // group
        return torch.cat([w[(h // group) * hd:(h // group + 1) * hd] for h in range(H)])

    with torch.no_grad():
        mha.qkv.weight.copy_(torch.cat([wq, repeat(wk), repeat(wv)]))
        mha.qkv.bias.copy_(torch.cat([bq, repeat(bk), repeat(bv)]))
        mha.out_proj.load_state_dict(gqa.out_proj.state_dict())
    x = torch.randn(2, 9, D)
    out_g, w_g = gqa(x, need_weights=True)
    out_m, w_m = mha(x, need_weights=True)
    assert torch.allclose(out_g, out_m, atol=1e-6)
    assert w_g.shape == (2, H, 9, 9) and torch.allclose(w_g, w_m, atol=1e-6)  # one map per query head
    assert torch.allclose(gqa(x)[0], out_g, atol=1e-6)  # the SDPA path agrees with the explicit one


@pytest.mark.parametrize("n_kv", [1, 2])
def test_gqa_cache_holds_n_kv_heads_and_matches_full_recomputation(n_kv: int) -> None:
    model, mha = _gpt(n_kv_heads=n_kv), _gpt()
    idx = torch.randint(0, 40, (2, 12))
    caches = []
    for m in (model, mha):
        cache = m.new_cache()
        steps = [m(idx[:, :5], cache)] + [m(idx[:, t:t + 1], cache) for t in range(5, 12)]
        assert torch.allclose(torch.cat(steps, 1), m(idx), atol=1e-5)
        caches.append(cache)
    size = [sum(layer.k.numel() + layer.v.numel() for layer in c.layers) for c in caches]
    assert size[0] * H == size[1] * n_kv  # the cache is n_kv / n_head of multi-head attention's
    assert sum(p.numel() for p in model.parameters()) < sum(p.numel() for p in mha.parameters())


def _band(T: int, W: int) -> torch.Tensor:
    """Bool [T,T]: query i sees keys j with i - W < j <= i (built without the model's helper)."""
    return torch.tensor([[i - W < j <= i for j in range(T)] for i in range(T)])


@pytest.mark.parametrize("W", [1, 3])
def test_sliding_window_equals_full_attention_with_a_band_mask(W: int) -> None:
    torch.manual_seed(2)
    attn = MultiHeadAttention(D, H, causal=True, window=W).eval()
    x = torch.randn(2, 10, D)
    q, k, v = attn.qkv(x).view(2, 10, 3, H, D // H).permute(2, 0, 3, 1, 4)  # [B,H,T,hd] each
    ref, ref_w = attend(q, k, v, _band(10, W))
    out, weights = attn(x, need_weights=True)
    assert torch.allclose(out, attn.out_proj(ref.transpose(1, 2).reshape(2, 10, D)), atol=1e-6)
    assert torch.allclose(weights, ref_w, atol=1e-6)
    assert (weights[..., ~_band(10, W)] == 0).all()
    assert torch.allclose(attn(x)[0], out, atol=1e-6)  # SDPA path


def test_window_at_least_the_context_is_full_attention() -> None:
    idx = torch.randint(0, 40, (2, 24))
    assert torch.allclose(_gpt(attn_window=24)(idx), _gpt()(idx), atol=1e-6)
    assert not torch.allclose(_gpt(attn_window=4)(idx), _gpt()(idx), atol=1e-3)


@pytest.mark.parametrize("pos", ["learned", "rope", "alibi"])
def test_sliding_window_and_gqa_with_the_cache_equal_no_cache(pos: str) -> None:
    model = _gpt(attn_window=4, n_kv_heads=2, pos_encoding=pos)
    idx = torch.randint(0, 40, (2, 14))
    cache = model.new_cache()
    steps = [model(idx[:, :6], cache), model(idx[:, 6:9], cache)]
    steps += [model(idx[:, t:t + 1], cache) for t in range(9, 14)]
    assert torch.allclose(torch.cat(steps, 1), model(idx), atol=1e-5)


def test_recorded_maps_show_the_window_per_query_head() -> None:
    model = _gpt(attn_window=3, n_kv_heads=1)
    with record_attention(model) as maps:
        model(torch.randint(0, 40, (1, 8)))
    weights = maps["blocks.0.attn"]
    assert weights.shape == (1, H, 8, 8)
    assert (weights[..., ~_band(8, 3)] == 0).all()


@pytest.mark.parametrize("options", [dict(n_kv_heads=2), dict(attn_window=5), dict(n_kv_heads=1, attn_window=3)])
def test_batched_rows_equal_single_forward(options: dict) -> None:
    """The row cache stores n_kv heads; each row's window is masked at its own position."""
    model = _gpt(**options)
    assert model.rows_batchable
    lengths = [3, 11, 7]
    seqs = [torch.randint(0, 40, (1, n + 1)) for n in lengths]
    cache = RowKVCache(2, 24, model.config.kv_heads, D // H, capacity=4, dtype=torch.float32,
                       device=torch.device("cpu"))
    with torch.inference_mode():
        for s, n in zip(seqs, lengths):
            kv = model.new_cache()
            model(s[:, :n], cache=kv)
            cache.load(cache.add_rows(1), kv, 0, 1, n)
        batched = model.decode_rows(torch.cat([s[:, -1:] for s in seqs]), cache)  # [3,V]
        single = torch.cat([model(s)[:, -1] for s in seqs])
    assert torch.allclose(batched, single, atol=1e-4)


@pytest.mark.parametrize("bad", [dict(n_kv_heads=3), dict(n_kv_heads=-1), dict(attn_window=-2)])
def test_bad_options_are_config_errors(bad: dict) -> None:
    with pytest.raises(ConfigError):
        GPTConfig(n_head=4, d_model=32, **bad)
