"""Loss per position past the trained context on a user's checkpoint: the function, its refusals,
the CLI flag and command paths, the Generate tab's view and its KV-cache line."""
from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest
import torch
import torch.nn.functional as F

from playground.__main__ import main
from playground.analysis.length import check_length_options, checkpoint_position_loss
from playground.bundle import load_bundle, save_bundle
from playground.charts.positions import position_loss_chart
from playground.config import Preset
from playground.errors import ConfigError, TooBigError
from playground.families.gpt.sizes import GPTSizes, kv_cache_note
from playground.generation.api import GenerateRequest, generate
from playground.models.gpt import GPT, GPTConfig
from playground.training.engine import run_training
from playground.ui.generate_tab import Env, position_loss_view, select_model
from playground.workspace import Workspace

BLOCK = 8
TRAIN = {"max_steps": 2, "batch_size": 2, "eval_interval": 2, "eval_iters": 1, "warmup_steps": 1, "log_interval": 1,
         "save_optimizer": False, "preview": False}


@pytest.fixture(scope="module")
def ws(tmp_path_factory) -> Workspace:
    """Two tiny trainer-written GPTs on one corpus: RoPE with a 3-token window, and learned positions."""
    root = tmp_path_factory.mktemp("length-ws")
    corpus = root / "corpus.txt"
    corpus.write_text("the quick brown fox jumps over the lazy dog. " * 40, encoding="utf-8")
    workspace = Workspace(root / "ws")
    model = {"block_size": BLOCK, "n_layer": 1, "n_head": 2, "d_model": 16}
    torch.manual_seed(0)
    for name, extra in (("rope", {"pos_encoding": "rope", "attn_window": 3}), ("learned", {"pos_encoding": "learned"})):
        run_training(Preset(name, "gpt", model={**model, **extra}, data={"corpus": str(corpus), "tokenizer": "char"},
                            train=dict(TRAIN)), workspace, name, device="cpu")
    return workspace


def _val_tokens(bundle, workspace):
    from playground.analysis.experiments.data import prepare_data

    return prepare_data(bundle, workspace)[1].payload.val


def test_loss_per_position_out_to_4x_matches_prefix_by_prefix_losses(ws):
    bundle = load_bundle("rope", ws)
    result = checkpoint_position_loss(bundle, factor=4, windows=1, workspace=ws)  # one window: from token 0
    assert (result.trained, result.positions, len(result.loss)) == (BLOCK, 4 * BLOCK, 4 * BLOCK)
    val = _val_tokens(bundle, ws)
    with torch.no_grad():  # independent: the loss at p reads the prefix 0..p alone (causal), past block_size too
        for p in (0, BLOCK - 1, BLOCK, 3 * BLOCK + 5, 4 * BLOCK - 1):
            logits = bundle.model.forward_beyond(val[None, : p + 1])[0, -1]
            expected = float(F.cross_entropy(logits[None], val[p + 1 : p + 2]))
            assert result.loss[p] == pytest.approx(expected, abs=2e-4)
    numbers = result.numbers()
    inside = sum(result.loss[BLOCK // 2 : BLOCK]) / (BLOCK - BLOCK // 2)
    beyond = sum(result.loss[BLOCK:]) / (3 * BLOCK)
    assert numbers["inside"] == pytest.approx(inside, abs=1e-4) and numbers["beyond"] == pytest.approx(beyond, abs=1e-4)
    assert "past it" in result.summary()
    assert result.table()["trained"].sum() == BLOCK
    frame = result.frame(smooth=4)
    assert len(frame) == BLOCK and list(frame.columns) == ["x", "y", "series"]
    spec = position_loss_chart(result).to_dict()
    assert any(layer.get("mark", {}).get("type") == "rule" for layer in spec.get("layer", []))


def test_learned_positions_refuse_past_the_block_and_measure_inside_it(ws):
    bundle = load_bundle("learned", ws)
    with pytest.raises(ConfigError, match=r"learned positions.*none after.*factor 1"):
        checkpoint_position_loss(bundle, factor=4, windows=2, workspace=ws)
    inside = checkpoint_position_loss(bundle, factor=1, windows=2, workspace=ws)
    assert inside.positions == BLOCK and len(inside.loss) == BLOCK and "past it" not in inside.summary()


@pytest.mark.parametrize("factor,windows,error", [(0, 4, ConfigError), (9, 4, ConfigError), (math.nan, 4, ConfigError),
                                                  (math.inf, 4, ConfigError), (2, 0, ConfigError), (True, 4, ConfigError),
                                                  (8, 256, TooBigError)])
def test_length_options_are_checked_before_computing(factor, windows, error):
    with pytest.raises(error):
        check_length_options(factor, windows, 1024)


def test_cli_context_extend_and_refusal(ws, capsys):
    base = ["--workspace", str(ws.root), "generate"]
    assert main([*base, "rope", "--prompt", "the", "--max-new-tokens", "30", "--temperature", "0",
                 "--context", "extend", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["context"] == "extend" and len(out["samples"][0]["tokens"]) == 30
    assert main([*base, "learned", "--prompt", "the", "--max-new-tokens", "3", "--context", "extend"]) != 0
    assert "'window' mode" in capsys.readouterr().err


def test_generate_view_shows_the_context_mode_and_the_cache_saved(ws):
    env = Env(ws, "cpu", None)
    view = select_model(env, "rope")
    assert view.context["visible"] is True and "3 positions" in view.context["info"]
    assert view.length_box["visible"] is True
    assert "learned table" in select_model(env, "learned").context["info"]
    bundle = load_bundle("rope", ws)
    done = generate(bundle, GenerateRequest(prompt="the", max_new_tokens=20, context="extend", seed=1))
    note = done.info["kv_cache"]
    assert note == kv_cache_note(bundle.model_config, 23, 1) and "windowed, last 3 positions" in note
    assert done.info["kv_cache_bytes"] == 2 * 1 * 3 * 16 * 4  # K and V, 1 layer, W 3, d 16, fp32: what the ring holds
    chart, summary = position_loss_view(env, "rope", 2, 2)
    assert chart is not None and f"{BLOCK}..{2 * BLOCK - 1}" in summary
    with pytest.raises(ConfigError):
        position_loss_view(env, "learned", 4, 2)


def test_kv_cache_table_full_grouped_and_windowed():
    c = GPTConfig(n_layer=2, n_head=4, d_model=64, block_size=32, n_kv_heads=2, attn_window=8)
    rows = GPTSizes().kv_cache_table(c, 100, batch=3)
    per_head = 2 * 2 * 3 * 16 * 4  # K and V, 2 layers, 3 sequences, head size 16, fp32: bytes per position per head
    assert [r["bytes"] for r in rows] == [per_head * 4 * 100, per_head * 2 * 100, per_head * 2 * 8]
    assert GPTSizes().kv_cache_table(GPTConfig(), 50) == [
        {"cache": "full, multi-head", "positions": 50, "kv_heads": 4, "bytes": 2 * 4 * 50 * 128 * 4}]


def test_cli_positions_command(ws, capsys, tmp_path):
    base = ["--workspace", str(ws.root), "positions"]
    csv = tmp_path / "loss.csv"
    assert main([*base, "rope", "--factor", "2", "--windows", "2", "--json", "--csv", str(csv)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["trained"] == BLOCK and out["positions"] == 2 * BLOCK and len(out["loss"]) == 2 * BLOCK
    assert out["loss"] == checkpoint_position_loss(load_bundle("rope", ws), 2, 2, ws).loss  # the same function
    assert len(csv.read_text().splitlines()) == 2 * BLOCK + 1
    assert main([*base, "learned"]) != 0
    assert "learned positions" in capsys.readouterr().err


def test_window_mode_cache_note_alone_and_batched(ws):
    """'window': a cache of block_size positions, a ring of 3 when run alone; batched rows are not windowed."""
    from playground.generation.batching import close_workers

    bundle = load_bundle("rope", ws)  # RoPE: runs alone even with batching on
    alone = generate(bundle, GenerateRequest(prompt="the", max_new_tokens=4, seed=1))
    assert alone.info["kv_cache"] == kv_cache_note(bundle.model_config, BLOCK, 1)
    assert alone.info["kv_cache_bytes"] == 2 * 1 * 3 * 16 * 4 and "last 3 positions" in alone.info["kv_cache"]
    learned = load_bundle("learned", ws)  # no window: the full cache of block_size positions either way
    try:
        batched = generate(learned, GenerateRequest(prompt="the", max_new_tokens=4, seed=1))
    finally:
        close_workers()
    assert batched.info["kv_cache"] == f"KV cache {2 * 1 * BLOCK * 16 * 4 / 1024:,.1f} KiB for {BLOCK} positions"
    cfg = replace(learned.model_config, attn_window=3)  # learned positions batch; their rows hold block_size
    save_bundle(ws, "learned-window", GPT(cfg), "gpt", cfg, tokenizer=learned.tokenizer)
    try:
        windowed = generate(load_bundle("learned-window", ws), GenerateRequest(prompt="the", max_new_tokens=4, seed=1))
    finally:
        close_workers()
    assert "kv_cache_bytes" not in windowed.info and windowed.info["kv_cache"] == batched.info["kv_cache"]
