"""Why √d_k: the measured variance against the analytic d_k (and 1 when scaled), every row statistic
recomputed independently with scipy on the same draws, and the cap checked before drawing."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import softmax
from scipy.stats import entropy

from playground.lessons import LessonInputError, scaling
from playground.lessons.scaling import LESSON, d_k_grid


@pytest.fixture(scope="module")
def view():
    return LESSON.run({"keys": 64, "largest_d_k": 256, "queries": 300, "seed": 3})


def test_variance_follows_d_k_unscaled_and_one_scaled(view):
    rows = view.numbers["rows"]
    assert [r["d_k"] for r in rows] == [1, 2, 4, 8, 16, 32, 64, 128, 256]
    n = 300 * 64
    for r in rows:  # var of q·k = d_k; the sample variance of n draws has relative sd ≈ sqrt(2/n)·sqrt(kurtosis-ish)
        assert r["var_unscaled"] == pytest.approx(r["d_k"], rel=0.1)
        assert r["var_scaled"] == pytest.approx(1.0, rel=0.1)
        assert r["std_unscaled"] == pytest.approx(math.sqrt(r["d_k"]), rel=0.05)
    assert n > 10_000


def test_row_statistics_match_scipy_on_the_same_draws(view):
    rng = np.random.default_rng(3)
    for r in view.numbers["rows"]:
        d = r["d_k"]
        q = rng.standard_normal((300, 1, d), dtype=np.float32)
        k = rng.standard_normal((300, 64, d), dtype=np.float32)
        s = np.einsum("nod,ntd->nt", q.astype(np.float64), k.astype(np.float64))
        for tag, x in (("unscaled", s), ("scaled", s / math.sqrt(d))):
            p = softmax(x, axis=1)
            assert r[f"entropy_{tag}"] == pytest.approx(entropy(p, axis=1).mean(), abs=1e-5)
            assert r[f"max_weight_{tag}"] == pytest.approx(p.max(1).mean(), abs=1e-5)
            assert r[f"one_hot_{tag}"] == pytest.approx((p.max(1) > 0.99).mean(), abs=1e-6)
            jacobians = np.stack([np.diag(row) - np.outer(row, row) for row in p])  # ∂p/∂x per row
            assert r[f"grad_norm_{tag}"] == pytest.approx(np.linalg.norm(jacobians, axis=(1, 2)).mean(), abs=1e-5)


def test_unscaled_saturates_and_scaled_stays_broad(view):
    rows = view.numbers["rows"]
    assert view.numbers["log_T"] == pytest.approx(math.log(64)) and round(math.log(64), 2) == 4.16
    assert rows[-1]["entropy_unscaled"] < 0.5
    assert 3.0 < rows[-1]["entropy_scaled"] < math.log(64)
    assert rows[-1]["one_hot_unscaled"] > 0.3 and rows[-1]["one_hot_scaled"] == 0
    assert all(abs(r["entropy_scaled"] - rows[0]["entropy_scaled"]) < 0.15 for r in rows)
    # softmax([32, 0, ...]) over 64 keys leaves 63·e^-32 / (1 + 63·e^-32) beside the 32
    assert view.numbers["weight_left_beside_32"] == pytest.approx(63 * math.exp(-32), rel=1e-9)
    assert len(view.charts) == 3 and all(c.to_dict() for c in view.charts)


def test_the_notes_std_figures_are_the_square_roots():
    # d_k = 64, 256, 1024 -> std 8, 16, 32, as printed: checked, no slip here.
    assert [math.sqrt(d) for d in (64, 256, 1024)] == [8, 16, 32]
    assert d_k_grid(1024)[-1] == 1024 and d_k_grid(100) == [1, 2, 4, 8, 16, 32, 64, 100]


def test_oversized_draws_are_refused_before_any_random_number(monkeypatch):
    def no_rng(*args, **kwargs):
        raise AssertionError("drew random numbers before checking the cap")

    monkeypatch.setattr(scaling.np.random, "default_rng", no_rng)
    with pytest.raises(LessonInputError, match="draws at most"):
        LESSON.run({"keys": 512, "largest_d_k": 1024, "queries": 1000})
    with pytest.raises(LessonInputError, match="at most 1024"):
        LESSON.run({"largest_d_k": 4096})
