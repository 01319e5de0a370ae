"""On GPUs the engine reads loss and grad norm back only at log / eval steps (no per-step sync).
The same logic runs here on CPU with the switch forced on: same numbers, NaN still caught
before anything non-finite is saved, Stop between read-backs still saves a finite checkpoint."""
from __future__ import annotations

import dataclasses
import threading

import pytest
import torch

from playground.bundle import load_bundle, read_metrics_csv
from playground.errors import TrainingError
from playground.families import FAMILIES
from playground.families.gpt.training import GPTAdapter
from playground.models.gpt import GPTConfig
from playground.training import engine as engine_mod
from playground.training.device import device_caps
from playground.training.engine import run_training, train
from tests.training.conftest import tiny_preset
from tests.training.test_engine import _NaNAfter


@pytest.fixture
def deferred(monkeypatch: pytest.MonkeyPatch) -> None:
    def caps(*args, **kwargs):
        return dataclasses.replace(device_caps(*args, **kwargs), defer_readback=True)

    monkeypatch.setattr(engine_mod, "device_caps", caps)


def _run(workspace, corpus_file, name: str):
    preset = tiny_preset("gpt", corpus_file, max_steps=18, eval_interval=8, log_interval=4)
    result = run_training(preset, workspace, name, device="cpu")
    steps = [(e.step, e.train_loss, e.grad_norm) for e in result.events if e.kind == "step"]
    rows = read_metrics_csv(workspace.path("models", name) / "metrics.csv")
    weights = load_bundle(name, workspace).model.state_dict()
    return result, steps, rows, weights


def test_deferred_read_back_gives_the_same_events_metrics_and_weights(workspace, corpus_file, monkeypatch):
    _, every_steps, every_rows, every_weights = _run(workspace, corpus_file, "every-step")
    assert not device_caps("cpu").defer_readback  # CPU reads back every step (it costs nothing there)
    monkeypatch.setattr(engine_mod, "device_caps",
                        lambda *a, **k: dataclasses.replace(device_caps(*a, **k), defer_readback=True))
    result, steps, rows, weights = _run(workspace, corpus_file, "deferred")
    assert [s for s, _, _ in steps] == [1, 4, 8, 12, 16]
    assert steps == every_steps  # window means of the same per-step losses; last grad norms
    assert [r["step"] for r in rows] == [8, 16, 18]
    for a, b in zip(rows, every_rows):
        assert a["train_loss"] == b["train_loss"] and a["val_loss"] == b["val_loss"]
    assert all(torch.equal(weights[k], every_weights[k]) for k in weights)
    assert all(e.throughput > 0 and e.eta_s is not None for e in result.events if e.kind == "step")


def test_a_nan_between_read_backs_is_caught_at_the_next_one(workspace, corpus_file, monkeypatch, deferred):
    monkeypatch.setitem(FAMILIES, "gpt", dataclasses.replace(FAMILIES["gpt"], adapter=_NaNAfter(after=6)))
    preset = tiny_preset("gpt", corpus_file, max_steps=20, eval_interval=4, log_interval=4)
    with pytest.raises(TrainingError) as err:
        run_training(preset, workspace, "nan", device="cpu")
    msg = str(err.value)
    assert "NaN" in msg and "at step 7" in msg and "step 4 is kept" in msg  # the step it happened at
    bundle = load_bundle("nan", workspace)
    assert bundle.config["step"] == 4
    assert all(torch.isfinite(p).all() for p in bundle.model.parameters())


class _StopAt(GPTAdapter):
    """Asks the run to stop during training step `at` (between read-backs)."""

    def __init__(self, stop: threading.Event, at: int) -> None:
        super().__init__("gpt", GPTConfig)
        self.stop, self.at, self.calls = stop, at, 0

    def loss(self, model, batch, label_smoothing=0.0):
        if model.training:
            self.calls += 1
            if self.calls == self.at:
                self.stop.set()
        return super().loss(model, batch, label_smoothing)


def test_stop_between_read_backs_saves_the_steps_done(workspace, corpus_file, monkeypatch, deferred):
    stop = threading.Event()
    monkeypatch.setitem(FAMILIES, "gpt", dataclasses.replace(FAMILIES["gpt"], adapter=_StopAt(stop, at=6)))
    preset = tiny_preset("gpt", corpus_file, max_steps=20, eval_interval=100, log_interval=4)
    events = list(train(preset, workspace, "stopped", device="cpu", stop=stop))
    assert events[-1].kind == "stopped" and events[-1].step == 6
    bundle = load_bundle("stopped", workspace)
    assert bundle.config["step"] == 6 and bundle.config["run"]["status"] == "stopped"


def test_stop_between_read_backs_after_a_nan_saves_nothing(workspace, corpus_file, monkeypatch, deferred):
    stop = threading.Event()

    class NaNThenStop(_NaNAfter):
        def loss(self, model, batch, label_smoothing=0.0):
            if model.training and self.calls == 5:
                stop.set()
            return super().loss(model, batch, label_smoothing)

    monkeypatch.setitem(FAMILIES, "gpt", dataclasses.replace(FAMILIES["gpt"], adapter=NaNThenStop(after=5)))  # step 6 is NaN, then Stop
    preset = tiny_preset("gpt", corpus_file, max_steps=20, eval_interval=100, log_interval=4)
    with pytest.raises(TrainingError, match="at step 6"):
        list(train(preset, workspace, "nan-stop", device="cpu", stop=stop))
    assert not workspace.exists("models", "nan-stop")
