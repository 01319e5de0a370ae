"""Sampling: the temperature table against the hand-checked values and the notes' printed rows, the
filters against an independent numpy implementation, greedy, and the caps."""
from __future__ import annotations

import numpy as np
import pytest

from playground.lessons import LessonInputError
from playground.lessons.sampling import LESSON


def softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()


def test_temperature_table_has_the_verified_values_and_flags_each_printed_row():
    view = LESSON.run(preset="The notes' scores (2, 1, 0.5, −0.5)")
    table = view.numbers["temperature_table"]
    expected = {"0.5": (0.839, 0.114, 0.042, 0.006), "1": (0.598, 0.220, 0.133, 0.049),
                "2": (0.423, 0.256, 0.200, 0.121), "5": (0.316, 0.259, 0.234, 0.192)}
    for t, probs in expected.items():
        np.testing.assert_allclose(np.round(table[t], 3), probs)
        np.testing.assert_allclose(table[t], softmax(np.array([2, 1, 0.5, -0.5]) / float(t)), atol=1e-6)
    notes = " ".join(view.notes)
    assert "T = 1: the notes print (0.506, 0.186, 0.113, 0.042), summing to 0.847" in notes
    assert "T = 2: the notes print (0.356, 0.224, 0.192, 0.120), summing to 0.892" in notes
    assert "T = 0.5: the notes print (0.844, 0.114, 0.038, 0.004)" in notes
    assert "T = 5: the notes print (0.281, 0.258, 0.248, 0.213)" in notes
    assert "T = 0.1" not in notes  # (1.000, 0.000, 0.000, 0.000) is right to 3 decimals


def numpy_filters(z, t, k, p, m):
    x = z / t
    if k:
        x = np.where(x >= np.sort(x)[-k], x, -np.inf)
    if p < 1:
        probs = softmax(x)
        order = np.argsort(-probs, kind="stable")
        before = np.cumsum(probs[order]) - probs[order]
        drop = np.zeros_like(x, bool)
        drop[order] = before >= p
        drop[order[0]] = False
        x = np.where(drop, -np.inf, x)
    if m:
        probs = softmax(x)
        x = np.where(probs >= m * probs.max(), x, -np.inf)
    return softmax(x)


@pytest.mark.parametrize("t, k, p, m", [(1.0, 0, 1.0, 0.0), (0.7, 3, 1.0, 0.0), (1.3, 0, 0.8, 0.0),
                                        (2.0, 0, 1.0, 0.2), (0.5, 5, 0.9, 0.05)])
def test_final_distribution_matches_numpy(t, k, p, m):
    z = np.array([3, 2.5, 2, 1, 0.5, 0, -0.5, -1, -1.5, -2])
    view = LESSON.run({"logits": ", ".join(map(str, z)), "temperature": t, "top_k": k, "top_p": p, "min_p": m})
    final, expected = np.array(view.numbers["stages"]["min_p"]), numpy_filters(z, t, k, p, m)
    np.testing.assert_allclose(final, expected, atol=1e-6)
    assert view.numbers["kept"] == [f"#{i + 1}" for i in np.flatnonzero(expected > 0)]
    nz = expected[expected > 0]
    assert view.numbers["entropy_final"] == pytest.approx(-(nz * np.log(nz)).sum(), abs=1e-6)
    np.testing.assert_allclose(view.numbers["stages"]["raw"], softmax(z), atol=1e-6)


def test_zero_temperature_is_greedy():
    view = LESSON.run({"temperature": 0})
    assert view.numbers["stages"]["min_p"] == [1.0, 0.0, 0.0, 0.0] and view.numbers["kept"] == ["#1"]
    assert len(view.charts) == 2 and all(c.to_dict() for c in view.charts)


@pytest.mark.parametrize("given, message", [
    ({"logits": "1"}, "at least 2"),
    ({"logits": ", ".join(["1"] * 33)}, "at most 32 numbers"),
    ({"logits": "1, two"}, "'two' is not a number"),
    ({"logits": "1, 1e9"}, "finite and at most"),
    ({"top_p": 0}, "at least 0.01"),
    ({"top_k": 2.5}, "whole number"),
    ({"logits": "1, " * 300}, "at most 400 characters"),
])
def test_bad_inputs(given, message):
    with pytest.raises(LessonInputError, match=message):
        LESSON.run(given)
