"""The Train tab's fields for GPT's attention kinds and mixture of experts: shown for GPT only,
filled from a preset, written back into its TOML."""
from __future__ import annotations

from playground.config import parse_preset
from playground.ui import train_tab as tt

KEYS = ("model.n_kv_heads", "model.attn_window", "model.ffn_experts", "model.ffn_top_k")


def _field(key: str) -> int:
    return [f.key for f in tt.FORM_FIELDS].index(key)


def test_fields_show_for_gpt_with_the_presets_values():
    form = tt.preset_selected("nanogpt-moe")[3:]
    assert form[_field("model.ffn_experts")] == {"__type__": "update", "value": 4, "visible": True}
    assert form[_field("model.n_kv_heads")]["value"] == 0  # absent: the default, multi-head
    assert all(tt.FORM_FIELDS[_field(k)].info for k in KEYS)
    vit = tt.preset_selected("vit-digits")[3:]
    assert not any(vit[_field(k)]["visible"] for k in KEYS)


def test_form_edits_write_the_options():
    toml = tt.preset_selected("nanogpt-cpu-tiny")[0]
    for key, value in zip(KEYS, (2.0, 16.0, 4.0, 1.0)):
        toml = tt.set_field(key, toml, value)
    model = parse_preset(toml).model
    assert (model["n_kv_heads"], model["attn_window"], model["ffn_experts"], model["ffn_top_k"]) == (2, 16, 4, 1)
