"""The agreement summary compares like with like: J&W's sentence about gradient vs
leave-one-out is checked against the (gradient, leave-one-out) pairs themselves, and Table 2 is
quoted only for J&W's definitions on a text classifier."""
from __future__ import annotations

from playground.analysis.experiments.core import drive
from playground.analysis.experiments.jain_wallace import JW_REFERENCES, AgreementResult, AgreementRow
from playground.analysis.experiments.runner import ExperimentOptions, iter_experiment
from playground.analysis.experiments.summary import summarize
from playground.bundle import load_bundle
from playground.settings import SHIPPED_LIBRARY
from playground.workspace import Workspace


def synthetic(taus: dict[tuple[str, str], float], family: str = "text_classifier", n: int = 4) -> AgreementResult:
    """An agreement result whose every example has the given τ per pair (p = 0.01)."""
    views = sorted({a for a, _ in taus if a in ("attention", "rollout")})
    refs = sorted({m for pair in taus for m in pair} - set(views))
    rows = [AgreementRow(i, a, b, 10, tau, 0.01) for i in range(n) for (a, b), tau in taus.items()]
    return AgreementResult(settings={"views": views, "references": refs, "family": family, "encoder": "bilstm"},
                           rows=rows)


def test_sentence_uses_the_gradient_loo_pairs_not_the_first_reference_pair() -> None:
    # references saliency, ixg, loo: the first reference pair is two gradient methods (0.9); the
    # gradient / leave-one-out pairs (0.3, 0.2) agree LESS than attention does with them (0.5)
    result = synthetic({("attention", "saliency"): 0.5, ("attention", "ixg"): 0.5, ("attention", "loo"): 0.5,
                        ("saliency", "ixg"): 0.9, ("saliency", "loo"): 0.3, ("ixg", "loo"): 0.2})
    text = " ".join(summarize(result).findings)
    assert "As in Jain & Wallace" not in text  # the old summary printed it here (0.9 > 0.5), falsely
    assert "Unlike Jain & Wallace" in text and "saliency and loo agree with each other (τ(saliency, loo) = 0.3)" in text

    agree = synthetic({("attention", "jw_grad"): 0.3, ("attention", "loo_delete"): 0.25,
                       ("jw_grad", "loo_delete"): 0.6})
    text = " ".join(summarize(agree).findings)
    assert "As in Jain & Wallace, jw_grad and loo_delete agree with each other (τ(jw_grad, loo_delete) = 0.6)" in text

    only_gradients = synthetic({("attention", "saliency"): 0.5, ("attention", "ixg"): 0.5, ("saliency", "ixg"): 0.9})
    text = " ".join(summarize(only_gradients).findings)
    assert "As in Jain" not in text and "No gradient / leave-one-out pair" in text


def test_table2_is_quoted_only_for_the_same_definition_and_model_kind() -> None:
    taus = {("attention", "jw_grad"): 0.3, ("attention", "loo_delete"): 0.25, ("jw_grad", "loo_delete"): 0.6}
    text = " ".join(summarize(synthetic(taus)).findings)
    assert "τ(α, gradient) over five datasets (BiLSTM + additive attention): mean 0.13–0.44" in text
    assert "τ(α, leave-one-out)" in text and "τ(gradient, leave-one-out)" in text and "0.24–0.66" in text
    other = " ".join(summarize(synthetic({("attention", "saliency"): 0.3, ("attention", "loo"): 0.2,
                                          ("saliency", "loo"): 0.5})).findings)
    assert "Table 2" in other and "another definition" in other and "mean 0.13–0.44" not in other
    gpt = " ".join(summarize(synthetic(taus, family="gpt")).findings)
    assert "no published figure for this model kind" in gpt and "0.13–0.44" not in gpt


def test_agreement_experiment_defaults_to_jw_definitions_and_records_precision() -> None:
    ws = Workspace(SHIPPED_LIBRARY)
    bundle = load_bundle("textclf-reviews-avg-additive", ws)
    result = drive(iter_experiment("agreement", bundle, ExperimentOptions(n=2, views=("attention",)), workspace=ws))
    assert tuple(result.settings["references"]) == JW_REFERENCES == ("jw_grad", "loo_delete")
    assert {(r.method_a, r.method_b) for r in result.rows} == {("attention", "jw_grad"), ("attention", "loo_delete"),
                                                               ("jw_grad", "loo_delete")}
    numerics = result.extra["numerics"]
    assert numerics["dtype"] == "float32" and numerics["n"] == 2 and 0 <= numerics["n_saturated"] <= 2
    r64 = drive(iter_experiment("agreement", bundle, ExperimentOptions(n=2, views=("attention",), float64=True),
                                workspace=ws))
    assert r64.extra["numerics"]["dtype"] == "float64" and r64.settings["dtype"] == "float64"
    assert bundle.model.head.weight.dtype.is_floating_point and str(bundle.model.head.weight.dtype) == "torch.float32"


def test_every_example_experiment_runs_in_float64() -> None:
    ws = Workspace(SHIPPED_LIBRARY)
    bundle = load_bundle("textclf-reviews-avg-additive", ws)
    for name in ("permutation", "adversarial", "erasure", "aopc", "pointing"):
        opts = ExperimentOptions(n=1, float64=True, n_perm=5, steps=3, k=2, random_draws=2)
        result = drive(iter_experiment(name, bundle, opts, workspace=ws))
        assert result.examples_done == 1 and result.extra["numerics"]["dtype"] == "float64", name
        summarize(result).to_markdown()
