"""Altair charts for the math lessons (attention steps, √d_k, positions, sampling): data in, Chart out."""
from __future__ import annotations

import math
from collections.abc import Sequence

import altair as alt
import numpy as np
import pandas as pd

from playground.charts.layout import FULL, fit_width, panel_width

HALF_FULL = FULL // 2 - 20  # two charts side by side in a full-width row
# Colour ranges stop short of the darkest shades so the numbers written on the cells stay readable.
SIGNED = alt.Scale(scheme=alt.SchemeParams("redblue", extent=[0.15, 0.85]), domainMid=0, reverse=True)
UNSIGNED = alt.Scale(scheme=alt.SchemeParams("blues", extent=[0.0, 0.6]), domainMin=0)


def _cells(matrix: np.ndarray, col: str) -> pd.DataFrame:
    rows, cols = np.indices(matrix.shape)
    values = matrix.ravel().astype(float)
    finite = np.isfinite(values)
    return pd.DataFrame({
        "row": [f"q{i + 1}" for i in rows.ravel()],
        "col": [f"{col}{j + 1}" for j in cols.ravel()],
        "value": np.where(finite, values, np.nan),
        "label": [f"{v:.3g}" if ok else "−∞" for v, ok in zip(values, finite)],
    })


def attention_stages_chart(stages: Sequence[tuple[str, np.ndarray]]) -> alt.HConcatChart:
    """One heatmap per stage (scores ... output), each with its own colour scale and the values written in.

    Masked entries (−∞) are grey. The last stage's columns are value dimensions, the others keys.
    """
    n_cols = max(m.shape[1] for _, m in stages)
    n_rows = max(m.shape[0] for _, m in stages)
    width = min(panel_width(FULL, len(stages), 70), 52 * n_cols)
    panels = []
    for i, (name, matrix) in enumerate(stages):
        col = "dim " if i == len(stages) - 1 else "k"
        data = _cells(np.atleast_2d(matrix), col)
        finite = data["value"].dropna()
        signed = bool(len(finite)) and finite.min() < 0
        base = alt.Chart(data).encode(
            x=alt.X("col:N", title=None, sort=None, axis=alt.Axis(orient="top", labelAngle=0)),
            y=alt.Y("row:N", title=None, sort=None),
        )
        rect = base.mark_rect(stroke="white").encode(
            color=alt.condition("isValid(datum.value)",
                                alt.Color("value:Q", scale=SIGNED if signed else UNSIGNED, legend=None),
                                alt.value("#d0d0d0")),
            tooltip=["row:N", "col:N", alt.Tooltip("label:N", title="value")],
        )
        text = base.mark_text(fontSize=11).encode(text="label:N")
        panels.append(alt.layer(rect, text).properties(width=width, height=30 * n_rows, title=name))
    return alt.hconcat(*panels, spacing=14).properties(title="Attention, stage by stage (rows are queries)")


def variance_chart(frame: pd.DataFrame) -> alt.LayerChart:
    """Measured variance of q·k against d_k (log-log), scaled and unscaled, with the analytic d_k and 1."""
    long = frame.melt(id_vars=["d_k"], value_vars=["var_unscaled", "var_scaled"], var_name="scores",
                      value_name="variance")
    long["scores"] = long["scores"].map({"var_unscaled": "q·k", "var_scaled": "q·k / √d_k"})
    theory = pd.DataFrame({"d_k": list(frame["d_k"]) * 2,
                           "variance": list(frame["d_k"].astype(float)) + [1.0] * len(frame),
                           "scores": ["theory: d_k"] * len(frame) + ["theory: 1"] * len(frame)})
    x = alt.X("d_k:Q", scale=alt.Scale(type="log", base=2), title="d_k (log scale)")
    y = alt.Y("variance:Q", scale=alt.Scale(type="log"), title="variance of the score (log scale)")
    measured = alt.Chart(long).mark_line(point=True).encode(
        x=x, y=y, color=alt.Color("scores:N", title=None, legend=alt.Legend(orient="top")),
        tooltip=["d_k", "scores", alt.Tooltip("variance:Q", format=".3f")])
    lines = alt.Chart(theory).mark_line(strokeDash=[4, 4], color="gray").encode(x=x, y=y, detail="scores:N")
    return fit_width(alt.layer(lines, measured).properties(title="Score variance grows like d_k", height=240),
                     HALF_FULL)


def entropy_chart(frame: pd.DataFrame, log_t: float) -> alt.LayerChart:
    """Mean attention entropy (nats) against d_k, scaled and unscaled, with the uniform maximum log T."""
    long = frame.melt(id_vars=["d_k"], value_vars=["entropy_unscaled", "entropy_scaled"], var_name="scores",
                      value_name="entropy")
    long["scores"] = long["scores"].map({"entropy_unscaled": "q·k", "entropy_scaled": "q·k / √d_k"})
    x = alt.X("d_k:Q", scale=alt.Scale(type="log", base=2), title="d_k (log scale)")
    lines = alt.Chart(long).mark_line(point=True).encode(
        x=x, y=alt.Y("entropy:Q", title="mean entropy of a row (nats)", scale=alt.Scale(domainMin=0)),
        color=alt.Color("scores:N", title=None, legend=alt.Legend(orient="top")),
        tooltip=["d_k", "scores", alt.Tooltip("entropy:Q", format=".3f")])
    rule = alt.Chart(pd.DataFrame({"y": [log_t], "label": [f"log T = {log_t:.2f} (uniform)"]}))
    top = rule.mark_rule(strokeDash=[4, 4], color="gray").encode(y="y:Q")
    label = rule.mark_text(align="left", dy=-6, x=4, color="gray").encode(y="y:Q", text="label:N")
    return fit_width(alt.layer(lines, top, label).properties(title="Attention entropy against d_k", height=240),
                     HALF_FULL)


def saturation_chart(frame: pd.DataFrame) -> alt.Chart:
    """Share of softmax rows whose largest weight exceeds 0.99 (nearly one-hot), against d_k."""
    long = frame.melt(id_vars=["d_k"], value_vars=["one_hot_unscaled", "one_hot_scaled"], var_name="scores",
                      value_name="share")
    long["scores"] = long["scores"].map({"one_hot_unscaled": "q·k", "one_hot_scaled": "q·k / √d_k"})
    return fit_width(
        alt.Chart(long).mark_line(point=True).encode(
            x=alt.X("d_k:Q", scale=alt.Scale(type="log", base=2), title="d_k (log scale)"),
            y=alt.Y("share:Q", title="rows with max weight > 0.99", axis=alt.Axis(format="%"),
                    scale=alt.Scale(domain=[0, 1])),
            color=alt.Color("scores:N", title=None, legend=alt.Legend(orient="top")),
            tooltip=["d_k", "scores", alt.Tooltip("share:Q", format=".1%")],
        ).properties(title="Saturation: nearly one-hot rows", height=240),
        HALF_FULL,
    )


def encoding_heatmap(table: np.ndarray, max_side: int = 64) -> alt.Chart:
    """The sinusoidal table as a heatmap, position down, dimension across (every s-th row/column
    when a side is longer than `max_side`, so the chart stays small)."""
    step_p, step_d = -(-table.shape[0] // max_side), -(-table.shape[1] // max_side)
    positions, dims = np.arange(0, table.shape[0], step_p), np.arange(0, table.shape[1], step_d)
    rows, cols = np.meshgrid(positions, dims, indexing="ij")
    data = pd.DataFrame({"position": rows.ravel(), "dimension": cols.ravel(),
                         "value": table[np.ix_(positions, dims)].ravel().round(3)})
    every = [f"one {what} in {s}" for s, what in ((step_p, "position"), (step_d, "dimension")) if s > 1]
    return fit_width(
        alt.Chart(data).mark_rect().encode(
            x=alt.X("dimension:O", axis=alt.Axis(labelAngle=0, labelOverlap=True)),
            y=alt.Y("position:O", axis=alt.Axis(labelOverlap=True)),
            color=alt.Color("value:Q", scale=alt.Scale(scheme="redblue", domain=[-1, 1], reverse=True),
                            legend=alt.Legend(orient="top", title="PE")),
            tooltip=["position", "dimension", "value"],
        ).properties(title="Sinusoidal encoding: fast waves left, slow right" + (f" ({', '.join(every)})" if every else ""),
                     height=300),
        HALF_FULL,
    )


def similarity_chart(frame: pd.DataFrame, marks: pd.DataFrame) -> alt.LayerChart:
    """Cosine similarity of PE(p) with PE(p + distance), with the marked pairs as points."""
    x = alt.X("distance:Q", title="distance from the reference position")
    y = alt.Y("cosine:Q", title="cosine similarity", scale=alt.Scale(domain=[-0.2, 1]))
    line = alt.Chart(frame).mark_line().encode(x=x, y=y, tooltip=["distance", alt.Tooltip("cosine:Q", format=".3f")])
    points = alt.Chart(marks).mark_point(filled=True, size=60, color="crimson").encode(
        x=x, y=y, tooltip=["pair:N", alt.Tooltip("cosine:Q", format=".3f")])
    return fit_width(alt.layer(line, points).properties(title="Nearby positions look alike", height=300), HALF_FULL)


def slopes_chart(slopes: pd.DataFrame) -> alt.Chart:
    """ALiBi's slope per head (the penalty per token of distance), one bar per head."""
    return fit_width(
        alt.Chart(slopes).mark_line(point=alt.OverlayMarkDef(size=60)).encode(
            x=alt.X("head:O", title="head", axis=alt.Axis(labelAngle=0)),
            y=alt.Y("slope:Q", title="slope m (log scale)", scale=alt.Scale(type="log")),
            tooltip=["head", alt.Tooltip("slope:Q", format=".5g"), alt.Tooltip("reach:Q", format=".3g",
                                                                               title="distance for a −1 penalty")],
        ).properties(title="ALiBi: one slope per head, halving geometrically", height=220),
        HALF_FULL,
    )


def sampling_stages_chart(frame: pd.DataFrame, order: Sequence[str]) -> alt.Chart:
    """Probability of each token after each filter stage (bars side by side per token)."""
    return fit_width(
        alt.Chart(frame).mark_bar().encode(
            x=alt.X("token:N", sort=None, title=None),
            xOffset=alt.XOffset("stage:N", sort=list(order)),
            y=alt.Y("probability:Q", title="probability", scale=alt.Scale(domain=[0, 1])),
            color=alt.Color("stage:N", sort=list(order), title=None, legend=alt.Legend(orient="top")),
            tooltip=["token", "stage", alt.Tooltip("probability:Q", format=".4f")],
        ).properties(title="What each filter leaves", height=240),
        HALF_FULL,
    )


def temperature_sweep_chart(frame: pd.DataFrame, current: float) -> alt.LayerChart:
    """Each token's probability against temperature (log axis), the chosen temperature marked."""
    lo, hi = float(frame["temperature"].min()), float(frame["temperature"].max())
    x = alt.X("temperature:Q", scale=alt.Scale(type="log", domain=[lo, hi], nice=False),
              title="temperature (log scale)")
    lines = alt.Chart(frame).mark_line().encode(
        x=x, y=alt.Y("probability:Q", scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("token:N", sort=None, title=None, legend=alt.Legend(orient="top")),
        tooltip=["token", alt.Tooltip("temperature:Q", format=".3g"), alt.Tooltip("probability:Q", format=".3f")])
    layers = [lines]
    if current > 0 and math.isfinite(current):
        layers.append(alt.Chart(pd.DataFrame({"temperature": [current]})).mark_rule(
            strokeDash=[4, 4], color="gray").encode(x="temperature:Q"))
    return fit_width(alt.layer(*layers).properties(title="Low temperature sharpens, high flattens", height=240),
                     HALF_FULL)
