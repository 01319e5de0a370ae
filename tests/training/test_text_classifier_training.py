"""Training a text classifier through the engine: the loss falls, the bundle round-trips, uploads
are read as bytes through the data policy."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from playground.bundle import load_bundle, read_metrics_csv
from playground.config import Preset
from playground.data.policy import DataPolicy, PathRefused
from playground.families import get_family
from playground.families.text_classifier.training import LabelledTextConfig
from playground.training.engine import run_training
from tests.training.conftest import tiny_train


def _preset(encoder: str = "avg", **data) -> Preset:
    return Preset("tiny-textclf", "text_classifier", "",
                  model=dict(encoder=encoder, emb_dim=16, hidden=32, max_len=48, dropout=0.0),
                  data=dict(texts="reviews", n=300, negation=0.0, **data),
                  train=tiny_train(max_steps=30, eval_interval=15, lr=2e-2, min_lr=2e-3, batch_size=16))


def test_a_short_run_lowers_the_loss_and_the_bundle_round_trips(workspace) -> None:
    result = run_training(_preset(), workspace, "clf", device="cpu")
    assert result.status == "done" and result.step == 30
    rows = read_metrics_csv(workspace.path("models", "clf") / "metrics.csv")
    assert rows[-1]["val_loss"] < rows[0]["val_loss"] and 0.0 <= rows[-1]["accuracy"] <= 1.0
    losses = [e.train_loss for e in result.events if e.kind == "step"]
    assert sum(losses[-5:]) < sum(losses[:5])
    preview = [e for e in result.events if e.kind == "eval"][-1].preview
    assert preview.kind == "confusion" and sum(map(sum, preview.matrix)) == 32  # eval_examples texts, once each
    bundle = load_bundle("clf", workspace)
    assert bundle.family == "text_classifier" and bundle.class_names == ["negative", "positive"]
    again = load_bundle("clf", workspace)
    ids = torch.tensor([bundle.tokenizer.encode("the plot was not good").ids])
    assert torch.equal(bundle.model(ids), again.model(ids))  # weights and config round-trip exactly
    assert bundle.model_config.vocab_size == bundle.tokenizer.get_vocab_size()


def test_uploaded_csv_trains_and_paths_are_refused_on_a_server(workspace, tmp_path: Path) -> None:
    uploads = tmp_path / "uploads"
    uploads.mkdir()
    rows = "".join(f"{'a fine good film' if i % 2 else 'a bad dull film'} number {i},{'pos' if i % 2 else 'neg'}\n"
                   for i in range(60))
    (uploads / "mine.csv").write_text("text,label\n" + rows, encoding="utf-8")
    adapter = get_family("text_classifier").adapter
    policy = DataPolicy(allow_paths=False, uploads=uploads)
    prep = adapter.prepare(LabelledTextConfig(texts="csv", path="upload:mine.csv", n=0), {"encoder": "avg"}, workspace,
                           policy=policy)
    assert prep.class_names == ["neg", "pos"] and prep.info["n"] == 60 and prep.model_config.n_classes == 2
    with pytest.raises(PathRefused):
        adapter.prepare(LabelledTextConfig(texts="csv", path=str(uploads / "mine.csv")), {}, workspace, policy=policy)
