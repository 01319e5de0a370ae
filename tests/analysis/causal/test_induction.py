"""The induction known result: its training data, its attention-only model, the verdict, and the
shipped gpt-induction-2l, where head patching ranks first the heads the Heads view's scores name."""
from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from playground.analysis.causal.induction import (
    EFFECT_MIN,
    SCORE_MIN,
    HeadsFound,
    Recipe,
    attention_only_gpt,
    bundle_heads,
    find_heads,
    induction_batch,
)
from playground.analysis.heads.report import analyse_heads, family_data
from playground.analysis.inputs import special_id_set
from playground.bundle import load_bundle
from playground.settings import SHIPPED_LIBRARY

SHIPPED = SHIPPED_LIBRARY / "models" / "gpt-induction-2l"


def test_a_span_repeats_right_after_itself_with_its_own_length_and_offset_per_row():
    g = torch.Generator().manual_seed(0)
    pool = torch.arange(2, 1024)
    x, copied = induction_batch(pool, 32, 64, g, min_span=4)
    assert x.min() >= 2 and x.max() < 1024  # only pool tokens (no specials)
    lengths, starts = set(), set()
    for row in range(64):
        cols = copied[row].nonzero().flatten()  # the second copy after its first token
        n = int(cols.numel()) + 1
        assert 4 <= n <= 16 and torch.equal(cols, torch.arange(int(cols[0]), int(cols[0]) + n - 1))
        assert torch.equal(x[row, cols], x[row, cols - n])  # each copied token is the one n back
        assert torch.equal(x[row, cols[0] - 1], x[row, cols[0] - 1 - n])  # the copy's first token repeats too
        lengths.add(n)
        starts.add(int(cols[0]) - 1 - n)  # the first copy's start (the prefix length)
    assert len(lengths) > 5 and len(starts) > 5


def test_the_attention_only_model_adds_nothing_through_its_mlps():
    model = attention_only_gpt(64, Recipe(n_head=2))
    x = torch.randint(64, (2, 10))
    outs = []
    hooks = [b.mlp.register_forward_hook(lambda _m, _a, out: outs.append(out)) for b in model.blocks]
    model(x)
    for h in hooks:
        h.remove()
    assert len(outs) == 2 and all(float(o.detach().abs().max()) == 0.0 for o in outs)
    assert not any(p.requires_grad for b in model.blocks for p in b.mlp.proj.parameters())


def _found(previous, induction, patching, pairs=8) -> HeadsFound:
    return HeadsFound(np.array(previous), np.array(induction), np.array(patching), pairs, 5.0, {})


def test_the_verdict_passes_only_when_patching_ranks_first_the_heads_the_scores_name():
    good = _found([[0.1, 0.9], [0.1, 0.1]], [[0.0, 0.0], [0.8, 0.2]], [[0.1, 0.95], [0.7, 0.2]])
    assert good.verdict() == [] and good.agree()
    swapped = _found([[0.1, 0.9], [0.1, 0.1]], [[0.0, 0.0], [0.8, 0.2]], [[0.1, 0.95], [0.2, 0.7]])
    assert not swapped.agree() and swapped.verdict() == [
        "layer 1: the top induction head is H0 but patching ranks H1 first",
        f"layer 1: H0's patching effect is 0.20 < {EFFECT_MIN}"]
    weak = _found([[0.1, 0.3], [0.1, 0.1]], [[0.0, 0.0], [0.8, 0.2]], [[0.1, 0.95], [0.7, 0.2]])
    assert weak.agree() and weak.verdict() == [f"layer 0: the top previous-token score is 0.30 < {SCORE_MIN}"]
    assert _found([[0.1, 0.9], [0, 0]], [[0, 0], [0.8, 0.2]], [[0, 0], [0, 0]], pairs=0).verdict()[0].startswith(
        "no induction pair")


@pytest.fixture(scope="module")
def shipped():
    """The shipped bundle, the Heads view's inputs for it (64 validation windows, seed 0), its
    token pool and specials, and what find_heads reports (about 2 s, most of it encoding the text)."""
    bundle = load_bundle(SHIPPED)
    _, inputs = family_data(bundle, 64, 0)
    specials = special_id_set(bundle.tokenizer)
    pool = [i for i in range(bundle.model_config.vocab_size) if i not in specials]
    return bundle, inputs, pool, specials, find_heads(bundle.model, inputs, pool, specials)


def test_the_shipped_checkpoint_is_a_two_layer_attention_only_gpt(shipped):
    bundle = shipped[0]
    cfg = bundle.model_config
    assert (cfg.n_layer, cfg.vocab_size, bundle.family) == (2, 1024, "gpt")
    assert all(float(p.detach().abs().max()) == 0.0 for b in bundle.model.blocks for p in b.mlp.proj.parameters())


def test_patching_ranks_first_the_heads_the_heads_view_scores_name(shipped):
    found = shipped[-1]
    assert found.pairs == 8  # every pair's corruption moved the answer: the mean is over 8 pairs
    assert found.verdict() == [], found.to_dict()
    named = found.named()
    assert named["patched_0"] == named["previous"] and named["patched_1"] == named["induction"]
    assert found.uniform == pytest.approx({"previous": 0.0987, "induction": 0.0424}, abs=1e-4)  # mean 1/(q+1)
    assert SCORE_MIN > 5 * max(found.uniform.values())
    assert found.in_context_drop > 5  # nats: the second copy is predicted by copying


def test_a_fresh_model_of_the_same_shape_fails_the_check(shipped):
    bundle, inputs, pool, specials, found = shipped
    recipe = Recipe(**{**bundle.config["induction"]["recipe"], "seed": 1})
    fresh = attention_only_gpt(bundle.model_config.vocab_size, recipe).eval()
    verdict = find_heads(fresh, inputs, pool, specials).verdict()
    assert verdict and found.verdict() == []


def test_an_induction_pattern_that_writes_little_is_not_what_patching_finds(shipped):
    """Scale the top induction head's output projection by 0.1: its attention (so every score) is
    unchanged, but it no longer carries the answer, and the check must say so."""
    bundle, inputs, pool, specials, found = shipped
    model = copy.deepcopy(bundle.model)
    head, hd = found.named()["induction"][1], model.config.d_model // model.config.n_head
    with torch.no_grad():
        model.blocks[1].attn.out_proj.weight[:, head * hd:(head + 1) * hd] *= 0.1
    quiet = find_heads(model, inputs, pool, specials)
    assert np.array_equal(quiet.induction, found.induction) and np.array_equal(quiet.previous, found.previous)
    assert quiet.patching[1, head] < 0.5 * found.patching[1, head]
    assert not quiet.agree() and quiet.verdict()[0].startswith(f"layer 1: the top induction head is H{head} but")


@pytest.mark.slow
def test_the_scores_are_the_heads_views_own(shipped):
    """bundle_heads (what the script records) and analyse_heads (the Heads view) give the same
    previous-token and induction scores and baselines."""
    bundle, found = shipped[0], shipped[-1]
    again = bundle_heads(bundle)
    assert np.array_equal(again.previous, found.previous) and np.array_equal(again.patching, found.patching)
    report = analyse_heads(bundle, n=64, seed=0)
    assert np.allclose(found.previous, [report.positional["previous"][f"blocks.{i}.attn"] for i in range(2)])
    assert np.allclose(found.induction, [report.induction[f"blocks.{i}.attn"] for i in range(2)])
    assert found.uniform["previous"] == pytest.approx(report.uniform["previous"])
    assert found.uniform["induction"] == pytest.approx(report.uniform["induction"])
    recorded = bundle.config["induction"]["found"]  # what the script wrote when it shipped the bundle
    assert np.allclose(recorded["previous"], found.previous, atol=1e-4)
    assert np.allclose(recorded["patching"], found.patching, atol=1e-4) and recorded["verdict"] == []
