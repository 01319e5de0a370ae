"""Scoped dropout: a run's masks come from its own stream through torch's default generator, so
attention can drop inside the fused kernel and torch.compile traces the step without a break."""
from __future__ import annotations

import threading

import pytest
import torch
import torch.nn.functional as F

from playground.models.dropout import drawing_from, set_dropout_generator
from playground.models.gpt import GPT, GPTConfig
from playground.training.device import device_caps
from playground.training.engine import scoped_dropout

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU"))]
CFG = GPTConfig(vocab_size=17, block_size=16, n_layer=2, n_head=2, d_model=32, dropout=0.2, attn_dropout=0.2)


def _model(scoped: bool, seed: int, device: str = "cpu") -> tuple[GPT, torch.Generator]:
    torch.manual_seed(0)  # the same weights for every model of these tests
    model = GPT(CFG).train().to(device)
    run = torch.Generator(device=device).manual_seed(seed)
    set_dropout_generator(model, run, scoped=scoped)
    return model, run


def _losses(model: GPT, run: torch.Generator, steps: int, after_each=lambda: None) -> list[float]:
    """`steps` SGD steps on fixed data, each drawing its masks inside `drawing_from(run)`."""
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.arange(64, device=run.device).remainder(17).view(4, 16)
    out = []
    for _ in range(steps):
        with drawing_from(run):
            loss = F.cross_entropy(model(x).flatten(0, 1), x.roll(-1, 1).flatten())
            loss.backward()
        opt.step()
        opt.zero_grad()
        out.append(loss.item())
        after_each()
    return out


def test_inside_the_block_the_default_generator_continues_the_runs_stream():
    run = torch.Generator().manual_seed(5)
    twin = torch.Generator().manual_seed(5)
    torch.manual_seed(123)
    outside = torch.get_rng_state()
    with drawing_from(run):
        inside = torch.rand(6)
    assert torch.equal(inside, torch.rand(6, generator=twin))  # the run's own draws
    assert torch.equal(torch.get_rng_state(), outside)  # the process's stream is untouched
    with drawing_from(run):
        assert torch.equal(torch.rand(3), torch.rand(3, generator=twin))  # and the run's goes on


def test_scoped_attention_drops_inside_sdpa_with_the_runs_masks():
    model, run = _model(scoped=True, seed=9)
    attn = model.blocks[0].attn
    q = torch.randn(2, 2, 16, 16)
    assert attn._kernel(q, q, None, need_weights=False)[0] is False  # fused, not the explicit path
    unscoped, _ = _model(scoped=False, seed=9)
    assert unscoped.blocks[0].attn._kernel(q, q, None, need_weights=False)[0] is True
    x = torch.randn(2, 16, 32)
    with drawing_from(run):
        y, _ = attn(x)  # [2,16,32]
    twin = torch.Generator().manual_seed(9)  # the same draw through the library's kernel, by hand
    qkv = attn._project(x, None, None, 0)
    with drawing_from(twin):
        causal = torch.ones(16, 16, dtype=torch.bool).tril()
        ref = F.scaled_dot_product_attention(*qkv, attn_mask=causal, dropout_p=0.2)  # [2,2,16,16]
    assert torch.allclose(y, attn._merge_heads(ref), atol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_two_runs_in_two_threads_each_get_their_solo_curve(device):
    solo = {seed: _losses(*_model(True, seed, device), steps=6) for seed in (1, 2)}
    assert solo[1] != solo[2]  # the masks differ, so the curves do
    turns = threading.Barrier(2)  # every step of one run sits between two of the other's
    got: dict[int, list[float]] = {}
    models = {seed: _model(True, seed, device) for seed in (1, 2)}  # built here: torch's init draws from the global RNG

    def go(seed: int) -> None:
        got[seed] = _losses(*models[seed], steps=6, after_each=lambda: turns.wait(timeout=120))

    threads = [threading.Thread(target=go, args=(s,)) for s in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == solo


@pytest.mark.slow  # torch.compile of a training step (about 4 s)
def test_a_scoped_training_step_compiles_without_graph_breaks():
    def step(model: GPT, x: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(model(x).flatten(0, 1), x.roll(-1, 1).flatten())

    x = torch.arange(32).remainder(17).view(2, 16)
    scoped, run = _model(scoped=True, seed=3)
    with drawing_from(run):
        explained = torch._dynamo.explain(step)(scoped, x)
    assert explained.graph_break_count == 0 and explained.graph_count == 1
    own, _ = _model(scoped=False, seed=3)  # a Generator argument breaks the graph at every dropout
    assert torch._dynamo.explain(step)(own, x).graph_break_count > 0


def test_the_engine_scopes_dropout_on_a_gpu_and_under_compile_only():
    assert not scoped_dropout(device_caps("cpu"))
    assert scoped_dropout(device_caps("cpu", compile=True, compile_supported=True))
    assert scoped_dropout(device_caps("cuda", bf16_supported=True, fused_supported=True))
