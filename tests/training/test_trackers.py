"""[log] trackers with the real writers on local folders, read back with their own readers:
TensorBoard's event files travel in the run's bundle (and continue on Resume), Trackio's run
holds the same curve as train_log.csv; what is missing or not allowed is refused in one line."""
from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from playground.bundle import read_metrics_csv
from playground.config import parse_preset
from playground.errors import ConfigError
from playground.settings import DEMO_CAPS
from playground.training.checkpoint import TRAIN_LOG
from playground.training.config import preset_to_toml
from playground.training.engine import run_training
from playground.training.spec import resolve_run
from playground.training.trackers import TB_FOLDER, LogConfig, check_tracker
from tests.training.conftest import corpus_text, tiny_preset

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.txt"
    path.write_text(corpus_text(), encoding="utf-8")
    return path


def _tb_scalars(folder: Path) -> dict[str, list[tuple[int, float]]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(folder))
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def test_log_table_round_trips_through_toml_and_is_absent_when_unset(corpus):
    plain = tiny_preset("gpt", corpus)
    assert "[log]" not in preset_to_toml(plain)  # most runs: no empty table in every TOML
    logged = dataclasses.replace(plain, log={"tracker": "tensorboard", "project": "class-3"})
    text = preset_to_toml(logged)
    assert "[log]" in text and parse_preset(text, plain.name).log == logged.log
    assert resolve_run(logged).log == LogConfig("tensorboard", "class-3")


@pytest.mark.parametrize("values, message", [({"tracker": "mlflow"}, "log.tracker must be one of"),
                                              ({"project": "../etc"}, "log.project must be"),
                                              ({"project": ""}, "log.project must be"),
                                              ({"colour": "red"}, "colour")])
def test_bad_log_values_are_refused_before_anything_runs(corpus, values, message):
    with pytest.raises(ConfigError, match=message):
        resolve_run(dataclasses.replace(tiny_preset("gpt", corpus), log=values))


def test_a_public_server_allows_only_the_runs_own_folder(corpus):
    preset = dataclasses.replace(tiny_preset("gpt", corpus), log={"tracker": "trackio"})
    with pytest.raises(ConfigError, match='not available on this server.*"tensorboard"'):
        resolve_run(preset, caps=DEMO_CAPS)
    resolve_run(dataclasses.replace(preset, log={"tracker": "tensorboard"}), caps=DEMO_CAPS)


@pytest.mark.skipif(importlib.util.find_spec("wandb") is not None, reason="wandb is installed here")
def test_a_tracker_whose_package_is_missing_says_how_to_install_it():
    with pytest.raises(ConfigError, match=r'needs the wandb package.*pip install.*tracker = "none"'):
        check_tracker(LogConfig("wandb"))


@pytest.mark.slow  # two trainings and tensorboard's reader: several seconds
def test_tensorboard_events_travel_in_the_bundle_and_continue_on_resume(workspace, corpus):
    preset = dataclasses.replace(tiny_preset("gpt", corpus, max_steps=8, eval_interval=4, log_interval=2),
                                 log={"tracker": "tensorboard"})
    run_training(preset, workspace, "tb-run", device="cpu")
    bundle = workspace.path("models", "tb-run")
    log = read_metrics_csv(bundle / TRAIN_LOG)
    metrics = read_metrics_csv(bundle / "metrics.csv")
    scalars = _tb_scalars(bundle / TB_FOLDER)
    assert [s for s, _ in scalars["train_loss"]] == [r["step"] for r in log] == [1, 2, 4, 6, 8]
    assert [v for _, v in scalars["train_loss"]] == pytest.approx([r["train_loss"] for r in log], rel=1e-6)
    assert scalars["val_loss"] == [(r["step"], pytest.approx(r["val_loss"], rel=1e-6)) for r in metrics]

    run_training(None, workspace, "tb-run", device="cpu", resume=True, overrides={"train.max_steps": 12})
    bundle = workspace.path("models", "tb-run")
    scalars = _tb_scalars(bundle / TB_FOLDER)
    assert [s for s, _ in scalars["train_loss"]] == [1, 2, 4, 6, 8, 10, 12]  # one curve, no step twice
    assert [s for s, _ in scalars["val_loss"]] == [4, 8, 12]
    resumed_log = read_metrics_csv(bundle / TRAIN_LOG)
    assert [v for _, v in scalars["train_loss"]] == pytest.approx([r["train_loss"] for r in resumed_log], rel=1e-6)


@pytest.mark.slow  # a CLI process and trackio's import (gradio) take several seconds
@pytest.mark.skipif(importlib.util.find_spec("trackio") is None,
                    reason='trackio is in the trackers extra: pip install -e ".[test,trackers]" (the README\'s test command)')
def test_trackio_run_from_the_cli_holds_the_runs_curve(tmp_path, corpus):
    toml = tmp_path / "tiny.toml"
    toml.write_text(preset_to_toml(tiny_preset("gpt", corpus, max_steps=6, eval_interval=3, log_interval=1)),
                    encoding="utf-8")
    env = {**os.environ, "TRACKIO_DIR": str(tmp_path / "trackio"), "HF_HUB_OFFLINE": "1",
           "GRADIO_ANALYTICS_ENABLED": "False"}
    cli = [sys.executable, "-m", "playground", "--workspace", str(tmp_path / "ws"), "train", str(toml),
           "--name", "tracked", "--tracker", "trackio", "--project", "workshop-1", "--device", "cpu", "--quiet"]
    done = subprocess.run(cli, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    read = ("import json, trackio; from trackio import SQLiteStorage as S; "
            "print(json.dumps({'runs': S.get_runs('workshop-1'), 'logs': S.get_logs('workshop-1', 'tracked')}, default=str))")
    out = subprocess.run([sys.executable, "-c", read], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    found = json.loads(out.stdout.strip().splitlines()[-1])
    assert found["runs"] == ["tracked"]
    log = read_metrics_csv(tmp_path / "ws" / "models" / "tracked" / TRAIN_LOG)
    train = [(row["step"], row["train_loss"]) for row in found["logs"] if "train_loss" in row]
    assert [s for s, _ in train] == [r["step"] for r in log]
    assert [v for _, v in train] == pytest.approx([r["train_loss"] for r in log], rel=1e-9)
    val = [(row["step"], row["val_loss"]) for row in found["logs"] if "val_loss" in row]
    metrics = read_metrics_csv(tmp_path / "ws" / "models" / "tracked" / "metrics.csv")
    assert val == [(r["step"], pytest.approx(r["val_loss"], rel=1e-9)) for r in metrics]
