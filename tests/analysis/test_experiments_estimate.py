"""The expected run time of an experiment: one example timed, scaled to the run."""
from __future__ import annotations

import dataclasses

import pytest
import torch

from playground.analysis.experiments.estimate import (
    CALIBRATION_STEPS,
    Calibration,
    calibrate,
    format_seconds,
    split_steps,
)


def test_seconds_scale_with_examples_and_steps() -> None:
    adv = Calibration("adversarial", draw_s=2.0, example_s=0.5, step_s=0.04)
    assert adv.seconds(10, 100) == pytest.approx(2.0 + 10 * (0.5 + 100 * 0.04))
    assert adv.seconds(50, 500) == pytest.approx(2.0 + 50 * (0.5 + 500 * 0.04))
    perm = Calibration("permutation", draw_s=1.0, example_s=0.2, step_s=0.0)
    assert perm.seconds(50, 500) == pytest.approx(1.0 + 50 * 0.2)  # steps do not touch other experiments


def test_split_steps_separates_the_fixed_part() -> None:
    fixed, step = split_steps(0.5 + 5 * 0.04, 0.5 + 10 * 0.04, 5)
    assert fixed == pytest.approx(0.5) and step == pytest.approx(0.04)
    assert split_steps(1.0, 0.9, 5) == (0.0, pytest.approx(0.9 / 10))  # noise: all of it counts as steps


@pytest.mark.parametrize("seconds, text", [(0, "about 5 s"), (41.2, "about 45 s"), (45, "about 45 s"),
                                           (119, "about 120 s"), (130, "about 2 min"), (1030, "about 17 min"),
                                           (5400, "about 1.5 h")])
def test_format_seconds(seconds: float, text: str) -> None:
    assert format_seconds(seconds) == text


def test_calibrate_times_one_example(tmp_path) -> None:
    from playground.analysis.experiments.runner import ExperimentOptions
    from playground.bundle import load_bundle
    from playground.config import Preset
    from playground.training.engine import run_training
    from playground.workspace import Workspace

    ws = Workspace(tmp_path / "ws")
    torch.manual_seed(0)
    run_training(Preset("tiny", "gpt", model={"block_size": 12, "n_layer": 1, "n_head": 2, "d_model": 16},
                        data={"corpus": "python-docs", "tokenizer": "char"},
                        train={"max_steps": 1, "batch_size": 2, "eval_interval": 1, "eval_iters": 1, "warmup_steps": 1,
                               "log_interval": 1, "save_optimizer": False, "preview": False}), ws, "tiny", device="cpu")
    bundle = load_bundle("tiny", ws)
    options = ExperimentOptions(n=50, steps=500, k=2, n_perm=5)
    adv = calibrate("adversarial", bundle, options, ws)
    assert adv.experiment == "adversarial" and adv.draw_s > 0 and adv.step_s > 0 and adv.example_s >= 0
    assert adv.seconds(2, 500) > adv.seconds(2, CALIBRATION_STEPS)
    perm = calibrate("permutation", bundle, dataclasses.replace(options, n=3), ws)
    assert perm.example_s > 0 and perm.step_s == 0
    assert calibrate("uniform", bundle, options, ws) is None  # retrains / scores whole splits: no estimate
