"""Altair charts for the Train tab: DataFrame in, Chart out (pure, testable).

Frames are long ("tidy"): one row per point with the series in a column, so the same builders
serve one live run and an overlay of several runs.
"""
from __future__ import annotations

from typing import Any

import altair as alt
import pandas as pd

from playground.charts.layout import HALF, TRAIN, fit_width

HEIGHT = 240
FEW_STEPS = 20  # a step axis spanning fewer steps than this ticks every step
AXIS_PX = 80  # what the y axis (labels and title) and padding take of a chart's width
TICK_PX = 70  # room per step tick: a label of up to six digits and a gap
SPREAD = 0.05  # a one-value axis spans the value +- this share of it (+-1 for 0)


def _scale(values: pd.Series, least: float = 0.0, **kwargs: Any) -> alt.Scale:
    """A scale for `values`; when they are all one value (a live chart's first point) the axis
    spans a little around it (at least +-`least`), else vega draws a zero-width domain with a
    tick such as 4.230672."""
    low, high = values.min(), values.max()
    if low != high or pd.isna(low):
        return alt.Scale(**kwargs)
    pad = max(abs(float(low)) * SPREAD, least) or 1.0
    if kwargs.get("type") == "log":
        return alt.Scale(domain=[float(low) / (1 + SPREAD), float(low) * (1 + SPREAD)], **kwargs)
    return alt.Scale(domain=[float(low) - pad, float(low) + pad], **kwargs)


def step_ticks(width: int) -> int:
    """How many step ticks a chart `width` px wide (axes included) has room for: one per
    TICK_PX of its plot, so labels such as "10,000" never run into each other."""
    return max(2, (width - AXIS_PX) // TICK_PX)


def _steps(values: pd.Series, width: int = TRAIN) -> alt.X:
    """The step axis (a lone step spans one step each way). Over a few steps, one tick a step:
    vega would put ticks between whole steps (1, 1.2, 1.4, ...); else as many as fit the width
    (vega's default asks for one per 40 px of the spec's width, more than fit once the y axis
    takes its share), and labels that would still touch are dropped."""
    span = float(values.max() - values.min()) or 2.0  # the lone step: one each way
    ticks = min(int(span), step_ticks(width)) if span < FEW_STEPS else step_ticks(width)
    axis = alt.Axis(tickCount=ticks, labelOverlap=True, labelSeparation=6, labelFlush=True)
    return alt.X("step:Q", title="step", scale=_scale(values, least=1.0), axis=axis)


def _empty(title: str, width: int = TRAIN) -> alt.Chart:
    return fit_width(alt.Chart(pd.DataFrame({"x": []})).mark_point().properties(title=title, height=HEIGHT), width)


def loss_chart(curves: pd.DataFrame, title: str = "Loss") -> alt.Chart:
    """Train and val loss against step. `curves`: step, split ("train" | "val"), loss[, run].

    With a `run` column holding several runs, colour is the run and dash the split.
    """
    if curves.empty:
        return _empty(title)
    multi = "run" in curves and curves["run"].nunique() > 1
    color = alt.Color("run:N" if multi else "split:N", title=None, legend=alt.Legend(orient="top"))
    enc = {
        "x": _steps(curves["step"]),
        "y": alt.Y("loss:Q", title="cross-entropy", scale=_scale(curves["loss"], zero=False)),
        "color": color,
        "tooltip": [c for c in ("run", "split", "step", alt.Tooltip("loss:Q", format=".4f")) if not isinstance(c, str) or c in curves],
    }
    if multi:
        enc["strokeDash"] = alt.StrokeDash("split:N", title=None)
    base = alt.Chart(curves).encode(**enc)
    series = [c for c in ("run", "split") if c in curves]
    lines = base.mark_line(point=bool(curves.groupby(series).size().min() < 2))  # a lone point draws no line
    points = base.transform_filter(alt.datum.split == "val").mark_point(filled=True, size=40)
    # The description is read aloud by screen readers (vega sets it as the chart's aria-label).
    about = f"{title}: steps {int(curves['step'].min())} to {int(curves['step'].max())}"
    return fit_width(alt.layer(lines, points).properties(title=title, height=HEIGHT, description=about), TRAIN)


def metric_chart(points: pd.DataFrame, y: str, title: str, y_title: str | None = None, fmt: str = ".3g",
                 log: bool = False, width: int = TRAIN) -> alt.Chart:
    """One metric against step (`points`: step, <y>[, run]), one line per run if there is a run column;
    `width` px in all."""
    if points.empty or y not in points:
        return _empty(title, width)
    scale = _scale(points[y], type="log") if log else _scale(points[y], zero=False)
    enc = {"x": _steps(points["step"], width), "y": alt.Y(f"{y}:Q", title=y_title or y, scale=scale),
               "tooltip": [c for c in ("run", "step") if c in points] + [alt.Tooltip(f"{y}:Q", format=fmt)]}
    if "run" in points and points["run"].nunique() > 1:
        enc["color"] = alt.Color("run:N", title=None, legend=alt.Legend(orient="top"))
    return fit_width(alt.Chart(points).mark_line(point=len(points) < 60).encode(**enc).properties(
        title=title, height=HEIGHT), width)


def lr_chart(points: pd.DataFrame) -> alt.Chart:
    """Learning rate against step (`points`: step, lr)."""
    return metric_chart(points, "lr", "Learning rate", "lr", fmt=".3e", width=HALF)


def throughput_chart(points: pd.DataFrame, unit: str = "tokens") -> alt.Chart:
    """Throughput against step (`points`: step, throughput)."""
    return metric_chart(points, "throughput", f"Throughput ({unit}/s)", f"{unit} per second", fmt=",.0f", width=HALF)


def confusion_chart(matrix: list[list[int]], labels: list[str], title: str = "Confusion matrix (validation)") -> alt.LayerChart:
    """Heatmap of counts, rows = true class, columns = predicted class, with the count in each cell."""
    rows = [{"true": labels[i], "predicted": labels[j], "count": int(c)}
            for i, row in enumerate(matrix) for j, c in enumerate(row)]
    df = pd.DataFrame(rows)
    order = list(labels)
    base = alt.Chart(df).encode(
        x=alt.X("predicted:N", sort=order, title="predicted"),
        y=alt.Y("true:N", sort=order, title="true"),
    )
    cells = base.mark_rect().encode(color=alt.Color("count:Q", scale=alt.Scale(scheme="blues"), title="count"),
                                    tooltip=["true", "predicted", "count"])
    top = max(1, int(df["count"].max()) if not df.empty else 1)
    text = base.mark_text(fontSize=11).encode(
        text="count:Q",
        color=alt.condition(alt.datum.count > top / 2, alt.value("white"), alt.value("black")),
    )
    side = max(200, min(460, 36 * len(labels)))
    return fit_width(alt.layer(cells, text).properties(title=title, height=side), min(TRAIN, side + 160))


def bottleneck_chart(buckets: pd.DataFrame, measure: str = "exact_match") -> alt.Chart:
    """Accuracy against source length, one line per run (the fixed-vector bottleneck curve).

    `buckets`: run, length (bucket lower bound), bucket (label), <measure>, n.
    """
    title = {"exact_match": "Exact match by source length", "token_accuracy": "Token accuracy by source length"}.get(
        measure, measure)
    if buckets.empty or measure not in buckets:
        return _empty(title)
    return fit_width(
        alt.Chart(buckets)
        .mark_line(point=True)
        .encode(
            x=alt.X("length:Q", title="source length (tokens, bucket start)"),
            y=alt.Y(f"{measure}:Q", title=measure.replace("_", " "), scale=alt.Scale(domain=[0, 1]),
                    axis=alt.Axis(format="%")),
            color=alt.Color("run:N", title=None, legend=alt.Legend(orient="top")),
            tooltip=["run", "bucket", alt.Tooltip(f"{measure}:Q", format=".1%"), "n"],
        )
        .properties(title=title, height=HEIGHT),
        TRAIN,
    )
