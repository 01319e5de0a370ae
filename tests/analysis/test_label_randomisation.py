"""Adebayo et al.'s data-label randomisation: shuffled training labels in the data path, a quick
retrain through the trainer, and each method's maps compared with the trained model's (Spearman ρ,
checked with scipy), as part of the sanity experiment; families without labels are refused."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from scipy.stats import spearmanr

from playground.analysis.experiments.core import drive
from playground.analysis.experiments.data import load_held_out
from playground.analysis.experiments.jain_wallace import compute_importances, real_unit_mask
from playground.analysis.experiments.runner import (
    ExperimentOptions,
    iter_experiment,
    label_shuffle_override,
    shuffled_name,
)
from playground.analysis.experiments.summary import summarize
from playground.bundle import load_bundle
from playground.charts.experiments import experiment_chart
from playground.config import Preset
from playground.data.label_shuffle import shuffled_labels
from playground.errors import ConfigError
from playground.families import get_family
from playground.families.text_classifier.training import LabelledTextConfig
from playground.settings import SHIPPED_LIBRARY
from playground.training.data import ImageDataConfig
from playground.workspace import Workspace

TINY_TRAIN = {"max_steps": 4, "batch_size": 8, "eval_interval": 4, "eval_examples": 16, "warmup_steps": 1,
              "log_interval": 1, "save_optimizer": False, "preview": False}
TEXT_MODEL = {"encoder": "avg", "attention": "additive", "emb_dim": 8, "hidden": 8, "max_len": 24}


def _prepared(family: str, data: object):
    adapter = get_family(family).adapter
    model = TEXT_MODEL if family == "text_classifier" else {"patch_size": 4, "d_model": 16, "n_layer": 1, "n_head": 2}
    return adapter.prepare(data, model, None).payload


def test_shuffled_labels_is_a_seeded_permutation() -> None:
    labels = torch.arange(50) % 3
    a, b = shuffled_labels(labels, 0), shuffled_labels(labels, 0)
    assert torch.equal(a, b) and not torch.equal(a, labels)  # seeded, and it moves labels
    assert torch.equal(a.sort().values, labels.sort().values)  # the same multiset: a permutation
    assert not torch.equal(shuffled_labels(labels, 1), a)


@pytest.mark.parametrize("family,config", [
    ("text_classifier", lambda on: LabelledTextConfig(n=120, shuffle_labels=on)),
    ("vit", lambda on: ImageDataConfig(dataset="digits", n=120, shuffle_labels=on)),
])
def test_the_data_switch_permutes_training_labels_and_leaves_validation_alone(family, config) -> None:
    plain, shuffled = _prepared(family, config(False)), _prepared(family, config(True))
    if family == "text_classifier":
        train = (plain.train_labels, shuffled.train_labels)
        val = (plain.val_labels, shuffled.val_labels)
        assert plain.train_ids == shuffled.train_ids and plain.val_ids == shuffled.val_ids  # same inputs
    else:
        train = (plain.train.labels, shuffled.train.labels)
        val = (plain.val.labels, shuffled.val.labels)
        assert torch.equal(plain.train.images, shuffled.train.images)
        assert torch.equal(plain.val.images, shuffled.val.images)
    assert torch.equal(val[0], val[1])  # validation labels untouched: accuracy against them shows chance
    assert torch.equal(train[0].sort().values, train[1].sort().values)  # a permutation of the training labels
    assert not torch.equal(train[0], train[1])
    assert torch.equal(train[1], shuffled_labels(train[0], 0))


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    from playground.training.engine import run_training

    workspace = Workspace(tmp_path_factory.mktemp("labels-ws") / "ws")
    preset = Preset("tiny-textclf", "text_classifier", model=dict(TEXT_MODEL), data={"texts": "reviews", "n": 120},
                    train=dict(TINY_TRAIN))
    torch.manual_seed(0)
    run_training(preset, workspace, "clf", device="cpu")
    return workspace


def test_sanity_with_label_randomisation_compares_each_map_with_the_retrained_model(ws) -> None:
    bundle = load_bundle("clf", ws)
    methods = ("attention", "saliency", "loo")
    opts = ExperimentOptions(n=3, methods=methods, label_randomisation=True, retrain_steps=4)
    messages: list[str] = []
    result = drive(iter_experiment("sanity", bundle, opts, ws), lambda ev: messages.append(ev.message))
    assert any("retraining on shuffled labels" in m for m in messages)  # the trainer's progress comes through
    shuffled = load_bundle(shuffled_name("clf"), ws)
    assert shuffled.config["data"]["shuffle_labels"] is True and shuffled.config["step"] == 4
    info = result.settings["label_randomisation"]
    assert info["checkpoint"] == "clf-shuffled" and info["chance"] == 0.5
    assert 0 <= info["val_accuracy_shuffled"] <= 1 and 0 <= info["val_accuracy_trained"] <= 1

    label_rows = [r for r in result.rows if r.test == "labels"]
    assert len(label_rows) == 3 * len(methods)
    held = load_held_out(bundle, 3, 0, ws)
    for row in label_rows:  # each ρ recomputed: the maps of both models on the same input, scipy's Spearman
        q = held.queries[row.example]
        keep = real_unit_mask(q)
        mine = compute_importances(q, [row.method])[row.method]
        other_q = dataclasses.replace(q, model=shuffled.model, layer=shuffled.model.embedding)
        theirs = compute_importances(other_q, [row.method])[row.method]
        rho = spearmanr(np.abs(mine[keep]), np.abs(theirs[keep]))[0]
        assert row.spearman_abs == pytest.approx(rho, abs=1e-9, nan_ok=True)

    st = result.stats()
    assert st["labels_run"]
    for m in st["methods"]:
        mean = np.mean([r.spearman_abs for r in label_rows if r.method == m["method"]])
        assert m["rho_abs_labels"] == pytest.approx(mean) and m["flagged_labels"] == (mean > st["threshold"])
    assert all(r.step <= len(result.settings["layers"]) for r in result.rows)
    assert set(result.curve_frame()["step"]) == set(range(len(result.settings["layers"]) + 1))  # cascade only
    text = summarize(result).to_text()
    assert "shuffled" in text and "chance 50%" in text
    assert experiment_chart(result).to_dict()["vconcat"]  # the cascade and the label test, one above the other

    again: list[str] = []
    drive(iter_experiment("sanity", bundle, ExperimentOptions(n=1, methods=("attention",), label_randomisation=True),
                          ws), lambda ev: again.append(ev.message))
    assert any("reusing clf-shuffled" in m for m in again)


def test_a_family_without_labels_is_refused_before_anything_trains(tmp_path) -> None:
    assert label_shuffle_override("text_classifier") == {"data.shuffle_labels": True}
    assert label_shuffle_override("vit") == {"data.shuffle_labels": True}
    with pytest.raises(ConfigError, match="no labels to shuffle"):
        label_shuffle_override("gpt")
    gpt = load_bundle("gpt-python-docs-char", Workspace(SHIPPED_LIBRARY))
    ws = Workspace(tmp_path / "ws")
    with pytest.raises(ConfigError, match="cascading model randomisation still runs"):
        drive(iter_experiment("sanity", gpt, ExperimentOptions(n=1, label_randomisation=True), ws))
    assert not ws.exists("models", shuffled_name(gpt.name))


def test_a_retrained_copy_whose_labels_were_not_shuffled_is_refused(ws) -> None:
    from playground.training.engine import run_training

    preset = Preset("tiny-textclf", "text_classifier", model=dict(TEXT_MODEL), data={"texts": "reviews", "n": 120},
                    train=dict(TINY_TRAIN))
    for name in ("plain", "plain-shuffled"):  # a '-shuffled' sibling trained on the true labels
        run_training(preset, ws, name, device="cpu")
    opts = ExperimentOptions(n=1, methods=("attention",), label_randomisation=True)
    with pytest.raises(ConfigError, match="not trained on shuffled labels"):
        drive(iter_experiment("sanity", load_bundle("plain", ws), opts, ws))


def test_a_family_whose_data_path_ignores_the_switch_is_refused_before_training(tmp_path) -> None:
    from playground.training.engine import run_training

    ws = Workspace(tmp_path / "ws")
    preset = Preset("tiny-bert", "bert_classifier", model={"d_model": 16, "n_layer": 1, "n_head": 2, "block_size": 24},
                    data={"texts": "reviews", "n": 80, "tokenizer": "words"}, train=dict(TINY_TRAIN))
    run_training(preset, ws, "bert", device="cpu")
    opts = ExperimentOptions(n=1, methods=("attention",), label_randomisation=True)
    with pytest.raises(ConfigError, match="does not report shuffling"):
        drive(iter_experiment("sanity", load_bundle("bert", ws), opts, ws))
    assert not ws.exists("models", shuffled_name("bert"))  # nothing was trained
