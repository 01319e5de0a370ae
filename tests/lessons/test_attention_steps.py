"""Attention step by step: every stage against an independent numpy computation, the notes' worked
examples against the hand-checked values (slips included), SDPA agreement and the input caps."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from playground.lessons import LessonInputError
from playground.lessons.attention_steps import LESSON


def softmax_rows(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_soft_dictionary_lookup_has_the_corrected_numbers_and_says_the_printed_ones_differ():
    view = LESSON.run(preset="Soft dictionary lookup (notes)")
    np.testing.assert_allclose(view.numbers["scores"][0], [0.9, 0.1, 0.7, -0.9], atol=1e-9)
    np.testing.assert_allclose(view.numbers["weights"][0], [0.411, 0.185, 0.336, 0.068], atol=5e-4)
    np.testing.assert_allclose(view.numbers["output"][0], [18.09, 28.09], atol=5e-3)
    text = " ".join(view.notes)
    assert "0.399, 0.179, 0.327, 0.066" in text and "(0.411, 0.185, 0.336, 0.068)" in text
    assert "15.6, 26.0" in text and "18.09, 28.09" in text


def test_additive_example_matches_the_hand_computation_with_W_identity_and_v_ones():
    view = LESSON.run(preset="Additive attention, one decoder step (notes)")
    s = np.array([1.0, 0.0])
    h = np.array([[1, 0], [0.2, 0.1], [-0.5, 0.3], [0.1, -0.4]])
    e = np.tanh(s + h).sum(axis=1)  # v_a = (1, 1), W_a = I on s + h
    alpha = np.exp(e) / np.exp(e).sum()
    np.testing.assert_allclose(view.numbers["scores"][0], e, atol=1e-6)
    np.testing.assert_allclose(np.round(e, 3), [0.964, 0.933, 0.753, 0.421])
    np.testing.assert_allclose(view.numbers["weights"][0], [0.298, 0.289, 0.241, 0.173], atol=5e-4)
    np.testing.assert_allclose(view.numbers["output"][0], [0.252, 0.032], atol=5e-4)
    np.testing.assert_allclose(view.numbers["output"][0], alpha @ h, atol=1e-6)
    text = " ".join(view.notes)
    assert "0.292, 0.283, 0.236, 0.190" in text and "0.250, 0.023" in text
    assert "0.964, 0.934, 0.753, 0.420" in text  # printed scores e_2, e_4 are off in the third decimal
    assert "no √d_k step" in text


def test_causal_example_zeroes_the_future_and_matches_a_row_softmax():
    view = LESSON.run(preset="Causal mask on given scores (notes)")
    S = np.array([[1.1, 0, 0, 0], [-0.1, 0.5, 0, 0], [0.5, 1.2, 3.3, 0], [5.1, 2.9, -0.3, 4.2]])
    masked = np.where(np.tril(np.ones((4, 4), bool)), S, -np.inf)
    A = softmax_rows(masked)
    np.testing.assert_allclose(view.numbers["weights"], A, atol=1e-6)
    np.testing.assert_allclose(view.numbers["output"], A, atol=1e-6)  # V = I
    assert view.numbers["masked"][0][1] is None  # −∞ travels as null in JSON
    np.testing.assert_allclose(np.round(A[3], 3), [0.657, 0.073, 0.003, 0.267])
    assert view.notes == []  # the notes print no weights for it: nothing to correct


@pytest.mark.parametrize("mask", ["none", "causal"])
@pytest.mark.parametrize("temperature", [1.0, 0.5, 2.0])
def test_scaled_dot_equals_torch_sdpa(mask, temperature):
    rng = np.random.default_rng(0)
    Q, K, V = rng.normal(size=(5, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 3))
    fmt = lambda m: "; ".join(", ".join(repr(float(v)) for v in row) for row in m)
    view = LESSON.run({"queries": fmt(Q), "keys": fmt(K), "values": fmt(V), "score": "scaled dot: q·k / √d_k",
                       "mask": mask, "temperature": temperature})
    ref = F.scaled_dot_product_attention(torch.tensor(Q)[None], torch.tensor(K)[None], torch.tensor(V)[None],
                                         is_causal=mask == "causal", scale=1 / (2.0 * temperature))[0].numpy()
    np.testing.assert_allclose(view.numbers["output"], ref, atol=1e-5)
    np.testing.assert_allclose(view.numbers["scaled"], Q @ K.T / (2.0 * temperature), atol=1e-5)
    np.testing.assert_allclose(view.numbers["row_sums"], 1.0, atol=1e-6)
    p = np.array(view.numbers["weights"])
    entropy = -np.sum(np.where(p > 0, p * np.log(np.where(p > 0, p, 1)), 0), axis=1)
    np.testing.assert_allclose(view.numbers["entropy_nats"], entropy, atol=1e-5)


def test_view_has_a_table_per_stage_and_one_chart():
    view = LESSON.run()
    stages = view.tables["Stages 1–4 (one row per query)"]
    assert stages["stage"].iloc[0] == "1. scores" and stages["stage"].nunique() == 4 and len(stages) == 4 * 3
    assert stages.loc[stages["stage"] == "3. masked", "k2"].iloc[0] == "−∞"
    assert len(view.charts) == 1
    view.charts[0].to_dict()  # a valid vega-lite spec


@pytest.mark.parametrize("given, message", [
    ({"queries": "1, 2; 3"}, "same number of entries"),
    ({"queries": "1, x"}, "'x' is not a number"),
    ({"queries": "1, 0, 0"}, r"same length \(d_k\)"),
    ({"values": "1, 2"}, "One value per key"),
    ({"queries": "1, 0, 1, 0", "mask": "causal"}, "one query per key"),
    ({"queries": "nan, 1; 1, 1; 0, 0"}, "finite"),
    ({"temperature": 0}, "at least 0.05"),
    ({"score": "cosine"}, "choose one of"),
])
def test_bad_inputs_say_what_to_change(given, message):
    with pytest.raises(LessonInputError, match=message):
        LESSON.run(given)


def test_caps_refuse_big_matrices_before_parsing_them():
    nine_rows = "; ".join(["1, 0"] * 9)
    with pytest.raises(LessonInputError, match="at most 8 rows"):
        LESSON.run({"keys": nine_rows})
    with pytest.raises(LessonInputError, match="at most 8 numbers per row"):
        LESSON.run({"queries": ", ".join(["1"] * 9)})
    with pytest.raises(LessonInputError, match="at most 600 characters"):
        LESSON.run({"queries": "1, " * 1000})
