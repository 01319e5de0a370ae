"""Why divide by √d_k: the variance of q·k, the entropy of attention and the softmax's saturation,
measured on random unit-variance vectors for d_k = 1, 2, 4, ... (seeded, so a rerun repeats)."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy.special import softmax

from playground.charts.lessons_math import (
    entropy_chart,
    saturation_chart,
    variance_chart,
)
from playground.lessons.base import Lesson, LessonInputError, LessonView, Param

MAX_DK = 1024
MAX_KEYS = 512
MAX_QUERIES = 1000
MAX_DRAWN = 1 << 24  # queries x keys x d_k drawn at the largest d_k (64 MB of float32)
ONE_HOT = 0.99  # a row whose largest weight exceeds this is "nearly one-hot"
TABLE_COLUMNS = {
    "var_unscaled": "var(q·k)", "var_scaled": "var(q·k/√d_k)", "std_unscaled": "std(q·k)",
    "entropy_unscaled": "entropy, q·k", "entropy_scaled": "entropy, ÷√d_k",
    "max_weight_unscaled": "max weight, q·k", "max_weight_scaled": "max weight, ÷√d_k",
    "one_hot_unscaled": f"share > {ONE_HOT}, q·k", "one_hot_scaled": f"share > {ONE_HOT}, ÷√d_k",
    "grad_norm_unscaled": "‖∂p/∂e‖, q·k", "grad_norm_scaled": "‖∂p/∂e‖, ÷√d_k",
}


def d_k_grid(largest: int) -> list[int]:
    """1, 2, 4, ... up to `largest` (which ends the list even when it is not a power of 2)."""
    grid = [2**i for i in range(int(math.log2(largest)) + 1)]
    return grid if grid[-1] == largest else [*grid, largest]


def _row_stats(scores: np.ndarray) -> dict[str, float]:
    """Mean entropy, mean largest weight, share of nearly one-hot rows and mean ‖∂p/∂e‖_F of softmax rows."""
    p = softmax(scores.astype(np.float64), axis=-1)  # [N, T]
    logp = np.log(np.clip(p, 1e-300, None))
    entropy = -(p * logp).sum(-1)
    top = p.max(-1)
    s2, s3 = (p**2).sum(-1), (p**3).sum(-1)
    grad = np.sqrt(np.clip(s2 - 2 * s3 + s2**2, 0, None))  # ‖diag(p) − p pᵀ‖_F, the softmax Jacobian
    return {"entropy": float(entropy.mean()), "max_weight": float(top.mean()),
            "one_hot": float((top > ONE_HOT).mean()), "grad_norm": float(grad.mean())}


def compute(keys: int, largest_d_k: int, queries: int, seed: int) -> LessonView:
    """Score statistics of random q, k (entries N(0, 1)) for each d_k, with and without ÷√d_k."""
    if queries * keys * largest_d_k > MAX_DRAWN:
        raise LessonInputError(f"queries × keys × d_k = {queries * keys * largest_d_k:,} numbers to draw; this lesson "
                               f"draws at most {MAX_DRAWN:,}: lower one of them.")
    rng = np.random.default_rng(seed)
    rows = []
    for d_k in d_k_grid(largest_d_k):
        q = rng.standard_normal((queries, 1, d_k), dtype=np.float32)  # [N, 1, d]
        k = rng.standard_normal((queries, keys, d_k), dtype=np.float32)  # [N, T, d]: fresh keys per query
        scores = (q * k).sum(-1, dtype=np.float64)  # [N, T]: q·k
        scaled = scores / math.sqrt(d_k)
        raw, fixed = _row_stats(scores), _row_stats(scaled)
        rows.append({"d_k": d_k, "var_unscaled": float(scores.var()), "var_scaled": float(scaled.var()),
                     "std_unscaled": float(scores.std()),
                     "entropy_unscaled": raw["entropy"], "entropy_scaled": fixed["entropy"],
                     "max_weight_unscaled": raw["max_weight"], "max_weight_scaled": fixed["max_weight"],
                     "one_hot_unscaled": raw["one_hot"], "one_hot_scaled": fixed["one_hot"],
                     "grad_norm_unscaled": raw["grad_norm"], "grad_norm_scaled": fixed["grad_norm"]})
    frame = pd.DataFrame(rows)
    log_t = math.log(keys)
    rest_32 = (keys - 1) * math.exp(-32.0) / (1.0 + (keys - 1) * math.exp(-32.0))  # 1 − softmax([32, 0, ...])[0]
    last = rows[-1]
    notes = [
        (f"At d_k = {last['d_k']}: unscaled scores have std {last['std_unscaled']:.1f} (theory √d_k = "
        f"{math.sqrt(last['d_k']):.1f}) and {last['one_hot_unscaled']:.0%} of the rows put more than {ONE_HOT} on one "
        f"key. Scaled, {last['one_hot_scaled']:.0%} do and the entropy stays flat at about "
        f"{last['entropy_scaled']:.2f} nats for every d_k: below log T = {log_t:.2f}, the uniform maximum, since "
        "unit-variance scores still prefer some keys."),
        f"softmax([32, 0, 0, …]) over {keys} keys gives the 32 a weight of 1 − {rest_32:.1e}: one-hot for any purpose.",
    ]
    return LessonView(
        numbers={"log_T": round(log_t, 6), "one_hot_threshold": ONE_HOT, "weight_left_beside_32": rest_32,
                 "rows": [{key: (round(v, 6) if isinstance(v, float) else v) for key, v in row.items()}
                          for row in rows]},
        tables={"Measured, per d_k": frame.rename(columns=TABLE_COLUMNS)},
        charts=[variance_chart(frame), entropy_chart(frame, log_t), saturation_chart(frame)],
        notes=notes,
    )


LESSON = Lesson(
    name="scaling",
    title="Why divide by √d_k",
    short="√d_k",
    text=("A dot product of two random vectors adds up d_k products, so its spread grows like √d_k. Fed to a "
          "softmax, such large scores pick one key almost surely, the weights stop responding and little gradient "
          "gets through. Dividing by √d_k keeps the scores at unit variance whatever the head size."),
    formula=(r"$q_i,k_i\sim\mathcal N(0,1)$: $\mathrm{Var}(q\cdot k)=\sum_{i=1}^{d_k}\mathrm{Var}(q_ik_i)=d_k$, "
             r"so $\mathrm{Var}\!\left(\frac{q\cdot k}{\sqrt{d_k}}\right)=1$; "
             r"entropy $H(p)=-\sum_j p_j\log p_j\le\log T$ (uniform over $T$ keys)."),
    see_also=("Train: a GPT preset's `attn_scale = false` trains without the √d_k (try it with a large head size); "
              "Analyze: saturated heads show as one bright cell per row."),
    params=(
        Param("keys", "Keys per query T", "int", 64, minimum=2, maximum=MAX_KEYS, step=1),
        Param("largest_d_k", "Largest d_k", "int", MAX_DK, minimum=2, maximum=MAX_DK, step=1),
        Param("queries", "Queries drawn per d_k", "int", 200, minimum=10, maximum=MAX_QUERIES, step=10),
        Param("seed", "Seed", "int", 0, minimum=0, maximum=2**31 - 1, step=1),
    ),
    compute=compute,
    presets={
        "The notes' setting (T = 64, d_k up to 1024)": {"keys": 64, "largest_d_k": 1024, "queries": 200, "seed": 0},
        "Short rows (T = 8)": {"keys": 8, "largest_d_k": 1024, "queries": 500, "seed": 0},
        "Long rows (T = 512, d_k up to 256)": {"keys": 512, "largest_d_k": 256, "queries": 100, "seed": 0},
    },
    max_charts=3,
    max_tables=1,
)
