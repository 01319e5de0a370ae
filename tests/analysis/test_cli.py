"""`python -m playground analyze`: the CLI's attributions equal captum run directly on the
Hugging Face GPT-2 export of the same checkpoint; exports; the reserved `experiment` word."""
from __future__ import annotations

import json

import torch

from playground.__main__ import main


def _cli(workspace, *args: str) -> int:
    return main(["--workspace", str(workspace.root), "analyze", *args])


def test_cli_attributions_equal_captum_on_the_hf_export(gpt_bundle, workspace, tmp_path, capsys) -> None:
    from captum.attr import (
        FeatureAblation,
        LayerGradientXActivation,
        LayerIntegratedGradients,
    )
    from transformers import GPT2LMHeadModel

    from playground.models.export_hf import export_hf_gpt2

    out = tmp_path / "r.json"
    rc = _cli(workspace, "tiny-gpt", "--input", "the quick brown", "--position", "-3", "--target", "o",
              "--methods", "ig,saliency,ixg,loo", "--out", str(out))
    assert rc == 0
    printed = capsys.readouterr().out
    assert "agreement" in printed and "IG: steps" in printed
    res = json.loads(out.read_text())
    s = res["summary"]
    pos, target, base_id = s["position"], s["target_id"], s["baseline_id"]
    steps = res["ig"]["steps"][0]

    ids = torch.tensor([gpt_bundle.tokenizer.encode("the quick brown", add_special_tokens=False).ids])
    assert [gpt_bundle.tokenizer.id_to_token(i) for i in ids[0].tolist()] == res["units"]
    hf_dir = export_hf_gpt2(gpt_bundle.model, gpt_bundle.model_config, tmp_path / "hf")
    hf = GPT2LMHeadModel.from_pretrained(hf_dir).eval()

    def f(x: torch.Tensor) -> torch.Tensor:
        return hf(input_ids=x).logits[:, pos].log_softmax(-1)[:, target]

    base = torch.full_like(ids, base_id)
    ig = LayerIntegratedGradients(f, hf.transformer.wte).attribute(ids, baselines=base, n_steps=steps).sum(-1)[0]
    grads = LayerGradientXActivation(f, hf.transformer.wte, multiply_by_inputs=False).attribute(ids)[0]
    ixg = LayerGradientXActivation(f, hf.transformer.wte).attribute(ids).sum(-1)[0]
    with torch.no_grad():
        ref = hf(input_ids=ids).logits[:, pos].softmax(-1)
    tvd = lambda x: 0.5 * (hf(input_ids=x).logits[:, pos].softmax(-1) - ref).abs().sum(-1)
    with torch.no_grad():
        loo = -FeatureAblation(tvd).attribute(ids, baselines=base_id, feature_mask=torch.arange(ids.shape[1])[None])[0]

    imp = {m: torch.tensor(v[0]) for m, v in res["importances"].items()}
    torch.testing.assert_close(imp["ig"], ig.detach().float(), atol=1e-4, rtol=0)
    torch.testing.assert_close(imp["saliency"], grads.norm(dim=-1).detach().float(), atol=1e-4, rtol=0)
    torch.testing.assert_close(imp["ixg"], ixg.detach().float(), atol=1e-4, rtol=0)
    torch.testing.assert_close(imp["loo"], loo.float(), atol=1e-4, rtol=0)
    assert (imp["ig"][pos + 1:] == 0).all()  # tokens after the query


def test_cli_writes_csv_and_agreement(gpt_bundle, workspace, tmp_path) -> None:
    import pandas as pd

    out = tmp_path / "r.csv"
    assert _cli(workspace, "tiny-gpt", "--input", "the lazy dog", "--methods", "attention,rollout,loo",
                "--out", str(out)) == 0
    df = pd.read_csv(out)
    assert set(df.method) == {"attention", "rollout", "loo"} and len(df) == 3 * 12
    agree = pd.read_csv(tmp_path / "r.agreement.csv")
    assert len(agree) == 3 and agree.kendall_tau.between(-1, 1).all()


def test_cli_user_errors_are_one_line(gpt_bundle, workspace, capsys) -> None:
    assert _cli(workspace, "tiny-gpt", "--input", "the", "--methods", "attention,bogus") == 2
    assert "Unknown method" in capsys.readouterr().err
    assert _cli(workspace, "tiny-gpt", "--input", "the", "--target", "quick") == 2
    assert "single token" in capsys.readouterr().err


def test_experiment_is_a_reserved_first_word(monkeypatch, gpt_bundle, workspace) -> None:
    seen = {}

    def configure(parser):
        parser.add_argument("checkpoint")
        parser.add_argument("--n", type=int, default=3)
        parser.set_defaults(func=lambda args: seen.update(vars(args)) or 0)

    import playground.cli.analyze_experiment as extension

    # patch the real module's hook (replacing the module would hide its other names, e.g. the
    # bench target's registration, from whatever imports it first during this test)
    monkeypatch.setattr(extension, "configure", configure)
    assert _cli(workspace, "experiment", "tiny-gpt", "--n", "7") == 0
    assert seen["checkpoint"] == "tiny-gpt" and seen["n"] == 7


def test_cli_json_holds_the_whole_attention_maps_not_the_display_window(gpt_bundle, workspace, tmp_path) -> None:
    """A 30-token prompt: the page draws the last 24 keys of each head, the export writes every
    query over every key, each row summing to 1 (the window's rows summed to 0.116 in the report)."""
    import numpy as np

    from playground.analysis.explain.per_input import AnalysisOptions

    text = "the quick brown fox jumps over"  # 30 characters, one token each (the model's context is 32)
    out = tmp_path / "r.json"
    assert _cli(workspace, "tiny-gpt", "--input", text, "--methods", "attention", "--out", str(out)) == 0
    heads = json.loads(out.read_text())["heads"]
    maps = np.array(heads["maps"])  # [L, H, Q, K]
    n = len(text)
    assert maps.shape[-2:] == (n, n) and heads["key_labels"] == heads["query_labels"] == list(text)
    np.testing.assert_allclose(maps.sum(-1), 1.0, atol=1e-5)  # every row, every head
    assert np.triu(maps, k=1).max() == 0  # causal: nothing after the query
    window = AnalysisOptions().head_window
    shown = np.array(heads["display"]["maps"])
    assert shown.shape[-1] == window < n and shown.sum(-1).min() < 0.999  # the page's window is a part
