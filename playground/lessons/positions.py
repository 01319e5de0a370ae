"""Positional encodings: the sinusoidal table, its similarity against distance, the rotation that
shifts it, RoPE's relative scores, ALiBi's slopes, and why attention needs any of them (a sentence
and its reordering give the same outputs, only reordered, when there are no positions).

Everything is computed with the models' own code (playground.models.positional, attention.attend).
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import torch

from playground.charts.lessons_math import (
    encoding_heatmap,
    similarity_chart,
    slopes_chart,
)
from playground.lessons.base import Lesson, LessonInputError, LessonView, Param
from playground.models.attention import attend
from playground.models.positional import (
    Rotary,
    alibi_bias,
    alibi_slopes,
    sinusoidal_shift,
    sinusoidal_table,
)

MAX_POSITIONS = 256
MAX_D = 128
NOTES_PAIRS = ((0, 1), (0, 50), (10, 11))
NOTES_PRINTED_COS = {(0, 1): "≈ 0.95", (0, 50): "≈ 0.4", (10, 11): "≈ 0.95"}  # for 128 positions, d = 64
ENCODINGS = ("none", "sinusoidal (added)", "RoPE", "ALiBi")
SENTENCES = (("dog", "bites", "man"), ("man", "bites", "dog"))
WORD_DIM = 8  # size of the toy word vectors of the permutation demo


def cosine_matrix(table: np.ndarray) -> np.ndarray:
    """Cosine similarity of every pair of rows [P, P]."""
    unit = table / np.linalg.norm(table, axis=1, keepdims=True)
    return unit @ unit.T


def _rotation_check(table: np.ndarray, delta: int, d_model: int) -> dict[str, float]:
    """How far R(Δ)·PE(p) is from PE(p+Δ) (the models' R), and the sign-flipped R from PE(p+Δ) and PE(p−Δ)."""
    R = sinusoidal_shift(delta, d_model).double().numpy()  # [D, D]
    n = table.shape[0] - delta
    shifted = table[:n] @ R.T  # row p: R @ PE(p)
    # The transposed blocks [[cos, −sin], [sin, cos]] rotate the other way: they give PE(p − Δ).
    flipped = table[delta:] @ R  # row p (from Δ): Rᵀ @ PE(p)
    return {"max_error": float(np.abs(shifted - table[delta:]).max()),
            "flipped_error_vs_p_plus": float(np.abs(flipped[:n - delta] - table[2 * delta:]).max()) if n > delta else math.nan,
            "flipped_error_vs_p_minus": float(np.abs(flipped - table[:n]).max()),
            "orthogonality_error": float(np.abs(R @ R.T - np.eye(d_model)).max())}


def rope_scores(head_dim: int, pairs: list[tuple[int, int]], seed: int = 0) -> pd.DataFrame:
    """q·k of one fixed q and k placed at positions (m, n): with RoPE, and with added sinusoidal PE."""
    g = torch.Generator().manual_seed(seed)
    q, k = torch.randn(head_dim, generator=g), torch.randn(head_dim, generator=g)  # [hd]
    longest = max(max(p) for p in pairs) + 1
    rope = Rotary(head_dim, longest)
    table = sinusoidal_table(longest, head_dim)  # [P, hd]
    rows = []
    for m, n in pairs:
        qm = rope(q[None, None, None, :], offset=m)[0, 0, 0]  # [hd]: q rotated to position m
        kn = rope(k[None, None, None, :], offset=n)[0, 0, 0]
        rows.append({"m": m, "n": n, "m − n": m - n, "RoPE q_m·k_n": float(qm @ kn),
                     "added PE (q+PE_m)·(k+PE_n)": float((q + table[m]) @ (k + table[n]))})
    return pd.DataFrame(rows)


def _word_vectors() -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    return {w: torch.randn(WORD_DIM, generator=g, dtype=torch.float64) for w in ("dog", "bites", "man")}


def self_attention(words: tuple[str, ...], encoding: str) -> torch.Tensor:
    """One bidirectional self-attention head over toy word vectors [T, D] -> outputs [T, D]."""
    g = torch.Generator().manual_seed(2)
    Wq, Wk, Wv = (torch.randn(WORD_DIM, WORD_DIM, generator=g, dtype=torch.float64) / math.sqrt(WORD_DIM)
                  for _ in range(3))
    vectors = _word_vectors()
    x = torch.stack([vectors[w] for w in words])  # [T, D]
    T = len(words)
    if encoding == "sinusoidal (added)":
        x = x + sinusoidal_table(T, WORD_DIM).double()
    q, k, v = x @ Wq, x @ Wk, x @ Wv  # [T, D] each
    q, k, v = q[None, None], k[None, None], v[None, None]  # [1, 1, T, D]
    bias = None
    if encoding == "RoPE":
        rope = Rotary(WORD_DIM, T).double()
        q, k = rope(q), rope(k)
    elif encoding == "ALiBi":
        pos = torch.arange(T)
        bias = alibi_bias(alibi_slopes(1).double(), pos, pos, causal=False)[None]  # [1, 1, T, T]
    out, _ = attend(q, k, v, bias=bias)  # [1, 1, T, D]
    return out[0, 0]


def permutation_table(encoding: str) -> tuple[pd.DataFrame, dict[str, float]]:
    """Each word's output in both sentences, their largest difference, and the pooled (mean) outputs'."""
    first, second = (self_attention(s, encoding) for s in SENTENCES)
    rows = []
    for word in ("dog", "bites", "man"):
        a, b = first[SENTENCES[0].index(word)], second[SENTENCES[1].index(word)]
        rows.append({"word": word, "in 'dog bites man' (first 3 dims)": ", ".join(f"{x:+.3f}" for x in a[:3]),
                     "in 'man bites dog' (first 3 dims)": ", ".join(f"{x:+.3f}" for x in b[:3]),
                     "largest difference": float((a - b).abs().max())})
    pooled = float((first.mean(0) - second.mean(0)).abs().max())
    return pd.DataFrame(rows), {"word_difference": max(r["largest difference"] for r in rows),
                                "pooled_difference": pooled}


def compute(n_positions: int, d_model: int, position: int, delta: int, heads: int, encoding: str) -> LessonView:
    """Every view of the lesson for this table size, reference position, shift and head count."""
    if d_model % 2:
        raise LessonInputError(f"d_model must be even (sin and cos come in pairs); got {d_model}.")
    if position >= n_positions or delta >= n_positions:
        raise LessonInputError(f"Position and shift must be below the number of positions ({n_positions}).")
    table = sinusoidal_table(n_positions, d_model).double().numpy()  # [P, D]
    cos = cosine_matrix(table)
    sims = pd.DataFrame({"distance": np.arange(n_positions) - position, "cosine": cos[position]})
    pairs = [(a, b) for a, b in NOTES_PAIRS if b < n_positions]
    if (position, position + delta) not in pairs and position + delta < n_positions:
        pairs.append((position, position + delta))
    marks = pd.DataFrame([{"pair": f"({a}, {b})", "distance": b - position if a == position else math.nan,
                           "cosine": cos[a, b]} for a, b in pairs]).dropna()
    check = _rotation_check(table, delta, d_model)
    freq = 10000.0 ** (-np.arange(0, d_model, 2) / d_model)
    pair_table = pd.DataFrame({"pair k": np.arange(d_model // 2), "ω_k": freq, "angle ω_k·Δ": freq * delta,
                               "wavelength 2π/ω_k": 2 * math.pi / freq}).head(8)
    rope = rope_scores(min(d_model, 16), [(0, 0), (5, 5), (20, 20), (3, 0), (8, 5), (23, 20), (0, 3), (5, 8)])
    slopes = alibi_slopes(heads).double().numpy()
    slope_frame = pd.DataFrame({"head": np.arange(1, heads + 1), "slope": slopes, "reach": 1 / slopes})
    perm, perm_numbers = permutation_table(encoding)
    rope_spread = float(rope.groupby("m − n")["RoPE q_m·k_n"].agg(lambda s: s.max() - s.min()).max())
    added_spread = float(rope.groupby("m − n")["added PE (q+PE_m)·(k+PE_n)"].agg(lambda s: s.max() - s.min()).max())
    slowest_512 = 2 * math.pi * 10000.0 ** (510 / 512)
    plus = check["flipped_error_vs_p_plus"]
    notes = [
        f"R(Δ={delta}) is orthogonal and maps PE(p) onto PE(p+Δ) for every p (largest error "
        f"{check['max_error']:.1e}). The notes also print the blocks as [[cos, −sin], [sin, cos]]: that is "
        f"R(Δ) transposed, which maps PE(p) onto PE(p−Δ) (error {check['flipped_error_vs_p_minus']:.1e})"
        + (f", not PE(p+Δ) (error {plus:.2f})." if math.isfinite(plus) else ", not PE(p+Δ)."),
        (f"For d = 512 the notes give the slowest wavelength as 2π·10⁴ ≈ 62,832 tokens; the last pair (k = 255) "
        f"has 2π·10000^(510/512) ≈ {slowest_512:,.0f}: 62,832 is the limit that no pair reaches."),
    ]
    if d_model == 64 and n_positions > 50:
        ours = ", ".join(f"({a}, {b}) = {cos[a, b]:.3f}" for a, b in NOTES_PAIRS)
        printed = ", ".join(f"({a}, {b}) {v}" for (a, b), v in NOTES_PRINTED_COS.items())
        notes.append(f"Cosine similarities at d = 64: {ours}. The notes print {printed}.")
    if encoding == "none":
        notes.append("No positions: each word's output is the same in both sentences (only the order differs), "
                     "so anything pooled over the sentence cannot tell them apart.")
    elif encoding == "ALiBi":
        notes.append("ALiBi without a causal mask sees only the distance |i − j|; swapping the first and last of "
                     "three words keeps every distance, so this pair stays indistinguishable (a causal mask would "
                     "tell them apart).")
    else:
        notes.append(f"With {encoding} positions the same word gets a different output in each sentence.")
    return LessonView(
        numbers={
            "cosine_pairs": {f"{a},{b}": round(float(cos[a, b]), 6) for a, b in pairs},
            "shift_max_error": check["max_error"], "shift_orthogonality_error": check["orthogonality_error"],
            "transposed_shift_error_vs_p_minus": check["flipped_error_vs_p_minus"],
            "transposed_shift_error_vs_p_plus": plus if math.isfinite(plus) else None,
            "fastest_wavelength": 2 * math.pi, "slowest_wavelength": float(2 * math.pi / freq[-1]),
            "slowest_wavelength_d512": slowest_512,
            "rope_spread_per_offset": rope_spread, "added_pe_spread_per_offset": added_spread,
            "alibi_slopes": [float(s) for s in slopes],
            "permutation": {"encoding": encoding, **perm_numbers},
        },
        tables={"Dog bites man vs man bites dog (same word, both orders)": perm,
                "RoPE: the score depends only on m − n": rope,
                f"R(Δ = {delta}): the first rotation blocks": pair_table},
        charts=[encoding_heatmap(table), similarity_chart(sims, marks), slopes_chart(slope_frame)],
        notes=notes,
    )


LESSON = Lesson(
    name="positions",
    title="Positional encodings",
    short="Positions",
    text=("Attention compares every token with every other, so without help it sees a set, not a sequence: "
          "reorder the words and each output just moves along. A sinusoidal table adds a position vector whose "
          "shift by Δ is a fixed rotation; RoPE rotates queries and keys so their score depends only on the "
          "offset; ALiBi subtracts a per-head penalty that grows with distance."),
    formula=(r"$\mathrm{PE}_{p,2k}=\sin(p\,\omega_k)$, $\mathrm{PE}_{p,2k+1}=\cos(p\,\omega_k)$, "
             r"$\omega_k=10000^{-2k/d}$; "
             r"$\begin{pmatrix}\sin\omega(p+\Delta)\\ \cos\omega(p+\Delta)\end{pmatrix}="
             r"\begin{pmatrix}\cos\omega\Delta & \sin\omega\Delta\\ -\sin\omega\Delta & \cos\omega\Delta\end{pmatrix}"
             r"\begin{pmatrix}\sin\omega p\\ \cos\omega p\end{pmatrix}$; "
             r"RoPE: $(R_m q)\cdot(R_n k)=q^\top R_{n-m}k$; ALiBi: score $-\,m_h\,|i-j|$, $m_h=2^{-8h/H}$."),
    see_also=("Train: `pos_encoding` picks none / learned / sinusoidal / rope / alibi for the GPT presets; "
              "Analyze: position-driven heads show as diagonal bands in the attention maps."),
    params=(
        Param("n_positions", "Positions", "int", 128, minimum=8, maximum=MAX_POSITIONS, step=1),
        Param("d_model", "d_model (even)", "int", 64, minimum=4, maximum=MAX_D, step=2),
        Param("position", "Reference position p", "int", 0, minimum=0, maximum=MAX_POSITIONS - 1, step=1),
        Param("delta", "Shift Δ", "int", 1, minimum=1, maximum=MAX_POSITIONS - 1, step=1),
        Param("heads", "ALiBi heads", "int", 8, minimum=1, maximum=64, step=1),
        Param("encoding", "Positions in the word-order demo", "choice", "none", choices=ENCODINGS),
    ),
    compute=compute,
    presets={
        "The notes' table (128 positions, d = 64)": {"n_positions": 128, "d_model": 64, "position": 0, "delta": 1},
        "Word order, no positions": {"encoding": "none"},
        "Word order, sinusoidal": {"encoding": "sinusoidal (added)"},
        "Word order, RoPE": {"encoding": "RoPE"},
        "ALiBi with 12 heads": {"heads": 12, "encoding": "ALiBi"},
    },
    max_charts=3,
    max_tables=3,
)
