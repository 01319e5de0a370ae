"""`python -m playground bench quality` end to end on tiny settings (no threshold, no timing asserted),
and the nanoGPT re-implementation held to nanoGPT's recipe."""
from __future__ import annotations

import math
import re

import torch

from playground.__main__ import main
from playground.bench.quality import RECIPE, nanogpt_classes, recipe_lr
from playground.models.gpt import GPT, GPTConfig
from playground.training.schedules import cosine_lr


def test_bench_quality_runs_both_interleaved_and_prints_each(capsys):
    threads = torch.get_num_threads()
    try:
        code = main(["bench", "quality", "--max-steps", "4", "--eval-interval", "2", "--eval-iters", "1",
                     "--threshold", "0", "--threads", "1", "--set", "model.n_layer=1"])
    finally:
        torch.set_num_threads(threads)
    out = capsys.readouterr().out
    assert code == 0
    rounds = re.findall(r"^\s+(nanoGPT CPU recipe|ours nanogpt-cpu-fast)\s+step\s+(\d+)", out, re.M)
    # two rounds, the first of each alternating: peer, ours, ours, peer
    peer, ours = "nanoGPT CPU recipe", "ours nanogpt-cpu-fast"
    assert rounds == [(peer, "2"), (ours, "2"), (ours, "4"), (peer, "4")]
    assert "ours (nanogpt-cpu-fast: 1L" in out
    assert "did not reach 0.0" in out


def test_recipe_schedule_is_nanogpts_cosine():
    for it in (0, 50, 99, 100, 1000, 1999, 2000):
        assert math.isclose(recipe_lr(it), cosine_lr(it, 1e-3, 1e-4, 100, 2000), rel_tol=1e-12)
    assert recipe_lr(2500) == 1e-4  # past lr_decay_iters: min_lr


def test_reimplemented_nanogpt_matches_our_gpt_of_the_same_shape():
    """Same parameter count and, with the same weights, the same logits as our GPT with
    nanoGPT's choices (bias=False, exact GELU, learned positions, tied head)."""
    GPTRef, RefConfig = nanogpt_classes()
    ref = GPTRef(RefConfig(block_size=RECIPE["block_size"], vocab_size=65, n_layer=2, n_head=4, n_embd=32,
                           dropout=0.0, bias=False)).eval()
    ours = GPT(GPTConfig(vocab_size=65, block_size=RECIPE["block_size"], n_layer=2, n_head=4, d_model=32,
                         bias=False, ffn="gelu_exact")).eval()
    assert sum(p.numel() for p in ref.parameters()) == ours.num_parameters()
    sd = {"tok_emb.weight": ref.transformer.wte.weight, "pos_emb.weight": ref.transformer.wpe.weight,
          "ln_f.weight": ref.transformer.ln_f.weight}
    for i, b in enumerate(ref.transformer.h):
        sd |= {f"blocks.{i}.ln1.weight": b.ln_1.weight, f"blocks.{i}.ln2.weight": b.ln_2.weight,
               f"blocks.{i}.attn.qkv.weight": b.attn.c_attn.weight,
               f"blocks.{i}.attn.out_proj.weight": b.attn.c_proj.weight,
               f"blocks.{i}.mlp.fc.weight": b.mlp.c_fc.weight, f"blocks.{i}.mlp.proj.weight": b.mlp.c_proj.weight}
    ours.load_state_dict({k: v.detach().clone() for k, v in sd.items()} | {"lm_head.weight": sd["tok_emb.weight"]},
                         strict=True)
    idx = torch.randint(0, 65, (2, 16))
    logits, loss = ref(idx, idx)
    assert torch.allclose(ours(idx), logits, atol=1e-5)
    # the init is nanoGPT's: residual projections at 0.02 / sqrt(2 n_layer)
    assert abs(ref.transformer.h[0].attn.c_proj.weight.std().item() - 0.02 / math.sqrt(4)) < 3e-3


def test_nanogpt_checkout_model_py_is_the_peer_when_given(tmp_path, capsys):
    (tmp_path / "model.py").write_text(
        "from playground.bench.quality import _nanogpt_classes\nGPT, GPTConfig = _nanogpt_classes()\n"
        "LOADED_FROM_CHECKOUT = True\n", encoding="utf-8")
    threads = torch.get_num_threads()
    try:
        code = main(["bench", "quality", "--only", "peer", "--nanogpt", str(tmp_path), "--max-steps", "2",
                     "--eval-interval", "2", "--eval-iters", "1", "--threshold", "0", "--threads", "1"])
    finally:
        torch.set_num_threads(threads)
    out = capsys.readouterr().out
    assert code == 0
    assert f"nanoGPT CPU recipe ({tmp_path}/model.py)" in out
    assert "ratio" not in out  # one contender: nothing to compare


def test_gpu_recipe_is_nanogpts_shakespeare_char_config():
    """config/train_shakespeare_char.py over train.py's defaults (bias off, bf16, compile)."""
    from playground.bench.quality import GPU_RECIPE

    r = GPU_RECIPE
    assert (r["n_layer"], r["n_head"], r["n_embd"], r["block_size"], r["batch_size"]) == (6, 6, 384, 256, 64)
    assert (r["lr"], r["min_lr"], r["max_iters"], r["warmup"], r["betas"]) == (1e-3, 1e-4, 5000, 100, (0.9, 0.99))
    assert (r["dropout"], r["eval_interval"], r["eval_iters"], r["log_interval"]) == (0.2, 250, 200, 10)
    assert r["compile"] and r["threshold"] == 1.47 and r["preset"] == "nanogpt-shakespeare-char"
    assert recipe_lr(2549, r) == cosine_lr(2549, 1e-3, 1e-4, 100, 5000)


def test_gpu_recipe_races_on_a_cpu_when_shrunk(capsys, monkeypatch):
    """The GPU race's code path (peer on the recipe, ours on nanogpt-shakespeare-char), shrunk to run
    on this CPU: no compile off CUDA, MFU left out where the device has no known peak."""
    from playground.bench import quality

    small = {**quality.GPU_RECIPE, "n_layer": 1, "n_head": 2, "n_embd": 32, "block_size": 16, "batch_size": 4}
    monkeypatch.setitem(quality.RECIPES, "gpu", small)
    threads = torch.get_num_threads()
    try:
        code = main(["bench", "quality", "--recipe", "gpu", "--device", "cpu", "--max-steps", "2",
                     "--eval-interval", "2", "--eval-iters", "1", "--threshold", "0", "--threads", "1",
                     "--set", "model.n_layer=1", "--set", "model.n_head=2", "--set", "model.d_model=32",
                     "--set", "model.block_size=16", "--set", "train.batch_size=4"])
    finally:
        torch.set_num_threads(threads)
    out = capsys.readouterr().out
    assert code == 0
    assert "nanoGPT GPU recipe (re-implemented), cpu (fp32" in out and "torch.compile" not in out
    assert "ours (nanogpt-shakespeare-char: 1L 2H d32 ctx 16, batch 4" in out
    assert "fixed batches of 4 x 16 characters" in out and "MFU" not in out


def test_the_whole_validation_split_is_scored_once_per_character():
    """The default evaluation predicts every validation character exactly once, and its token-weighted
    mean equals one cross-entropy over the whole split (an independent computation)."""
    from playground.bench.quality import split_windows, token_mean

    val = torch.randint(0, 7, (1000,), generator=torch.Generator().manual_seed(0))
    batches = split_windows(val, 64, windows_per_batch=5)
    assert torch.equal(torch.cat([y.flatten() for _, y in batches]), val[1:])
    assert torch.equal(torch.cat([x.flatten() for x, _ in batches]), val[:-1])
    assert [tuple(x.shape) for x, _ in batches][-2:] == [(5, 64), (1, 999 - 15 * 64)]

    logits = torch.randn(7, 7, generator=torch.Generator().manual_seed(1))  # a bigram "model"
    losses = [(torch.nn.functional.cross_entropy(logits[x].flatten(0, 1), y.flatten()).item(), y.numel())
              for x, y in batches]
    whole = torch.nn.functional.cross_entropy(logits[val[:-1]].double(), val[1:]).item()
    assert math.isclose(token_mean(losses), whole, rel_tol=1e-6)
    assert RECIPE["eval_iters"] == 0  # the CPU race is judged on the whole split by default
