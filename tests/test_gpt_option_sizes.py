"""GPT's size estimates count grouped-query attention's smaller key/value projections and cache
and a mixture's experts, against the built model."""
from __future__ import annotations

import pytest
import torch

from playground import limits
from playground.families.gpt.sizes import GPTSizes
from playground.models.gpt import GPT, GPTConfig

OPTIONS = [dict(n_kv_heads=1), dict(n_kv_heads=2, bias=False), dict(ffn_experts=4, ffn_top_k=2),
           dict(ffn_experts=3, ffn_top_k=1, ffn="swiglu", n_kv_heads=2, attn_window=4)]


def _config(**options) -> GPTConfig:
    return GPTConfig(vocab_size=30, block_size=16, n_layer=2, n_head=4, d_model=32, **options)


@pytest.mark.parametrize("options", OPTIONS)
def test_parameter_count_matches_the_built_model(options: dict) -> None:
    config = _config(**options)
    assert limits.count_parameters("gpt", config) == sum(p.numel() for p in GPT(config).parameters())


@pytest.mark.parametrize("options", OPTIONS)
def test_kv_cache_estimate_matches_a_full_cache(options: dict) -> None:
    config = _config(**options)
    model = GPT(config).eval()
    cache = model.new_cache()
    model(torch.randint(0, 30, (3, 16)), cache)
    held = sum(layer.k.numel() + layer.v.numel() for layer in cache.layers)
    assert GPTSizes().kv_cache_floats(config, batch=3) == held
    mha = GPTSizes().kv_cache_floats(_config(), batch=3)
    assert held * config.n_head == mha * config.kv_heads


def test_flops_count_only_the_experts_a_token_runs() -> None:
    config = _config(ffn_experts=4, ffn_top_k=1)
    model = GPT(config)
    expert = sum(p.numel() for p in model.blocks[0].mlp.experts[0].parameters())
    active = sum(p.numel() for p in model.parameters()) - model.pos_emb.weight.numel() - 2 * 3 * expert
    assert GPTSizes().train_flops_parts(config)["weights"] == 6 * active
    windowed = GPTSizes().train_flops_parts(_config(attn_window=4))["attention scores"]
    assert windowed * 4 == GPTSizes().train_flops_parts(_config())["attention scores"]


def test_notes_name_the_saved_cache_the_window_and_the_active_share() -> None:
    gqa, window, moe = (GPTSizes().notes(_config(**o)) for o in (dict(n_kv_heads=1), dict(attn_window=4),
                                                                dict(ffn_experts=4, ffn_top_k=1)))
    assert "KV cache 2 KiB" in gqa[0] and "1/4 of multi-head" in gqa[0]  # k, v x 2 layers x 16 x 8 floats x 4 B
    assert "at most 4 tokens" in window[0]
    assert "4 experts per FFN, 1 per token" in moe[0]
    assert GPTSizes().notes(_config()) == []
