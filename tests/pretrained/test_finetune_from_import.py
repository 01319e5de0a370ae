"""Fine-tuning starts from an imported BERT (data.init_from), as from the playground's own pre-training."""
from __future__ import annotations

from pathlib import Path

import torch

from playground.bundle import load_bundle, read_metrics_csv
from playground.families import get_family
from playground.models.bert import encoder_state
from playground.pretrained.importer import import_pretrained
from playground.training.engine import run_training
from playground.training.spec import resolve_run
from playground.workspace import Workspace
from tests.pretrained.conftest import Saved

SHAPE = {"model.d_model": "32", "model.n_layer": "2", "model.n_head": "4", "model.block_size": "40",
         "model.segments": "true"}  # the imported encoder's (the preset sets these, so they must agree)
SMALL = {"data.n": "200", "train.max_steps": "6", "train.eval_interval": "3", "train.eval_iters": "1",
         "train.batch_size": "8", "train.log_interval": "1", "train.warmup_steps": "1"}


def test_a_classifier_fine_tunes_from_an_imported_bert(saved: dict[str, Saved], tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "ws")
    import_pretrained(str(saved["BertForMaskedLM"].folder), ws, "bert-imported")
    pre = load_bundle("bert-imported", ws)
    spec = resolve_run("bert-reviews-finetune", {**SHAPE, **SMALL, "data.init_from": "bert-imported"})
    adapter = get_family("bert_classifier").adapter
    prep = adapter.prepare(spec.data, spec.preset.model, ws)
    c = prep.model_config
    assert (c.norm_placement, c.emb_norm, c.norm_eps, c.ffn) == ("post", True, 1e-12, "gelu_exact")  # real BERT's wiring
    model = get_family("bert_classifier").build(c)
    adapter.init_model(model, prep)
    for k, v in encoder_state(pre.model).items():
        assert torch.equal(encoder_state(model)[k], v), k
    run_training(spec.preset, ws, "fine-tuned", device="cpu")
    rows = read_metrics_csv(ws.path("models", "fine-tuned") / "metrics.csv")
    assert rows and 0 <= rows[-1]["accuracy"] <= 1
