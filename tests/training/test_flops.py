"""Model FLOPs utilisation: the GPT's FLOPs per token against a count from the built module, the
peak table, and the engine's step events carrying MFU = throughput x FLOPs / peak."""
from __future__ import annotations

import pytest
import torch

from playground.bundle import load_bundle
from playground.families import build_model, get_family
from playground.models.gpt import GPTConfig
from playground.training import engine as engine_module
from playground.training.engine import run_training
from playground.training.flops import matmul_precision, mfu, peak_flops
from playground.workspace import Workspace
from tests.training.conftest import tiny_preset


@pytest.mark.parametrize("tie", [True, False])
def test_gpt_flops_per_token_is_palms_estimate_over_the_built_model(tie: bool) -> None:
    config = GPTConfig(vocab_size=65, block_size=256, n_layer=6, n_head=6, d_model=384, tie_embeddings=tie)
    model = build_model("gpt", config)
    # every parameter a matrix product touches: all of them but the position table and, untied, the
    # token embedding (a lookup); tied weights are counted once
    lookups = model.pos_emb.weight.numel() + (0 if tie else model.tok_emb.weight.numel())
    n_matmul = sum(p.numel() for p in model.parameters()) - lookups
    expected = 6 * n_matmul + 12 * 6 * 384 * 256
    assert get_family("gpt").sizes.train_flops_per_unit(config) == expected


def test_nanogpt_shakespeare_char_flops_match_nanogpts_own_estimate() -> None:
    """nanoGPT's estimate_mfu for its Shakespeare-char model (bias off, vocab 65): N = 10.65M
    without the position table, 6N + 12 L H Q T per token."""
    config = GPTConfig(vocab_size=65, block_size=256, n_layer=6, n_head=6, d_model=384, bias=False)
    n = 65 * 384 + 6 * (2 * 384 + 4 * 384 * 384 + 8 * 384 * 384) + 384  # wte, blocks (2 LN, attn, MLP), ln_f
    assert round(n / 1e6, 2) == 10.65  # nanoGPT prints "number of parameters: 10.65M"
    assert get_family("gpt").sizes.train_flops_per_unit(config) == 6 * n + 12 * 6 * 384 * 256


def test_other_families_have_no_estimate_yet() -> None:
    from playground.models.vit import ViTConfig

    assert get_family("vit").sizes.train_flops_per_unit(ViTConfig()) is None


def test_peak_table_and_mfu() -> None:
    assert peak_flops("NVIDIA H100 80GB HBM3", "bf16") == 989.4e12
    assert peak_flops("NVIDIA H100 PCIe", "bf16") == 756e12  # the PCIe card is matched before the SXM one
    assert peak_flops("NVIDIA H200", "tf32") == 494.7e12
    assert peak_flops("NVIDIA A100-SXM4-40GB", "bf16") == 312e12
    assert peak_flops("NVIDIA GeForce GTX 1080", "bf16") is None
    assert matmul_precision(torch.bfloat16, True) == "bf16"
    assert matmul_precision(None, True) == "tf32" and matmul_precision(None, False) == "fp32"
    assert mfu(1e6, 60_000_000, 312e12) == pytest.approx(1e6 * 6e7 / 312e12)
    assert mfu(None, 1, 1.0) is None and mfu(1.0, None, 1.0) is None and mfu(1.0, 1, None) is None


def test_cpu_runs_report_no_mfu(tmp_path, corpus_file) -> None:
    result = run_training(tiny_preset("gpt", corpus_file, max_steps=3, eval_interval=3, preview=False),
                          Workspace(tmp_path), "cpu-run", device="cpu")
    assert [e.mfu for e in result.events if e.kind == "step"] == [None, None, None]


def test_step_events_carry_throughput_times_flops_over_peak(tmp_path, corpus_file, monkeypatch) -> None:
    """The engine's wiring, on CPU: with a made-up peak, every step's MFU is its throughput x the
    family's FLOPs per token / that peak."""
    peak = 1e12
    monkeypatch.setattr(engine_module, "device_peak", lambda device, dtype, tf32: peak)
    preset = tiny_preset("gpt", corpus_file, max_steps=3, eval_interval=3, preview=False)
    result = run_training(preset, Workspace(tmp_path), "mfu-run", device="cpu")
    steps = [e for e in result.events if e.kind in ("step", "eval")]
    config = load_bundle("mfu-run", Workspace(tmp_path)).model.config  # the run's own GPTConfig
    flops = get_family("gpt").sizes.train_flops_per_unit(config)
    assert steps and all(e.mfu == pytest.approx(e.throughput * flops / peak) for e in steps)
