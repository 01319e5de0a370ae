"""The whole per-input analysis on every family: shapes, exclusions, exports, samples."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from playground.analysis.explain.per_input import METHODS, AnalysisOptions, InputSpec, analyze_checkpoint, analyze_prepared, \
    supported_methods
from playground.bundle import load_bundle, save_bundle
from playground.errors import PlaygroundError
from tests.analysis.conftest import tiny_seq2seq, tiny_vit

ALL = tuple(METHODS)


def test_gpt_every_method_one_row_and_strict_json(gpt_bundle) -> None:
    res = analyze_checkpoint(gpt_bundle, InputSpec(text="the quick brown fox", position=5),
                             AnalysisOptions(methods=ALL, ig_steps=16))
    assert set(res.importances) == set(ALL) and not res.notes
    for m, v in res.importances.items():
        assert v.shape == (1, 19) and np.isfinite(v).all(), m
        assert (v[0, 6:] == 0).all(), m  # after the query position
    assert len(res.agreement) == len(ALL) * (len(ALL) - 1) // 2
    assert res.heads is not None and res.heads.maps.shape == (2, 2, 6, 6) and res.heads.entropy.shape == (2, 2)
    d = json.loads(res.to_json())  # strict JSON: NaN became null
    assert d["summary"]["position"] == 5 and d["units"][:3] == ["t", "h", "e"]
    frame = res.to_frame()
    assert len(frame) == len(ALL) * 19 and set(frame.columns) >= {"method", "unit_label", "value"}


def test_gpt_target_token_and_errors(gpt_bundle) -> None:
    res = analyze_checkpoint(gpt_bundle, InputSpec(text="the lazy", target="d"), AnalysisOptions(methods=("loo",)))
    assert res.prepared.target_label == "d" and res.prepared.position == 7
    with pytest.raises(PlaygroundError, match="outside"):
        analyze_checkpoint(gpt_bundle, InputSpec(text="the", position=9))
    with pytest.raises(PlaygroundError, match="vocabulary"):
        analyze_checkpoint(gpt_bundle, InputSpec(text="the ZEBRA"))


def test_gpt_input_longer_than_the_context_is_cropped(gpt_bundle) -> None:
    text = "the quick brown fox jumps over the lazy dog"  # 43 tokens, block 32
    res = analyze_checkpoint(gpt_bundle, InputSpec(text=text, position=-1), AnalysisOptions(methods=("attention",)))
    assert len(res.units) == 32 and res.prepared.offset == 11 and res.prepared.position == 31


def test_special_tokens_are_excluded_from_rankings(workspace, pair_tok) -> None:
    from tests.analysis.conftest import tiny_gpt

    model = tiny_gpt(pair_tok.get_vocab_size())
    save_bundle(workspace, "g2", model, "gpt", model.config, tokenizer=pair_tok)
    b = load_bundle("g2", workspace)
    res = analyze_checkpoint(b, InputSpec(text="<bos>abcab"), AnalysisOptions(methods=("attention", "loo", "ig")))
    assert res.prepared.special == [True] + [False] * 5
    assert set(res.agreement.n_units) == {5}
    assert int(res.prepared.query.baselines[0, 0]) == pair_tok.token_to_id("<bos>")  # specials kept in the baseline


@pytest.mark.parametrize("family", ["rnn_seq2seq", "transformer_seq2seq"])
def test_seq2seq_gives_target_by_source_matrices(workspace, pair_tok, family) -> None:
    model = tiny_seq2seq(family, pair_tok.get_vocab_size())
    save_bundle(workspace, "s", model, family, model.config, tokenizer=pair_tok,
                extra={"sections": {"data": {"pairs": "copy", "n": 40, "seed": 0}}})
    b = load_bundle("s", workspace)
    res = analyze_checkpoint(b, InputSpec(text="abcde", position=-1), AnalysisOptions(methods=ALL, ig_steps=8))
    T = len(res.prepared.rows)
    assert res.prepared.rows[-1] == "<eos>" and res.prepared.selected == T - 1
    expected = set(supported_methods(family))
    assert set(res.importances) == expected and len(res.notes) == len(ALL) - len(expected)
    for v in res.importances.values():
        assert v.shape == (T, 5) and np.isfinite(v).all()
    torch.testing.assert_close(torch.tensor(res.importances["attention"]).sum(-1), torch.ones(T))
    assert res.heads.maps.shape[-2:] == (T, 5)
    sample = analyze_checkpoint(b, InputSpec(sample=0), AnalysisOptions(methods=("attention", "ig")))
    assert sample.prepared.info["reference"] and sample.prepared.source_text


def test_seq2seq_alignment_accuracy_against_gold(workspace, pair_tok) -> None:
    from playground.analysis.inputs import prepare_seq2seq

    model = tiny_seq2seq("rnn_seq2seq", pair_tok.get_vocab_size())
    p = prepare_seq2seq(model, pair_tok, "abc", family="rnn_seq2seq")
    T = len(p.rows)
    p.gold_alignment = [(t, t % 3) for t in range(T)]
    res = analyze_prepared(p, AnalysisOptions(methods=("attention", "loo")))
    acc = res.alignment.set_index("method").alignment_accuracy
    for m in ("attention", "loo"):
        hits = np.mean([np.argmax(np.abs(res.importances[m][t])) == t % 3 for t in range(T)])
        assert acc[m] == pytest.approx(hits)


def test_vit_shapes_sample_has_pointing_game(workspace) -> None:
    model = tiny_vit(image_size=32, patch_size=8, n_classes=4)
    save_bundle(workspace, "v", model, "vit", model.config, class_names=["circle", "square", "triangle", "cross"],
                extra={"sections": {"data": {"dataset": "shapes", "n": 40, "seed": 0, "image_size": 32}}})
    b = load_bundle("v", workspace)
    res = analyze_checkpoint(b, InputSpec(sample=2), AnalysisOptions(methods=ALL, ig_steps=8))
    assert res.prepared.mask is not None and res.prepared.true_label is not None
    assert "loo_delete" not in res.importances and len(res.importances) == len(ALL) - 1
    for v in res.importances.values():
        assert v.shape == (1, 16)
    pg = res.pointing.set_index("method")
    assert set(pg.index) == set(res.importances) and pg.mass_share.between(0, 1).all()
    assert res.heads.kind == "grid" and res.heads.maps.shape == (2, 2, 4, 4)
    up = analyze_checkpoint(b, InputSpec(image=np.zeros((20, 20, 3), dtype=np.uint8), target="square"),
                            AnalysisOptions(methods=("rollout", "saliency")))
    assert up.prepared.target_label == "square" and up.pointing is None


def test_flow_is_skipped_beyond_its_cap(gpt_bundle) -> None:
    res = analyze_checkpoint(gpt_bundle, InputSpec(text="the quick brown fox"),
                             AnalysisOptions(methods=("flow", "rollout"), flow_max_tokens=8))
    assert "flow" not in res.importances and any("flow" in n for n in res.notes)


def test_nan_agreement_on_constant_vectors_stays_json_safe(gpt_bundle) -> None:
    res = analyze_checkpoint(gpt_bundle, InputSpec(text="t"), AnalysisOptions(methods=("attention", "rollout")))
    assert math.isnan(res.agreement.kendall_tau[0])  # one unit: undefined
    assert json.loads(res.to_json())["agreement"][0]["kendall_tau"] is None


def test_a_method_the_model_cannot_support_becomes_a_note(workspace) -> None:
    from playground.analysis.inputs import prepare_classifier

    model = tiny_vit(pool="mean")
    p = prepare_classifier(model, torch.rand(3, 16, 16))
    res = analyze_prepared(p, AnalysisOptions(methods=("attention", "norm", "flow", "rollout", "loo")))
    assert set(res.importances) == {"attention", "rollout", "loo"}
    assert any(n.startswith("norm:") for n in res.notes) and any(n.startswith("flow:") for n in res.notes)
    assert res.heads.maps.shape[-2:] == (4, 4)


def test_an_invalid_head_is_reported_not_fatal(gpt_bundle) -> None:
    res = analyze_checkpoint(gpt_bundle, InputSpec(text="the quick"), AnalysisOptions(methods=("attention", "loo"), head=7))
    assert "attention" not in res.importances and "Head 7 does not exist" in res.notes[0]
