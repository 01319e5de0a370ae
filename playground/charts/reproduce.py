"""Altair chart of a reproduced claim: its chart frame (x, y, series) drawn as its ChartSpec says."""
from __future__ import annotations

import altair as alt
import pandas as pd

from playground.charts.layout import TRAIN, fit_width
from playground.reproduce.base import ChartSpec

HEIGHT = 280


def claim_chart(frame: pd.DataFrame, spec: ChartSpec, title: str, width: int = TRAIN) -> alt.LayerChart | alt.Chart:
    """Lines (or grouped bars) of y against x, one colour per series, with the spec's rule if any."""
    if frame.empty:
        return fit_width(alt.Chart(pd.DataFrame({"x": []})).mark_point().properties(title=title, height=HEIGHT), width)
    x_type = "O" if spec.x_ordinal else "Q"
    color = alt.Color("series:N", title=None, legend=alt.Legend(orient="top"))
    tooltip = ["series:N", alt.Tooltip(f"x:{x_type}", title=spec.x_title), alt.Tooltip("y:Q", title=spec.y_title, format=".4g")]
    base = alt.Chart(frame)
    if spec.mark == "bar":
        chart = base.mark_bar().encode(
            x=alt.X(f"x:{x_type}", title=spec.x_title), xOffset="series:N",
            y=alt.Y("y:Q", title=spec.y_title, scale=alt.Scale(zero=False)), color=color, tooltip=tooltip)
    else:
        chart = base.mark_line(point=len(frame) <= 80).encode(
            x=alt.X(f"x:{x_type}", title=spec.x_title), y=alt.Y("y:Q", title=spec.y_title, scale=alt.Scale(zero=False)),
            color=color, tooltip=tooltip)
    about = f"{title}: {spec.y_title} against {spec.x_title} for {', '.join(map(str, frame['series'].unique()))}"
    if spec.rule is not None:
        rule = alt.Chart(pd.DataFrame({"x": [spec.rule], "label": [spec.rule_label]})).mark_rule(
            strokeDash=[4, 3], color="gray").encode(x="x:Q", tooltip=["label:N"])
        chart = alt.layer(chart, rule)
    return fit_width(chart.properties(title=title, height=HEIGHT, description=about), width)
