"""train.optimizer = muon: Muon on the hidden matrices, AdamW on the rest, one optimizer to the engine."""
from __future__ import annotations

import threading

import pytest
import torch
from torch import nn

from playground.models.gpt import GPT, GPTConfig
from playground.training.checkpoint import optimizer_state_from_files, optimizer_state_to_files
from playground.training.config import TrainConfig
from playground.training.device import device_caps
from playground.training.engine import make_optimizer, run_training, train
from playground.training.optim import MuonAdamW, muon_param_groups
from playground.training.schedules import make_scheduler

from .conftest import tiny_preset

pytestmark = pytest.mark.skipif(not hasattr(torch.optim, "Muon"), reason="torch.optim.Muon needs torch >= 2.9")


def _gpt(**kw) -> GPT:
    torch.manual_seed(0)
    return GPT(GPTConfig(vocab_size=11, block_size=8, n_layer=2, n_head=2, d_model=16, **kw))


def _names(model, params) -> set[str]:
    ids = {id(p) for p in params}
    return {n for n, p in model.named_parameters() if id(p) in ids}


@pytest.mark.parametrize("tied", [True, False])
def test_muon_takes_the_hidden_matrices_adamw_the_rest(tied):
    model = _gpt(tie_embeddings=tied)
    hidden, rest = muon_param_groups(model)
    per_block = {"attn.qkv.weight", "attn.out_proj.weight", "mlp.fc.weight", "mlp.proj.weight"}
    assert _names(model, hidden) == {f"blocks.{i}.{n}" for i in range(2) for n in per_block}
    assert all(p.dim() == 2 for p in hidden)
    rest_names = _names(model, rest)
    assert {"tok_emb.weight", "pos_emb.weight", "ln_f.weight", "blocks.0.ln1.bias", "blocks.1.mlp.fc.bias"} <= rest_names
    assert ("lm_head.weight" in rest_names) is (not tied)  # tied: it is tok_emb.weight
    # every parameter exactly once
    assert len(hidden) + len(rest) == len(list(model.parameters()))


def test_make_optimizer_muon_groups_lrs_and_the_schedule_reaches_both():
    model = _gpt()
    cfg = TrainConfig(optimizer="muon", lr=2e-3, muon_lr=0.05, warmup_steps=0, max_steps=10, min_lr=2e-4)
    opt = make_optimizer(model, cfg, device_caps("cpu"))
    assert isinstance(opt, MuonAdamW) and isinstance(opt, torch.optim.Optimizer)
    assert [g["muon"] for g in opt.param_groups] == [False, False, True]
    assert opt.param_groups[0]["lr"] == 2e-3 and opt.param_groups[2]["lr"] == 0.05
    sched = make_scheduler(opt, cfg)
    x = torch.randint(0, 11, (3, 8))
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    for _ in range(5):
        model(x).sum().backward()
        opt.step()
        sched.step()
        opt.zero_grad()
    assert all(not torch.equal(before[n], p) for n, p in model.named_parameters() if p.dim() == 2)
    ratio = 0.1 + 0.9 * 0.5 * (1 + torch.cos(torch.tensor(torch.pi * 5 / 10))).item()  # cosine at step 5
    assert opt.adamw.param_groups[0]["lr"] == pytest.approx(2e-3 * ratio)
    assert opt.muon.param_groups[0]["lr"] == pytest.approx(0.05 * ratio)
    assert sched.get_last_lr()[0] == pytest.approx(2e-3 * ratio)  # the engine reports train.lr's curve


def test_muon_state_round_trips_through_the_checkpoint_files():
    model = _gpt()
    cfg = TrainConfig(optimizer="muon")
    opt = make_optimizer(model, cfg, device_caps("cpu"))
    x = torch.randint(0, 11, (3, 8))
    model(x).sum().backward()
    opt.step()
    tensors, meta = optimizer_state_to_files(opt)
    n_params = len(list(model.parameters()))
    assert {int(k.split(".")[1]) for k in tensors} == set(range(n_params))  # AdamW's and Muon's states
    twin = _gpt()
    twin.load_state_dict(model.state_dict())
    opt2 = make_optimizer(twin, cfg, device_caps("cpu"))
    optimizer_state_from_files(opt2, {k: v.clone() for k, v in tensors.items()}, meta)
    for m, o in ((model, opt), (twin, opt2)):
        o.zero_grad()
        m(x).square().mean().backward()
        o.step()
    for a, b in zip(model.parameters(), twin.parameters()):
        assert torch.allclose(a, b, atol=1e-6)


def test_a_muon_run_trains_stops_and_resumes(workspace, corpus_file):
    preset = tiny_preset("gpt", corpus_file, max_steps=8, eval_interval=4, optimizer="muon")
    full = run_training(preset, workspace, "full", device="cpu")
    assert full.status == "done" and full.val_loss is not None
    stop = threading.Event()
    for ev in train(preset, workspace, "part", device="cpu", stop=stop):
        if ev.kind == "step" and ev.step >= 4:
            stop.set()
    assert ev.kind == "stopped" and ev.step == 4
    resumed = run_training(None, workspace, "part", device="cpu", resume=True)
    assert resumed.step == 8
    assert resumed.val_loss == pytest.approx(full.val_loss, abs=1e-4)


def test_other_optimizers_unchanged():
    model = _gpt()
    opt = make_optimizer(model, TrainConfig(), device_caps("cpu"))
    assert type(opt) is torch.optim.AdamW and len(opt.param_groups) == 2


def test_batched_muon_makes_torch_muons_update():
    from playground.training.optim import BatchedMuon

    torch.manual_seed(0)
    shapes = [(12, 8), (12, 8), (8, 8), (8, 20), (20, 8)]
    a = [torch.nn.Parameter(torch.randn(s)) for s in shapes]
    b = [torch.nn.Parameter(p.detach().clone()) for p in a]
    ours = BatchedMuon(a, lr=0.05, weight_decay=0.1)
    ref = torch.optim.Muon(b, lr=0.05, weight_decay=0.1)
    for _step in range(3):
        grads = [torch.randn(s) for s in shapes]
        for p, q, g in zip(a, b, grads):
            p.grad, q.grad = g.clone(), g.clone()
        ours.step()
        ref.step()
    for p, q in zip(a, b):
        assert torch.allclose(p, q, atol=2e-2)  # torch's in bf16, ours in float32 on a CPU: bf16's rounding apart
        assert (p - q).abs().mean() < 2e-3
    assert set(ours.state[a[0]]) == set(ref.state[b[0]]) == {"momentum_buffer"}


def test_every_family_names_its_output_layers_for_muon():
    """Each model declares the Linear layers that map to its outputs; Muon leaves exactly those
    (and tied embeddings) to AdamW."""
    from playground.families import FAMILIES

    for name, family in FAMILIES.items():
        model = family.build(family.config_cls())
        modules = dict(model.named_modules())
        assert model.output_layers and all(isinstance(modules[o], nn.Linear) for o in model.output_layers), name
        hidden, _ = muon_param_groups(model)
        assert not {id(modules[o].weight) for o in model.output_layers} & {id(p) for p in hidden}, name
