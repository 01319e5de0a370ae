"""Adebayo et al.'s cascading model randomisation: the cascade order, the decorrelation of
gradient maps on a tiny trained classifier, the flag on a weight-independent control map, and a
shipped model left untouched by a run through the experiments runner."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from playground.analysis.experiments import sanity as sa
from playground.analysis.experiments.core import drive
from playground.analysis.experiments.data import lm_queries, text_classifier_queries
from playground.analysis.experiments.runner import ExperimentOptions, iter_experiment
from playground.analysis.experiments.summary import summarize
from playground.bundle import load_bundle
from playground.charts.experiments import experiment_chart
from playground.data.reviews import make_reviews, text_tokenizer
from playground.models.text_classifier import TextClassifier, TextClassifierConfig
from playground.settings import SHIPPED_LIBRARY
from playground.workspace import Workspace
from tests.analysis.conftest import tiny_gpt

GRADIENT_METHODS = ("saliency", "ixg", "ig")


def _train_tiny_classifier() -> tuple[TextClassifier, list[list[int]]]:
    """A BiLSTM + additive attention classifier trained 120 Adam steps on generated reviews (~1 s)."""
    reviews = make_reviews(256, seed=0)
    tok = text_tokenizer(r.text for r in reviews)
    ids = [tok.encode(r.text).ids[:24] for r in reviews]
    x = torch.zeros(len(ids), 24, dtype=torch.long)  # [N,T] right-padded with <pad> = 0
    for i, row in enumerate(ids):
        x[i, : len(row)] = torch.tensor(row)
    y = torch.tensor([r.label for r in reviews])  # [N]
    torch.manual_seed(0)
    model = TextClassifier(TextClassifierConfig(vocab_size=tok.get_vocab_size(), emb_dim=16, hidden=16, dropout=0.0,
                                                max_len=24))
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    gen = torch.Generator().manual_seed(0)
    for _ in range(120):
        idx = torch.randint(0, len(ids), (32,), generator=gen)
        loss = F.cross_entropy(model(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        accuracy = (model(x).argmax(-1) == y).float().mean().item()
    assert accuracy > 0.8, accuracy  # trained: its maps have something to lose
    return model, ids[:4]


@pytest.fixture(scope="module")
def trained() -> tuple[TextClassifier, sa.SanityResult, dict[str, torch.Tensor]]:
    model, texts = _train_tiny_classifier()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    queries = text_classifier_queries(model, texts)
    result = sa.sanity(queries, (*GRADIENT_METHODS, "attention", "embedding_norm"), seed=0, ig_steps=8)
    return model, result, before


def test_the_cascade_runs_from_the_output_down_and_covers_every_parameter_once() -> None:
    model = tiny_gpt(12)
    query = lm_queries(model, torch.tensor([[1, 2, 3, 4, 5]]))[0]  # [N,T] windows
    layers = sa.cascade_layers(query)
    assert [layer.name for layer in layers] == ["ln_f", "blocks.1", "blocks.0", "pos_emb", "tok_emb"]
    names = [p for layer in layers for p in layer.params]
    assert sorted(names) == sorted(n for n, _ in model.named_parameters())  # tied lm_head: with tok_emb, once


def test_text_classifier_cascade_order_and_loose_query(trained) -> None:
    model, result, _ = trained
    assert result.settings["layers"] == ["head", "attention", "encoder", "embedding"]
    layers = sa.cascade_layers(text_classifier_queries(model, [[5, 6, 7]])[0])
    assert "query" in layers[-1].params  # a parameter no called module owns goes with the input-most layer


def test_randomising_every_layer_decorrelates_gradient_maps(trained) -> None:
    _, result, _ = trained
    curve = result.curve_frame()
    n_layers = len(result.settings["layers"])
    for method in GRADIENT_METHODS:
        rows = curve[curve["method"] == method].set_index("step")
        assert rows.loc[0, "spearman"] == pytest.approx(1.0)  # the trained model against itself
        assert abs(rows.loc[n_layers, "spearman"]) < 0.4, (method, rows.loc[n_layers, "spearman"])
        assert abs(rows.loc[n_layers, "spearman_abs"]) < 0.4, (method, rows.loc[n_layers, "spearman_abs"])
    assert set(result.to_frame()["step"]) == set(range(n_layers + 1))


def test_a_map_that_ignores_the_weights_is_flagged(trained) -> None:
    _, result, _ = trained
    stats = result.stats()
    assert stats["flagged"] == ["embedding_norm"]
    curve = result.curve_frame()
    norm = curve[curve["method"] == "embedding_norm"].set_index("step")["spearman"]
    assert np.allclose(norm.iloc[:-1], 1.0)  # unchanged until the embedding itself is randomised
    text = summarize(result).to_markdown()
    assert "embedding_norm" in text and "does not depend on the weights it explains" in text
    assert experiment_chart(result).to_dict()  # the chart renders


def test_the_model_handed_in_is_untouched_and_the_cascade_is_seeded(trained) -> None:
    model, _, before = trained
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    layers = sa.cascade_layers(text_classifier_queries(model, [[5, 6, 7]])[0])
    a, b = sa.cascade_models(model, layers, 3), sa.cascade_models(model, layers, 3)
    assert all(torch.equal(p, q) for p, q in zip(a[-1].parameters(), b[-1].parameters()))
    assert not torch.equal(a[1].head.weight, model.head.weight) and torch.equal(a[1].encoder.weight_ih_l0,
                                                                                  model.encoder.weight_ih_l0)


def test_a_shipped_checkpoint_is_untouched_by_a_run_through_the_runner() -> None:
    ws = Workspace(SHIPPED_LIBRARY)
    bundle = load_bundle("textclf-reviews-bilstm-additive", ws)
    before = {k: v.clone() for k, v in bundle.model.state_dict().items()}
    result = drive(iter_experiment("sanity", bundle, ExperimentOptions(n=1, methods=("attention", "loo")),
                                   workspace=ws))
    assert {r.method for r in result.rows} == {"attention", "loo"} and result.settings["checkpoint"] == bundle.name
    assert all(torch.equal(before[k], v) for k, v in bundle.model.state_dict().items())
