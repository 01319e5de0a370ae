"""A bundle keeps its run's step events (train_log.csv): after Stop and Resume the saved curve is
the uninterrupted run's, step for step, so the Train tab can draw it from the first step."""
from __future__ import annotations

import threading

import pytest

from playground.bundle import read_metrics_csv
from playground.training.checkpoint import TRAIN_LOG
from playground.training.engine import run_training, train
from playground.training.runs import run_history
from tests.training.conftest import tiny_preset


def test_stop_and_resume_keep_the_uninterrupted_runs_step_log(workspace, corpus_file):
    preset = tiny_preset("gpt", corpus_file, max_steps=20, eval_interval=8, log_interval=2)
    full = run_training(preset, workspace, "whole", device="cpu")
    live = [(e.step, e.train_loss, e.lr) for e in full.events if e.kind == "step"]
    saved = read_metrics_csv(workspace.path("models", "whole") / TRAIN_LOG)
    assert [(r["step"], r["train_loss"], r["lr"]) for r in saved] == [
        (s, pytest.approx(loss, rel=1e-9), pytest.approx(lr, rel=1e-9)) for s, loss, lr in live]
    assert [r["step"] for r in saved] == [1, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20]

    stop = threading.Event()
    for ev in train(preset, workspace, "cut", device="cpu", stop=stop):
        if ev.kind == "step" and ev.step >= 11:  # between evaluations: the stop's own save keeps the log
            stop.set()
    log, evals = run_history(workspace, "cut")
    assert log[-1]["step"] <= 12 and [r["step"] for r in evals] == [8]
    run_training(None, workspace, "cut", device="cpu", resume=True)
    log, evals = run_history(workspace, "cut")
    assert [r["step"] for r in log] == [r["step"] for r in saved]  # no gap, no repeat at the resume point
    for a, b in zip(log, saved):
        assert a["train_loss"] == pytest.approx(b["train_loss"], abs=1e-5)
    assert [r["step"] for r in evals] == [8, 16, 20]


def test_a_bundle_without_a_step_log_draws_no_train_point_from_interval_averages(workspace, corpus_file):
    """Older bundles have only metrics.csv, whose train_loss averages an evaluation interval:
    run_history gives no step log then, rather than passing those averages off as steps."""
    preset = tiny_preset("gpt", corpus_file, max_steps=4, eval_interval=2)
    run_training(preset, workspace, "old", device="cpu")
    (workspace.path("models", "old") / TRAIN_LOG).unlink()
    log, evals = run_history(workspace, "old")
    assert log == [] and [r["step"] for r in evals] == [2, 4]
