"""Altair charts of a mixture of experts' routing: DataFrame in, Chart out (pure).

Frames come from :mod:`playground.families.gpt.experts`: ``expert_load`` (layer, expert, share,
tokens) and ``routing_frame`` (position, token, layer, expert, gate, rank).
"""
from __future__ import annotations

import altair as alt
import pandas as pd

from playground.charts.layout import FULL, fit_width

LOAD_SCALE = alt.Scale(domain=[0, 1], range=["#f7f7f7", "#b2182b"])


def expert_load_chart(load: pd.DataFrame, width: int = FULL // 2) -> alt.LayerChart:
    """Layers (rows) by experts (columns), coloured and labelled by the expert's share of the
    routing: an even load reads as one flat colour, a collapsed router as one dark column."""
    base = alt.Chart(load).encode(
        x=alt.X("expert:O", title="expert"),
        y=alt.Y("layer:O", title="layer"),
    )
    cells = base.mark_rect().encode(
        color=alt.Color("share:Q", scale=LOAD_SCALE, title="share of tokens"),
        tooltip=["layer:O", "expert:O", alt.Tooltip("share:Q", format=".1%"), "tokens:Q"],
    )
    labels = base.mark_text(fontSize=11).encode(text=alt.Text("share:Q", format=".0%"))
    chart = (cells + labels).properties(height=max(60, 28 * load["layer"].nunique()),
                                        title="Expert load per layer")
    return fit_width(chart, width)


def expert_tokens_chart(routes: pd.DataFrame, width: int = FULL) -> alt.LayerChart:
    """Tokens (columns, in text order) by layers (rows): each cell shows the expert with the largest
    gate for that token in that layer (colour and number), the gate in the tooltip."""
    top = routes[routes["rank"] == 0].copy()
    top["label"] = [f"{p}:{t!r}"[:14] for p, t in zip(top["position"], top["token"])]
    order = top.drop_duplicates("position").sort_values("position")["label"].tolist()
    base = alt.Chart(top).encode(
        x=alt.X("label:N", sort=order, title="token", axis=alt.Axis(labelAngle=-60, labelLimit=90)),
        y=alt.Y("layer:O", title="layer"),
    )
    cells = base.mark_rect().encode(
        color=alt.Color("expert:N", title="top expert"),
        tooltip=["position:Q", "token:N", "layer:O", "expert:N", alt.Tooltip("gate:Q", format=".2f")],
    )
    labels = base.mark_text(fontSize=10).encode(text="expert:N")
    chart = (cells + labels).properties(height=max(60, 28 * top["layer"].nunique()),
                                        title="Which expert each token went to (largest gate)")
    return fit_width(chart, width)
