"""Attention step by step: scores, scaling, mask, softmax, weighted sum, each stage a matrix.

The scores come from the models' own score modules (playground.models.attention) and the
softmax from their `masked_softmax`, so the lesson shows what the models compute; the scaling
and the mask are written out here because they are the lesson.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from playground.charts.lessons_math import attention_stages_chart
from playground.lessons.base import Lesson, LessonInputError, LessonView, Param
from playground.lessons.inputs import parse_matrix
from playground.models.attention import causal_mask, make_score, masked_softmax

MAX_TOKENS = 8  # rows of Q, K, V
MAX_DIM = 8  # columns of Q, K, V

SCORES = {
    "scaled dot: q·k / √d_k": "scaled_dot",
    "dot: q·k": "dot",
    "additive: v·tanh(q + k)": "additive",
}
MASKS = ("none", "causal")


@dataclass(frozen=True)
class Printed:
    """A worked example of the lecture notes and the figures they print for it."""

    source: str
    inputs: dict[str, str]
    weights: tuple[float, ...]
    output: tuple[float, ...]
    scores: tuple[float, ...] = ()


ADDITIVE_H = "1, 0; 0.2, 0.1; -0.5, 0.3; 0.1, -0.4"
LOOKUP = {"queries": "0.9, 0.1", "keys": "1, 0; 0, 1; 0.7, 0.7; -1, 0",
          "values": "10, 20; 30, 40; 15, 25; 50, 60", "score": "dot: q·k", "mask": "none", "temperature": 1.0}
ADDITIVE = {"queries": "1, 0", "keys": ADDITIVE_H, "values": ADDITIVE_H,
            "score": "additive: v·tanh(q + k)", "mask": "none", "temperature": 1.0}
# The notes' causal example gives the 4x4 score matrix itself: with K = I, QKᵀ = Q, so the rows of
# Q are those scores (the masked upper triangle is never used), and with V = I the output is A.
IDENTITY_4 = "1, 0, 0, 0; 0, 1, 0, 0; 0, 0, 1, 0; 0, 0, 0, 1"
CAUSAL = {"queries": "1.1, 0, 0, 0; -0.1, 0.5, 0, 0; 0.5, 1.2, 3.3, 0; 5.1, 2.9, -0.3, 4.2",
          "keys": IDENTITY_4, "values": IDENTITY_4, "score": "dot: q·k", "mask": "causal", "temperature": 1.0}
SELF = {"queries": "1, 0, 1, 0; 0, 2, 0, 2; 1, 1, 1, 1", "keys": "1, 0, 1, 0; 0, 2, 0, 2; 1, 1, 1, 1",
        "values": "1, 0; 0, 1; 0.5, 0.5", "score": "scaled dot: q·k / √d_k", "mask": "causal", "temperature": 1.0}

PRINTED = (
    Printed("the additive-attention example (Bahdanau, one decoder step)", ADDITIVE,
            weights=(0.292, 0.283, 0.236, 0.190), output=(0.250, 0.023), scores=(0.964, 0.934, 0.753, 0.420)),
    Printed("the soft-dictionary lookup example", LOOKUP,
            weights=(0.399, 0.179, 0.327, 0.066), output=(15.6, 26.0)),
)


def _scores(kind: str, q: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Raw scores [Tq, Tk] from the models' score module `kind` (additive: W = [I, I], v = 1)."""
    d = q.shape[1]
    score = make_score("dot" if kind == "scaled_dot" else kind, d, d, d).double()
    if kind == "additive":  # W [s; h] = s + h and v = (1, ..., 1), as in the notes' example
        with torch.no_grad():
            score.W.weight.copy_(torch.cat([torch.eye(d), torch.eye(d)], dim=1))
            score.v.weight.fill_(1.0)
    qt, kt = torch.from_numpy(q)[None], torch.from_numpy(k)[None]  # [1, Tq, d], [1, Tk, d]
    with torch.no_grad():
        return score(qt, score.prepare(kt))[0].numpy()  # [Tq, Tk]


def _same(a: object, b: object) -> bool:
    """Equal inputs: matrices compared by their numbers (spacing aside), the rest as they are."""
    if isinstance(a, str) and isinstance(b, str) and a not in SCORES and a not in MASKS:
        try:
            x, y = parse_matrix(a, "", MAX_TOKENS, MAX_DIM), parse_matrix(b, "", MAX_TOKENS, MAX_DIM)
        except LessonInputError:
            return False
        return x.shape == y.shape and bool(np.all(x == y))
    return a == b


def _printed_notes(given: dict[str, object], scores: np.ndarray, weights: np.ndarray, out: np.ndarray) -> list[str]:
    """Where the inputs are a worked example of the notes, each printed figure that differs."""
    notes = []
    for example in PRINTED:
        if not all(_same(given[key], value) for key, value in example.inputs.items()):
            continue
        for what, printed, ours in (("scores", example.scores, scores[0]), ("weights", example.weights, weights[0]),
                                    ("output", example.output, out[0])):
            if not printed:
                continue
            digits = 1 if max(abs(v) for v in printed) >= 10 else 3
            if not np.allclose(np.round(ours, digits), printed, atol=0.6 * 10.0 ** -digits):
                shown = ", ".join(f"{v:.{digits}f}" for v in printed)
                right = ", ".join(f"{v:.{max(digits, 2)}f}" for v in ours)
                notes.append(f"The notes print {what} ({shown}) for {example.source}; "
                             f"computed exactly they are ({right}).")
    return notes


def matrix_table(stage: str, matrix: np.ndarray, row: str, col: str) -> pd.DataFrame:
    """One stage as a table: a label column, then one column per key (or value dimension)."""
    columns = [f"{col}{j + 1}" for j in range(matrix.shape[1])]
    if np.isfinite(matrix).all():
        frame = pd.DataFrame(matrix, columns=columns)
    else:  # a masked score is −∞ (JSON has no infinity: it is shown as text)
        frame = pd.DataFrame([[float(v) if math.isfinite(v) else "−∞" for v in row] for row in matrix],
                             columns=columns, dtype=object)
    frame.insert(0, "stage", stage)
    frame.insert(1, "row", [f"{row}{i + 1}" for i in range(matrix.shape[0])])
    return frame


def _json(matrix: np.ndarray) -> list[list[float | None]]:
    return [[None if not math.isfinite(v) else round(float(v), 6) for v in row] for row in matrix]


def compute(queries: str, keys: str, values: str, score: str, mask: str, temperature: float) -> LessonView:
    """Every stage of attention on the given Q, K, V."""
    q = parse_matrix(queries, "Queries Q", MAX_TOKENS, MAX_DIM)
    k = parse_matrix(keys, "Keys K", MAX_TOKENS, MAX_DIM)
    v = parse_matrix(values, "Values V", MAX_TOKENS, MAX_DIM)
    if q.shape[1] != k.shape[1]:
        raise LessonInputError(f"Queries and keys need the same length (d_k): Q rows have {q.shape[1]} numbers, "
                               f"K rows {k.shape[1]}.")
    if v.shape[0] != k.shape[0]:
        raise LessonInputError(f"One value per key: K has {k.shape[0]} rows, V has {v.shape[0]}.")
    kind = SCORES[score]
    d_k = q.shape[1]
    raw = _scores(kind, q, k)  # [Tq, Tk]
    divisor = (math.sqrt(d_k) if kind == "scaled_dot" else 1.0) * temperature
    scaled = raw / divisor  # [Tq, Tk]
    allowed = np.ones_like(raw, dtype=bool)
    if mask == "causal":
        if q.shape[0] != k.shape[0]:
            raise LessonInputError(f"A causal mask needs one query per key (self-attention): Q has {q.shape[0]} "
                                   f"rows, K has {k.shape[0]}.")
        allowed = causal_mask(q.shape[0], k.shape[0], 0, torch.device("cpu")).numpy()
    masked = np.where(allowed, scaled, -np.inf)  # exp(-inf) = 0: a masked key gets no weight
    weights = masked_softmax(torch.from_numpy(scaled), torch.from_numpy(allowed)).numpy()  # [Tq, Tk]
    out = weights @ v  # [Tq, Dv]

    scale_name = f"÷ √{d_k}" if kind == "scaled_dot" else "no √d_k"
    scale_name += f" ÷ {temperature:g}" if temperature != 1 else ""
    stages = [("1. scores", raw), (f"2. {scale_name}", scaled), ("3. masked", masked), ("4. softmax", weights)]
    stage_table = pd.concat([matrix_table(name, m, "q", "k") for name, m in stages], ignore_index=True)
    given = {"queries": queries, "keys": keys, "values": values, "score": score, "mask": mask,
             "temperature": temperature}
    notes = _printed_notes(given, raw, weights, out)
    if kind == "additive":
        notes.append("Additive scores do not grow with d_k, so there is no √d_k step (only the temperature).")
    entropy = -np.sum(np.where(weights > 0, weights * np.log(np.where(weights > 0, weights, 1.0)), 0.0), axis=1)
    return LessonView(
        numbers={"d_k": d_k, "divisor": round(divisor, 6), "scores": _json(raw), "scaled": _json(scaled),
                 "masked": _json(masked), "weights": _json(weights), "output": _json(out),
                 "row_sums": [round(float(s), 6) for s in weights.sum(axis=1)],
                 "entropy_nats": [round(float(e), 6) for e in entropy]},
        tables={"Stages 1–4 (one row per query)": stage_table,
                "5. output = weights × V": matrix_table("5. × V", out, "q", "dim ")},
        charts=[attention_stages_chart([*stages, ("5. × V", out)])],
        notes=notes,
    )


LESSON = Lesson(
    name="attention_steps",
    title="Attention step by step",
    short="Attention",
    text=("Each query scores every key, the scores become weights that are positive and sum to 1 in each row, and "
          "the output is that weighted average of the values. Change a number and follow it through the five "
          "stages; the temperature divides the scores once more, sharpening (below 1) or flattening (above 1) "
          "the weights."),
    formula=(r"$\mathrm{Attention}(Q,K,V)=\mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}\,\tau}+M\right)V$, "
             r"with $M_{ij}=-\infty$ where query $i$ may not see key $j$ (causal: $j>i$). "
             r"Additive (Bahdanau): $e_{ij}=v_a^\top\tanh(W_a[s_i;h_j])$, here $W_a[s;h]=s+h$, $v_a=\mathbf 1$."),
    see_also=("Train: the GPT presets' `attn_scale` switches the √d_k off; Analyze: the attention maps of a "
              "trained model are the stage-4 matrices of each head."),
    params=(
        Param("queries", "Queries Q (rows ';', numbers ',')", "text", SELF["queries"], max_chars=600,
              help=f"one query per row, at most {MAX_TOKENS} rows of {MAX_DIM} numbers"),
        Param("keys", "Keys K", "text", SELF["keys"], max_chars=600, help="one key per row, as long as a query"),
        Param("values", "Values V", "text", SELF["values"], max_chars=600, help="one value per key"),
        Param("score", "Score", "choice", SELF["score"], choices=tuple(SCORES)),
        Param("mask", "Mask", "choice", SELF["mask"], choices=MASKS),
        Param("temperature", "Temperature τ", "float", 1.0, minimum=0.05, maximum=5.0, step=0.05),
    ),
    compute=compute,
    presets={
        "Self-attention, 3 tokens (causal)": SELF,
        "Soft dictionary lookup (notes)": LOOKUP,
        "Additive attention, one decoder step (notes)": ADDITIVE,
        "Causal mask on given scores (notes)": CAUSAL,
    },
    max_charts=1,
    max_tables=2,
)
