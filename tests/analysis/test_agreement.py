"""Agreement statistics: Kendall tau-b (against scipy), Spearman, top-k Jaccard, JSD bounds."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import kendalltau, spearmanr

from playground.analysis.explain.agreement import agreement, agreement_table, jsd, kendall_tau, normalise, spearman_rho, \
    topk_jaccard, tvd


def test_kendall_self_is_one_and_reverse_is_minus_one() -> None:
    v = np.array([0.1, 0.5, 0.2, 0.9, 0.3])
    assert kendall_tau(v, v)[0] == pytest.approx(1.0)
    assert kendall_tau(v, -v)[0] == pytest.approx(-1.0)  # the reversed ranking
    assert kendall_tau(np.arange(6.0), -np.arange(6.0))[0] == pytest.approx(-1.0)
    assert spearman_rho(np.arange(6.0), -np.arange(6.0))[0] == pytest.approx(-1.0)


@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=3, max_value=30), st.integers(min_value=0, max_value=10_000))
def test_kendall_and_spearman_match_scipy(n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=n), rng.normal(size=n)
    b[: n // 3] = b[0]  # ties: tau-b matters
    ref = kendalltau(a, b, variant="b")
    tau, p = kendall_tau(a, b)
    assert tau == pytest.approx(ref.statistic, abs=1e-12)
    assert p == pytest.approx(ref.pvalue, abs=1e-12)
    assert spearman_rho(a, b)[0] == pytest.approx(spearmanr(a, b).statistic, abs=1e-12)


def test_constant_vector_gives_nan_not_an_error() -> None:
    assert math.isnan(kendall_tau([1.0, 1.0, 1.0], [1.0, 2.0, 3.0])[0])


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(min_value=-5, max_value=5, allow_nan=False), min_size=2, max_size=20),
       st.integers(min_value=0, max_value=1000))
def test_jsd_bounds(values: list[float], seed: int) -> None:
    p = np.array(values)
    q = np.random.default_rng(seed).normal(size=p.size)
    d = jsd(p, q)
    assert 0.0 <= d <= math.log(2) + 1e-12
    assert jsd(p, p) == pytest.approx(0.0, abs=1e-12)
    assert jsd(p, q) == pytest.approx(jsd(q, p), abs=1e-12)


def test_jsd_of_disjoint_supports_is_ln2_and_matches_scipy() -> None:
    from scipy.spatial.distance import jensenshannon

    assert jsd([1, 0, 0, 0], [0, 0, 1, 1]) == pytest.approx(math.log(2))
    p, q = np.array([0.1, 0.4, 0.5]), np.array([0.3, 0.3, 0.4])
    assert jsd(p, q) == pytest.approx(jensenshannon(p, q) ** 2, abs=1e-12)  # scipy gives sqrt(JSD), natural log


def test_normalise_and_tvd() -> None:
    assert normalise([1.0, -3.0]).tolist() == [0.25, 0.75]
    assert normalise([0.0, 0.0]).tolist() == [0.5, 0.5]
    assert tvd([0.5, 0.5], [1.0, 0.0]) == pytest.approx(0.5)


def test_topk_jaccard() -> None:
    a = [5, 4, 3, 2, 1]
    assert topk_jaccard(a, a, 2) == 1.0
    assert topk_jaccard(a, [1, 2, 3, 4, 5], 2) == 0.0
    assert topk_jaccard(a, [5, 1, 4, 2, 0], 2) == pytest.approx(1 / 3)  # {0,1} vs {0,2}


def test_keep_drops_special_units_and_absolute_compares_magnitudes() -> None:
    a = np.array([100.0, 1.0, 2.0, 3.0])  # unit 0 is a special token with a huge value
    b = np.array([-100.0, 1.0, 2.0, 3.0])
    r = agreement(a, b, keep=[False, True, True, True])
    assert r.n_units == 3 and r.kendall_tau == pytest.approx(1.0)
    assert agreement([1.0, -2.0, 3.0], [1.0, 2.0, 3.0]).kendall_tau == pytest.approx(1.0)
    assert agreement([1.0, -2.0, 3.0], [1.0, 2.0, 3.0], absolute=False).kendall_tau < 1.0


def test_table_has_every_pair() -> None:
    rng = np.random.default_rng(0)
    imps = {m: rng.random(7) for m in ("attention", "ig", "loo", "saliency")}
    df = agreement_table(imps)
    assert len(df) == 6
    assert set(zip(df.method_a, df.method_b)) == {("attention", "ig"), ("attention", "loo"), ("attention", "saliency"),
                                                  ("ig", "loo"), ("ig", "saliency"), ("loo", "saliency")}
    assert {"kendall_tau", "kendall_p", "spearman_rho", "topk_jaccard", "jsd"} <= set(df.columns)
