"""DistributedDataParallel: 2 CPU processes (gloo) follow the same loss curve as 1 process with
the same global batch."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch
import torch.distributed as tdist
import torch.multiprocessing as mp

from tests.conftest import free_port
from tests.training.conftest import tiny_preset


def _worker(rank: int, world: int, port: int, root: str, corpus: str) -> None:
    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    tdist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        from playground.training.engine import DistInfo, train
        from playground.workspace import Workspace

        preset = tiny_preset("gpt", Path(corpus), max_steps=8, batch_size=8, eval_interval=4, preview=False)
        events = list(train(preset, Workspace(root), "ddp", device="cpu", dist=DistInfo(rank, world, rank)))
        losses = [e.train_loss for e in events if e.kind == "step"]
        vals = [e.val_loss for e in events if e.kind == "eval"]
        Path(root, f"rank{rank}.json").write_text(json.dumps({"losses": losses, "vals": vals}))
    finally:
        tdist.destroy_process_group()


@pytest.mark.slow
def test_two_processes_match_one_process(tmp_path, corpus_file):
    from playground.training.engine import run_training
    from playground.workspace import Workspace

    single = run_training(tiny_preset("gpt", corpus_file, max_steps=8, batch_size=8, eval_interval=4, preview=False),
                          Workspace(tmp_path / "one"), "one", device="cpu")
    one = [e.train_loss for e in single.events if e.kind == "step"]
    one_val = [e.val_loss for e in single.events if e.kind == "eval"]

    root = tmp_path / "two"
    root.mkdir()
    # fork: the children inherit the imported modules (spawn would re-import torch twice, ~10 s here)
    mp.start_processes(_worker, args=(2, free_port(), str(root), str(corpus_file)), nprocs=2, join=True,
                       start_method="fork")
    two = json.loads((root / "rank0.json").read_text())
    other = json.loads((root / "rank1.json").read_text())

    assert len(one) == len(two["losses"]) == 8
    assert two["losses"] == pytest.approx(one, abs=2e-5)  # all-reduced mean == single-process mean
    assert other["losses"] == pytest.approx(two["losses"], abs=1e-7)  # every rank reports the same curve
    assert two["vals"] == pytest.approx(one_val, abs=2e-5)
    assert other["vals"] == []  # only rank 0 evaluates and writes checkpoints
    from playground.bundle import load_bundle

    bundle = load_bundle("ddp", Workspace(root))
    assert bundle.config["run"]["world_size"] == 2 and bundle.config["step"] == 8
    assert not any(k.startswith("module.") for k in bundle.model.state_dict())


def test_torchrun_with_one_process_is_distributed(monkeypatch):
    from playground.training.engine import DistInfo

    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "test")
    monkeypatch.setenv("WORLD_SIZE", "1")
    assert DistInfo.from_env().distributed
    monkeypatch.delenv("TORCHELASTIC_RUN_ID")
    assert not DistInfo.from_env().distributed  # a plain process: no process group, no DDP


def test_one_launched_process_trains_through_ddp_on_the_single_process_curve(tmp_path, corpus_file, monkeypatch):
    """torchrun --nproc_per_node 1 (how the DDP path is exercised on one GPU): the model is wrapped
    in DistributedDataParallel, the loss is all-reduced, and the curve is the plain run's."""
    from torch.nn.parallel import DistributedDataParallel

    from playground.bundle import load_bundle
    from playground.training.engine import DistInfo, run_training
    from playground.workspace import Workspace

    preset = tiny_preset("gpt", corpus_file, max_steps=6, batch_size=8, eval_interval=3, preview=False)
    plain = run_training(preset, Workspace(tmp_path / "plain"), "plain", device="cpu")
    wrapped = []

    class Spy(DistributedDataParallel):
        def __init__(self, *args, **kwargs):
            wrapped.append(True)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(torch.nn.parallel, "DistributedDataParallel", Spy)
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", str(free_port()))
    tdist.init_process_group("gloo", rank=0, world_size=1)
    try:
        ddp = run_training(preset, Workspace(tmp_path / "ddp"), "ddp", device="cpu",
                           dist=DistInfo(0, 1, 0, launched=True))
    finally:
        tdist.destroy_process_group()
    assert wrapped == [True]
    assert [e.train_loss for e in ddp.events if e.kind == "step"] == pytest.approx(
        [e.train_loss for e in plain.events if e.kind == "step"], abs=1e-6)
    assert not any(k.startswith("module.") for k in load_bundle("ddp", Workspace(tmp_path / "ddp")).model.state_dict())
