"""The block-parts lesson's KV-cache table: a full multi-head cache beside grouped-query and windowed ones."""
from __future__ import annotations

from playground.lessons.block_parts import KV_FACTOR, compute

ARGS = {"vocab": 65, "d_model": 128, "n_head": 4, "n_layer": 4, "d_ff": 512, "block_size": 64, "bias": True,
        "ffn": "gelu", "norm_placement": "pre", "depth": 2, "init": "gpt2", "max_length": "128"}


def test_kv_cache_table_of_a_windowed_and_a_grouped_query_preset():
    window = compute("nanogpt-sliding-window", **ARGS)  # 4 layers, d 128, block 64, window 16
    T = KV_FACTOR * 64
    full = 2 * 4 * T * 128 * 4  # K and V, layers, positions, d_model, fp32
    assert [(r["positions"], r["bytes"]) for r in window.numbers["kv_cache"]] == [(T, full), (16, full * 16 // T)]
    assert any(f"{full:,} bytes" in n and "16x less" in n for n in window.notes)
    gqa = compute("nanogpt-gqa", **ARGS)  # 4 query heads share 1 key/value head
    assert [r["bytes"] for r in gqa.numbers["kv_cache"]] == [full, full // 4]
    plain = compute("nanogpt-cpu-tiny", **ARGS)
    assert len(plain.numbers["kv_cache"]) == 1
    assert any(f"Decoding {T:,} tokens" in n and "less" not in n for n in plain.notes)


def test_no_kv_table_for_an_encoder():
    assert "kv_cache" not in compute("checkpoint: vit-digits", **ARGS).numbers
