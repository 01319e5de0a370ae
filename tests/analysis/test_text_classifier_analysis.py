"""Generate, Analyze and the experiments on a text classifier: the shipped BiLSTM checkpoint
(J&W's model on generated reviews with known rationales) and a tiny Transformer ([CLS])."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from playground.analysis.experiments.core import drive
from playground.analysis.experiments.runner import ExperimentOptions, iter_experiment
from playground.analysis.explain.per_input import AnalysisOptions, InputSpec, analyze_checkpoint, analyze_prepared
from playground.analysis.inputs import prepare_text_classifier
from playground.bundle import load_bundle
from playground.data.reviews import make_reviews, text_tokenizer
from playground.errors import DataError
from playground.families.text_classifier.generation import classify_text
from playground.generation.api import GenerateRequest, explain_pick, generate
from playground.models.text_classifier import TextClassifier, TextClassifierConfig
from playground.settings import SHIPPED_LIBRARY
from playground.workspace import Workspace

SHIPPED = "textclf-reviews-bilstm-additive"
METHODS = ("attention", "norm", "saliency", "ixg", "ig", "loo", "loo_delete")


@pytest.fixture(scope="module")
def bundle():
    return load_bundle(SHIPPED, Workspace(SHIPPED_LIBRARY))


def test_generate_gives_class_probabilities_that_sum_to_one(bundle) -> None:
    done = generate(bundle, GenerateRequest(prompt="The plot was not good and the ending was awful"))
    probs = done.info["class_probs"]
    assert set(probs) == {"negative", "positive"} and abs(sum(probs.values()) - 1) < 1e-6
    assert done.samples[0].text == "negative" and probs["negative"] > 0.9  # its cues decide
    result = classify_text(bundle, "a truly wonderful film , we loved it")
    assert result.predicted == "positive" and abs(sum(result.probs) - 1) < 1e-6
    handoff = explain_pick({"checkpoint": SHIPPED, "family": bundle.family, "done": done}, "0:0")
    assert handoff["target_token"] == "negative" and handoff["input"].startswith("The plot")
    with pytest.raises(DataError, match="Type a text"):
        generate(bundle, GenerateRequest(prompt="  "))


def test_analyze_a_validation_review_scores_each_method_against_its_rationale(bundle) -> None:
    result = analyze_checkpoint(bundle, InputSpec(sample=0), AnalysisOptions(methods=METHODS + ("rollout",)))
    p = result.prepared
    T = len(p.units)
    assert set(result.importances) == set(METHODS) and all(v.shape == (1, T) for v in result.importances.values())
    assert abs(result.importances["attention"].sum() - 1) < 1e-5  # one distribution over the tokens
    assert all(np.isfinite(v).all() for v in result.importances.values())
    assert any("rollout" in n for n in result.notes)  # one attention layer: nothing to roll out, said so
    assert bool(result.ig["converged"][0])  # IG completeness from the <unk> baseline
    assert p.mask is not None and p.mask.any() and p.info["rationale_words"]
    assert set(result.pointing["method"]) == set(METHODS)  # plausibility against the ground truth
    assert result.pointing["mass_share"].between(0, 1).all()


def test_permutation_and_pointing_run_through_the_experiments_runner(bundle) -> None:
    ws = Workspace(SHIPPED_LIBRARY)
    perm = drive(iter_experiment("permutation", bundle, ExperimentOptions(n=3, n_perm=10), workspace=ws))
    assert len(perm.rows) == 3 and all(0 <= r.median_tvd <= 1 for r in perm.rows)
    point = drive(iter_experiment("pointing", bundle, ExperimentOptions(n=3, methods=("attention", "loo", "random")),
                                  workspace=ws))
    assert {r.method for r in point.rows} == {"attention", "loo", "random"} and len(point.rows) == 9
    assert all(0 <= r.mass_share <= 1 and r.object_patches > 0 for r in point.rows)


def test_a_transformer_classifier_explains_through_its_cls_row() -> None:
    reviews = make_reviews(50, seed=0)
    tok = text_tokenizer(r.text for r in reviews)
    torch.manual_seed(0)
    model = TextClassifier(TextClassifierConfig(vocab_size=tok.get_vocab_size(), encoder="transformer", pool="cls",
                                                emb_dim=16, hidden=16, n_head=2, n_layer=2, max_len=32)).eval()
    prepared = prepare_text_classifier(model, tok, reviews[0].text, family="text_classifier")
    result = analyze_prepared(prepared, AnalysisOptions(methods=("attention", "rollout", "relevancy", "ig", "loo")))
    T = len(prepared.units)
    assert set(result.importances) == {"attention", "rollout", "relevancy", "ig", "loo"}
    assert all(v.shape == (1, T) for v in result.importances.values())
    assert 0 < result.importances["attention"].sum() < 1  # the CLS row also attends to CLS
    assert abs(result.importances["rollout"].sum() - 1) < 1e-5  # renormalised without CLS
