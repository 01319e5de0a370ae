"""Experiments on trainer-written checkpoints: held-out data, the runner, summaries, charts, CLI."""
from __future__ import annotations

import json

import pytest
import torch

from playground.analysis.experiments.core import drive
from playground.analysis.experiments.runner import EXPERIMENTS, ExperimentOptions, iter_experiment, parse_heads, parse_ints
from playground.config import Preset
from playground.errors import PlaygroundError

TINY_TRAIN = {"max_steps": 2, "batch_size": 4, "eval_interval": 2, "eval_iters": 1, "eval_examples": 8,
              "warmup_steps": 1, "log_interval": 1, "save_optimizer": False, "preview": False}


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    from playground.training.engine import run_training
    from playground.workspace import Workspace

    root = tmp_path_factory.mktemp("exp-ws")
    corpus = root / "corpus.txt"
    corpus.write_text("the quick brown fox jumps over the lazy dog. " * 60, encoding="utf-8")
    workspace = Workspace(root / "ws")
    presets = {
        "gpt": Preset("tiny-gpt", "gpt", model={"block_size": 16, "n_layer": 2, "n_head": 2, "d_model": 16},
                      data={"corpus": str(corpus), "tokenizer": "char"}, train=dict(TINY_TRAIN)),
        "vit": Preset("tiny-vit", "vit", model={"patch_size": 4, "d_model": 16, "n_layer": 1, "n_head": 2},
                      data={"dataset": "shapes", "n": 40, "image_size": 16}, train=dict(TINY_TRAIN)),
        "rnn": Preset("tiny-rnn", "rnn_seq2seq", model={"emb_dim": 8, "hidden": 16},
                      data={"pairs": "copy", "n": 60, "max_len": 6}, train=dict(TINY_TRAIN)),
    }
    torch.manual_seed(0)
    for name, preset in presets.items():
        run_training(preset, workspace, name, device="cpu")
    return workspace


def bundle(ws, name):
    from playground.bundle import load_bundle

    return load_bundle(name, ws)


@pytest.mark.parametrize("name,kind", [("gpt", "lm"), ("vit", "classifier"), ("rnn", "seq2seq")])
def test_held_out_examples_from_the_validation_split(ws, name, kind):
    from playground.analysis.experiments.data import load_held_out

    b = bundle(ws, name)
    held = load_held_out(b, 5, seed=1, workspace=ws)
    assert held.kind == kind and len(held) == len(held.labels) == len(held.gold) == len(held.units)
    assert 1 <= len(held) <= 5
    again = load_held_out(b, 5, seed=1, workspace=ws)
    assert all(torch.equal(a.inputs, c.inputs) for a, c in zip(held.queries, again.queries))
    for q, units in zip(held.queries, held.units):
        assert q.batch_size == 1 and len(units) == q.n_units
        assert int(q.targets[0]) == int(q.probs()[0].argmax())  # the model's own prediction is explained
    if kind == "classifier":
        assert all(m is not None and m.any() for m in held.masks)  # shapes carry object masks
    if kind == "lm":
        assert all(g is not None for g in held.gold)


def test_runner_permutation_summary_chart_and_export(ws, tmp_path):
    from playground.analysis.experiments.summary import summarize
    from playground.charts.experiments import experiment_chart

    res = drive(iter_experiment("permutation", bundle(ws, "gpt"), ExperimentOptions(n=4, n_perm=10), ws))
    assert res.n_done == 4 and res.settings["checkpoint"] == "gpt" and len(res.extra["example_labels"]) == 4
    text = summarize(res).to_markdown()
    assert "median TVD" in text and "of 4 examples" in text
    assert experiment_chart(res).to_dict()
    data = json.loads(res.save(tmp_path / "p.json").read_text())
    assert data["experiment"] == "permutation" and len(data["rows"]) == 4


@pytest.mark.parametrize("experiment,name", [("pointing", "vit"), ("erasure", "rnn"), ("aopc", "vit"),
                                             ("adversarial", "rnn"), ("diagnostic", "vit")])
def test_runner_every_experiment_runs_on_a_real_checkpoint(ws, experiment, name):
    from playground.analysis.experiments.summary import summarize
    from playground.charts.experiments import experiment_chart

    opts = ExperimentOptions(n=6, steps=5, diagnostic_steps=2, random_draws=2,
                             methods=("attention", "loo", "random") if experiment != "diagnostic" else None)
    res = drive(iter_experiment(experiment, bundle(ws, name), opts, ws))
    assert res.examples_done == 6 or res.rows
    assert summarize(res).findings
    assert experiment_chart(res).to_dict()
    if experiment == "adversarial":
        assert set(res.extra["units"]) == set(res.extra["attention"])


def test_runner_uniform_uses_the_trainers_metrics(ws):
    res = drive(iter_experiment("uniform", bundle(ws, "rnn"), ExperimentOptions(), ws))
    variants = res.stats()["variants"]
    assert {"val_loss", "token_accuracy", "exact_match"} <= set(variants["learned"])
    assert set(variants) == {"learned", "uniform (frozen at test time)"}


def test_runner_seed_variance_retrains_and_reuses(ws):
    opts = ExperimentOptions(n=3, seeds=(5,), retrain_steps=2, steps=3)
    res = drive(iter_experiment("seeds", bundle(ws, "gpt"), opts, ws))
    assert ws.exists("models", "gpt-seed5") and res.settings["models"] == ["gpt", "gpt-seed5"]
    assert res.n_done == 3 and all(r.mean_jsd >= 0 for r in res.rows)
    messages = []
    drive(iter_experiment("seeds", bundle(ws, "gpt"), opts, ws), lambda ev: messages.append(ev.message))
    assert any("reusing gpt-seed5" in m for m in messages)


def test_runner_rejects_unknown_names_and_parses_lists():
    with pytest.raises(PlaygroundError, match="Unknown experiment"):
        next(iter_experiment("nope", None))
    assert parse_heads("all") is None and parse_heads("0, 2") == [0, 2] and parse_ints("1,2, 3") == (1, 2, 3)
    with pytest.raises(PlaygroundError):
        parse_heads("x")
    assert set(EXPERIMENTS) >= {"agreement", "permutation", "adversarial", "uniform", "seeds", "diagnostic",
                                "erasure", "aopc", "pointing"}


def test_cli_writes_csv_and_json(ws, tmp_path, capsys):
    from playground.__main__ import main

    out = tmp_path / "perm.csv"
    rc = main(["--workspace", str(ws.root), "analyze", "experiment", "permutation", "gpt", "--n", "3",
               "--n-perm", "5", "--out", str(out), "--quiet"])
    assert rc == 0 and out.read_text().splitlines()[0].startswith("example,n_units,max_attention,median_tvd")
    printed = capsys.readouterr().out
    assert "Random permutation" in printed and "What it cannot show" in printed
    out_json = tmp_path / "agree.json"
    rc = main(["--workspace", str(ws.root), "analyze", "experiment", "agreement", "gpt", "--n", "2",
               "--views", "attention", "--references", "saliency,loo", "--out", str(out_json), "--quiet"])
    assert rc == 0 and json.loads(out_json.read_text())["stats"]["pairs"]
    assert main(["--workspace", str(ws.root), "analyze", "experiment", "permutation", "gpt", "--out", "x.txt"]) == 2
