"""The float64 switch in the Analyze tab (per input and experiments): it reaches the computation
(the model that computed is float64) and is refused, with the reason, above the size cap."""
from __future__ import annotations

import json
from pathlib import Path

import gradio as gr
import pytest
import torch

from playground.analysis import numerics
from playground.config import Preset
from playground.errors import TooBigError
from playground.settings import make_settings
from playground.training.engine import run_training
from playground.ui import analyze_tab as tab
from playground.ui import experiments_view as view
from playground.ui.context import user_errors
from playground.workspace import Workspace
from tests.ui.test_analyze_tab import _save_gpt, _save_vit
from tests.ui.test_experiments_view import RUN_DEFAULTS, TRAIN


def _analysis_json(out) -> dict:
    return json.loads(Path([f for f in out.files if f.endswith(".json")][0]).read_text())


def test_the_per_input_checkbox_runs_every_method_in_float64(workspace) -> None:
    _save_gpt(workspace, "g")
    args = (workspace, "cpu", "g", "the lazy dog", None, None, None, None, ["attention", "saliency", "loo"], None, None,
            8, False)
    plain, double = tab.run_analysis(*args), tab.run_analysis(*args, float64=True)
    assert _analysis_json(plain)["numerics"]["dtype"] == "float32"
    assert _analysis_json(double)["numerics"]["dtype"] == "float64"  # the model that computed was float64
    cached = tab.run_analysis(*args)  # the shared cached model stayed float32
    assert _analysis_json(cached)["numerics"]["dtype"] == "float32"


def test_float64_above_the_cap_is_refused_with_the_reason(workspace, monkeypatch) -> None:
    _save_vit(workspace, "v")
    monkeypatch.setattr(numerics, "FLOAT64_MAX_PARAMETERS", 1000)  # the tiny ViT has more than 1000 parameters
    with pytest.raises(gr.Error, match="small models only"):
        user_errors(tab.run_analysis)(workspace, "cpu", "v", None, None, 0, None, None, ["saliency"], None, None,
                                      8, False, float64=True)
    with pytest.raises(TooBigError, match="doubles the model's memory"):
        numerics.float64_model(torch.nn.Linear(40, 40))


def test_the_experiments_checkbox_runs_the_experiment_in_float64(tmp_path) -> None:
    settings = make_settings(tmp_path / "ws", device="cpu")
    ws = Workspace(settings.workspace)
    preset = Preset("tiny", "text_classifier", model={"encoder": "avg", "emb_dim": 8, "hidden": 8, "max_len": 24},
                    data={"n": 60}, train={**TRAIN, "eval_examples": 8})
    torch.manual_seed(0)
    run_training(preset, ws, "tiny", device="cpu")
    args = {**RUN_DEFAULTS, "n": 2, "references": ["jw_grad", "loo_delete"]}
    last = list(view.run_experiment(ws, settings, "tiny", "agreement", *args.values(), float64=True))[-1]
    data = json.loads(Path(last.result_path).read_text())
    assert data["settings"]["dtype"] == "float64" and data["settings"]["options"]["float64"] is True
    assert data["extra"]["numerics"]["dtype"] == "float64"  # the saturation check ran on the float64 copy
    assert {"one_minus_p", "at_noise", "precision"} <= set(data["rows"][0])  # the per-example flag columns
