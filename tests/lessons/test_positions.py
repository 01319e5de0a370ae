"""Positional encodings against an independent numpy table, the notes' printed figures, RoPE's
relative property, ALiBi's slopes from Press et al.'s rule, and the word-order demo."""
from __future__ import annotations

import math

import numpy as np
import pytest

from playground.lessons import LessonInputError
from playground.lessons.positions import LESSON, cosine_matrix, permutation_table


def pe_table(n: int, d: int) -> np.ndarray:
    pos = np.arange(n)[:, None]
    div = np.exp(np.arange(0, d, 2) * (-math.log(10000.0) / d))
    pe = np.zeros((n, d))
    pe[:, 0::2], pe[:, 1::2] = np.sin(pos * div), np.cos(pos * div)
    return pe


@pytest.fixture(scope="module")
def view():
    return LESSON.run(preset="The notes' table (128 positions, d = 64)")


def test_cosine_pairs_match_numpy_and_the_note_gives_the_printed_ones(view):
    cos = cosine_matrix(pe_table(128, 64))
    pairs = view.numbers["cosine_pairs"]
    assert pairs == {"0,1": pytest.approx(cos[0, 1], abs=1e-6), "0,50": pytest.approx(cos[0, 50], abs=1e-6),
                     "10,11": pytest.approx(cos[10, 11], abs=1e-6)}
    assert (round(cos[0, 1], 3), round(cos[0, 50], 3), round(cos[10, 11], 3)) == (0.966, 0.490, 0.966)
    note = next(n for n in view.notes if "Cosine similarities" in n)
    assert "(0, 1) = 0.966" in note and "(0, 50) = 0.490" in note and "≈ 0.95" in note and "≈ 0.4" in note


def test_shift_is_a_rotation_and_the_transposed_one_goes_backwards(view):
    assert view.numbers["shift_max_error"] < 1e-6 and view.numbers["shift_orthogonality_error"] < 1e-6
    assert view.numbers["transposed_shift_error_vs_p_minus"] < 1e-6
    assert view.numbers["transposed_shift_error_vs_p_plus"] > 0.5
    # independent: the notes' [[cos, -sin], [sin, cos]] on (sin ωp, cos ωp) gives (sin ω(p-Δ), cos ω(p-Δ))
    w, p, d = 0.3, 7.0, 2.0
    M = np.array([[math.cos(w * d), -math.sin(w * d)], [math.sin(w * d), math.cos(w * d)]])
    np.testing.assert_allclose(M @ [math.sin(w * p), math.cos(w * p)], [math.sin(w * (p - d)), math.cos(w * (p - d))])


def test_wavelengths(view):
    assert view.numbers["fastest_wavelength"] == pytest.approx(2 * math.pi)
    assert view.numbers["slowest_wavelength"] == pytest.approx(2 * math.pi * 10000 ** (62 / 64))
    assert view.numbers["slowest_wavelength_d512"] == pytest.approx(2 * math.pi * 10000 ** (510 / 512))
    assert round(view.numbers["slowest_wavelength_d512"]) == 60611  # printed: ≈ 62,832 (= 2π·10⁴, never reached)
    assert any("62,832" in n and "60,611" in n for n in view.notes)


def test_rope_scores_depend_only_on_the_offset_and_added_pe_does_not(view):
    table = view.tables["RoPE: the score depends only on m − n"]
    assert view.numbers["rope_spread_per_offset"] < 1e-4
    assert view.numbers["added_pe_spread_per_offset"] > 0.5
    spread = table.groupby("m − n")["RoPE q_m·k_n"].agg(lambda s: s.max() - s.min())
    assert spread.max() == pytest.approx(view.numbers["rope_spread_per_offset"])


@pytest.mark.parametrize("heads, expected", [
    (8, [2.0 ** -(i + 1) for i in range(8)]),
    # not a power of 2: the 8-head slopes, then every other one of the 16-head list 2^-0.5, 2^-1, 2^-1.5, ...
    (12, [2.0 ** -(i + 1) for i in range(8)] + [2.0 ** -(0.5 * (i + 1)) for i in range(16)][0::2][:4]),
])
def test_alibi_slopes(heads, expected):
    got = LESSON.run({"heads": heads}).numbers["alibi_slopes"]
    np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_word_order_without_positions_gives_the_same_outputs_reordered():
    none, none_numbers = permutation_table("none")
    assert none_numbers["word_difference"] < 1e-12 and none_numbers["pooled_difference"] < 1e-12
    assert (none["in 'dog bites man' (first 3 dims)"] == none["in 'man bites dog' (first 3 dims)"]).all()
    for encoding in ("sinusoidal (added)", "RoPE"):
        _, numbers = permutation_table(encoding)
        assert numbers["word_difference"] > 1e-2 and numbers["pooled_difference"] > 1e-3
    _, alibi = permutation_table("ALiBi")  # bidirectional ALiBi only sees |i - j|: a reversal keeps them all
    assert alibi["word_difference"] < 1e-12


def test_bad_inputs_and_caps():
    with pytest.raises(LessonInputError, match="even"):
        LESSON.run({"d_model": 63})
    with pytest.raises(LessonInputError, match="below the number of positions"):
        LESSON.run({"n_positions": 16, "position": 20})
    with pytest.raises(LessonInputError, match="at most 256"):
        LESSON.run({"n_positions": 100_000})
    with pytest.raises(LessonInputError, match="at most 128"):
        LESSON.run({"d_model": 4096})


def test_charts_are_valid_and_small():
    import json
    view = LESSON.run({"n_positions": 256, "d_model": 128})
    sizes = [len(json.dumps(c.to_dict())) for c in view.charts]
    assert len(sizes) == 3 and max(sizes) < 400_000
