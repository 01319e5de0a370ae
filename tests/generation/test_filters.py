"""Logits filters: the lecture's worked numbers, independent numpy references, Hugging Face."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from playground.errors import ConfigError
from playground.generation.filters import (
    SamplingConfig,
    apply_filters,
    filter_stages,
    frequency_presence_penalty,
    min_p,
    repetition_penalty,
    temperature,
    top_k,
    top_p,
)

LECTURE_SCORES = torch.tensor([2.0, 1.0, 0.5, -0.5])


@pytest.mark.parametrize(
    "t, expected",
    [
        (0.5, (0.839, 0.114, 0.042, 0.006)),
        (1.0, (0.598, 0.220, 0.133, 0.049)),
        (2.0, (0.423, 0.256, 0.200, 0.121)),
        (5.0, (0.316, 0.259, 0.234, 0.192)),
    ],
)
def test_temperature_on_lecture_scores(t: float, expected: tuple[float, ...]) -> None:
    probs = temperature(LECTURE_SCORES, t).softmax(-1)
    assert [round(p, 3) for p in probs.tolist()] == list(expected)
    # independent: exp(s / T) / sum exp(s / T) in float64 numpy
    s = np.array([2.0, 1.0, 0.5, -0.5]) / t
    ref = np.exp(s) / np.exp(s).sum()
    np.testing.assert_allclose(probs.numpy(), ref, atol=1e-6)


def test_temperature_zero_is_one_hot_argmax() -> None:
    logits = torch.randn(3, 50, generator=torch.Generator().manual_seed(0))
    probs = temperature(logits, 0).softmax(-1)
    assert torch.equal(probs.argmax(-1), logits.argmax(-1))
    assert torch.equal(probs, torch.nn.functional.one_hot(logits.argmax(-1), 50).float())
    with pytest.raises(ConfigError, match="temperature"):
        temperature(logits, -1.0)


def _np_top_k(row: np.ndarray, k: int) -> np.ndarray:
    order = np.argsort(-row, kind="stable")
    out = np.full_like(row, -np.inf)
    out[order[:k]] = row[order[:k]]
    return out


@pytest.mark.parametrize("k", [1, 2, 5, 49, 50, 80])
def test_top_k_against_sorted_numpy_and_torch_topk(k: int) -> None:
    logits = torch.randn(4, 50, generator=torch.Generator().manual_seed(k))
    out = top_k(logits, k)
    for row, got in zip(logits.numpy(), out.numpy()):
        np.testing.assert_array_equal(got, _np_top_k(row, min(k, 50)))
    kept = torch.isfinite(out).sum(-1)
    assert kept.tolist() == [min(k, 50)] * 4
    values, _ = torch.topk(logits, min(k, 50), dim=-1)
    assert torch.equal(out.sort(-1, descending=True).values[:, : min(k, 50)], values)


def test_top_k_one_equals_argmax_and_zero_is_off() -> None:
    logits = torch.randn(5, 30, generator=torch.Generator().manual_seed(1))
    assert torch.equal(top_k(logits, 1).argmax(-1), logits.argmax(-1))
    assert torch.isfinite(top_k(logits, 1)).sum().item() == 5
    assert torch.equal(top_k(logits, 0), logits)
    assert torch.equal(top_k(logits, None), logits)


def _np_top_p(row: np.ndarray, p: float) -> set[int]:
    """Smallest prefix of tokens sorted by probability whose mass reaches p (float64)."""
    probs = np.exp(row - row.max())
    probs /= probs.sum()
    order = np.argsort(-probs, kind="stable")
    kept, mass = [], 0.0
    for i in order:
        kept.append(int(i))
        mass += probs[i]
        if mass >= p:
            break
    return set(kept)


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(st.floats(-6, 6, allow_nan=False, width=32), min_size=2, max_size=40, unique=True),
    p=st.floats(0.01, 0.99),
)
def test_top_p_keeps_smallest_set_reaching_p(values: list[float], p: float) -> None:
    logits = torch.tensor(values, dtype=torch.float64)
    out = top_p(logits, p)
    kept = set(torch.nonzero(torch.isfinite(out)).flatten().tolist())
    probs = logits.softmax(-1)
    kept_mass = probs[list(kept)].sum().item()
    # the set reaches p (up to rounding) ...
    assert kept_mass >= p - 1e-9
    # ... is made of the most likely tokens ...
    dropped = set(range(len(values))) - kept
    if dropped:
        assert probs[list(kept)].min() >= probs[list(dropped)].max()
    # ... and is the smallest: without its least likely token it falls short of p
    if len(kept) > 1:
        assert kept_mass - probs[list(kept)].min().item() < p + 1e-9
    # kept logits are untouched
    assert torch.equal(out[list(kept)], logits[list(kept)])
    # same set as the sorted numpy reference (unless p sits on a rounding boundary)
    ref = _np_top_p(np.array(values, dtype=np.float64), p)
    sorted_probs = np.sort(probs.numpy())[::-1]
    no_ties = np.all(np.diff(sorted_probs) < -1e-12)
    if no_ties and np.min(np.abs(sorted_probs.cumsum() - p)) > 1e-9:
        assert kept == ref


def test_top_p_edges() -> None:
    logits = torch.tensor([3.0, 1.0, 0.0])
    assert torch.equal(top_p(logits, 1.0), logits)
    assert torch.isfinite(top_p(logits, 1e-6)).sum() == 1  # the top token always survives
    with pytest.raises(ConfigError, match="top-p"):
        top_p(logits, 0.0)


def test_min_p_against_numpy() -> None:
    logits = torch.randn(3, 40, generator=torch.Generator().manual_seed(3))
    for p in (0.05, 0.2, 0.9):
        out = min_p(logits, p)
        for row, got in zip(logits.numpy().astype(np.float64), out.numpy()):
            probs = np.exp(row - row.max())
            probs /= probs.sum()
            keep = probs >= p * probs.max()
            assert np.array_equal(np.isfinite(got), keep)
            np.testing.assert_array_equal(got[keep], row[keep].astype(np.float32))
    assert torch.equal(min_p(logits, 0.0), logits)


def test_repetition_penalty_ctrl_rule() -> None:
    logits = torch.tensor([[2.0, -1.0, 0.5, -3.0, 4.0]])
    seen = torch.tensor([[True, True, False, False, True]])
    out = repetition_penalty(logits, seen, 2.0)
    assert out.tolist() == [[1.0, -2.0, 0.5, -3.0, 2.0]]  # positive / 2, negative * 2, unseen kept
    assert torch.equal(repetition_penalty(logits, seen, 1.0), logits)


def test_frequency_presence_penalty_openai_rule() -> None:
    logits = torch.tensor([[1.0, 1.0, 1.0, 1.0]])
    counts = torch.tensor([[0, 1, 3, 0]])
    out = frequency_presence_penalty(logits, counts, frequency=0.5, presence=0.25)
    assert out.tolist() == [[1.0, 1.0 - 0.5 - 0.25, 1.0 - 1.5 - 0.25, 1.0]]


def test_against_hugging_face_processors() -> None:
    logits_process = pytest.importorskip("transformers.generation.logits_process")
    gen = torch.Generator().manual_seed(7)
    scores = torch.randn(4, 64, generator=gen)
    ids = torch.randint(0, 64, (4, 12), generator=gen)
    hf_cases = [
        (lambda x: temperature(x, 0.7), logits_process.TemperatureLogitsWarper(0.7)),
        (lambda x: top_k(x, 9), logits_process.TopKLogitsWarper(9)),
        (lambda x: top_p(x, 0.8), logits_process.TopPLogitsWarper(0.8)),
        (lambda x: min_p(x, 0.1), logits_process.MinPLogitsWarper(0.1)),
    ]
    for ours, theirs in hf_cases:
        assert torch.equal(torch.isfinite(ours(scores)), torch.isfinite(theirs(ids, scores.clone())))
        mine, hf = ours(scores), theirs(ids, scores.clone())
        finite = torch.isfinite(mine)
        torch.testing.assert_close(mine[finite], hf[finite])
    seen = torch.zeros(4, 64, dtype=torch.bool).scatter_(1, ids, True)
    hf_rep = logits_process.RepetitionPenaltyLogitsProcessor(1.3)(ids, scores.clone())
    torch.testing.assert_close(repetition_penalty(scores, seen, 1.3), hf_rep)


def test_apply_filters_order_and_stages() -> None:
    logits = torch.tensor([[2.0, 1.0, 0.5, -0.5]])
    cfg = SamplingConfig(temperature=2.0, top_k=3, top_p=0.7)
    final = apply_filters(logits, cfg).softmax(-1)
    # by hand: T = 2 -> (0.423, 0.256, 0.200, 0.121); top-3 -> renormalised over 3;
    # top-p 0.7: 0.481 + 0.292 = 0.773 >= 0.7 keeps two tokens
    t2 = (logits / 2).softmax(-1)[0, :2]
    expected = torch.cat([t2 / t2.sum(), torch.zeros(2)])
    torch.testing.assert_close(final[0], expected)
    stages = filter_stages(logits, cfg)
    assert list(stages) == ["raw", "penalties", "temperature", "top_k", "top_p", "min_p"]
    torch.testing.assert_close(stages["min_p"], final)
    assert (stages["top_k"][0] > 0).sum() == 3
    torch.testing.assert_close(stages["raw"], logits.softmax(-1))


def test_greedy_config_filters_to_argmax() -> None:
    logits = torch.randn(2, 10, generator=torch.Generator().manual_seed(5))
    out = apply_filters(logits, SamplingConfig(temperature=0, top_k=5))
    assert torch.equal(out.softmax(-1).argmax(-1), logits.argmax(-1))
    assert torch.isfinite(out).sum() == 2


@pytest.mark.parametrize(
    "kwargs, word",
    [({"temperature": -0.1}, "temperature"), ({"top_k": -1}, "top-k"), ({"top_p": 0.0}, "top-p"),
     ({"min_p": 1.5}, "min-p"), ({"repetition_penalty": 0.0}, "repetition")],
)
def test_sampling_config_rejects_bad_values(kwargs: dict, word: str) -> None:
    with pytest.raises(ConfigError, match=word):
        SamplingConfig(**kwargs)


def test_sampling_config_round_trip() -> None:
    cfg = SamplingConfig(temperature=0.8, top_k=20, top_p=0.9, min_p=0.05, repetition_penalty=1.2)
    assert SamplingConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(ConfigError, match="Unknown sampling option"):
        SamplingConfig.from_dict({"temp": 1.0})


def test_draw_matches_multinomial_in_distribution() -> None:
    """The inverse-CDF draw and torch.multinomial sample the same distribution (chi-square on
    40,000 draws each, unnormalised rows with zeros), and a zero-probability token is never drawn."""
    from scipy.stats import chisquare

    from playground.generation.filters import draw

    probs = torch.tensor([0.0, 3.0, 1.0, 0.0, 0.5, 2.5, 0.0])  # total 7, zeros inside and at the end
    n = 40_000
    g = torch.Generator().manual_seed(0)
    ours = draw(probs.expand(n, -1), torch.rand(n, generator=g))
    theirs = torch.multinomial(probs, n, replacement=True, generator=g)
    expected = (probs.double() / probs.double().sum() * n).numpy()
    kept = expected > 0
    for sample in (ours, theirs):
        counts = torch.bincount(sample, minlength=probs.numel()).numpy()
        assert counts[~kept].sum() == 0
        assert chisquare(counts[kept], expected[kept]).pvalue > 1e-3
    # u just below 1 (where u * total can round up to total) still lands on the last kept token
    edge = draw(probs[None], torch.tensor([1 - 2**-24]))
    assert edge.tolist() == [5]
    assert draw(probs[None], torch.tensor([0.0])).tolist() == [1]  # u = 0: the first kept token
