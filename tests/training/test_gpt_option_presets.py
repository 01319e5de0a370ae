"""The presets of GPT's attention kinds and mixture of experts (#17): each, scaled down but with
its own option kept, lowers its loss in a short run, says what the option changes when it starts;
the checkpoint reloads with the option."""
from __future__ import annotations

import pytest

from playground.bundle import load_bundle, read_metrics_csv
from playground.config import load_preset
from playground.training.engine import run_training
from tests.training.conftest import tiny_train

SMALL = {"block_size": 32, "n_layer": 1, "n_head": 4, "d_model": 32}
OPTIONS = {"nanogpt-gqa": {"n_kv_heads": 1}, "nanogpt-sliding-window": {"attn_window": 16},
           "nanogpt-moe": {"ffn_experts": 4, "ffn_top_k": 2}}
NOTES = {"nanogpt-gqa": "KV cache", "nanogpt-sliding-window": "at most 16 tokens", "nanogpt-moe": "4 experts per FFN"}


@pytest.mark.parametrize("name", list(OPTIONS))
def test_preset_lowers_its_loss_in_a_short_run(name, workspace, corpus_file):
    preset = load_preset(name)
    assert OPTIONS[name].items() <= preset.model.items()  # the preset sets the option it shows
    preset.model.update(SMALL, **({"d_ff": 64} if "d_ff" in preset.model else {}))
    preset.data.update(corpus=str(corpus_file))
    preset.train.clear()
    preset.train.update(tiny_train(max_steps=12, eval_interval=6))
    result = run_training(preset, workspace, name, device="cpu")
    assert result.status == "done"
    assert NOTES[name] in result.events[0].message  # the start line says what the option changes
    rows = read_metrics_csv(workspace.path("models", name) / "metrics.csv")
    assert rows[-1]["val_loss"] < rows[0]["val_loss"] - 0.1
    config = load_bundle(name, workspace).model.config
    assert all(getattr(config, k) == v for k, v in OPTIONS[name].items())
