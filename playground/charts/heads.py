"""Altair charts of the head analysis (pure): DataFrame in, Chart out.

Frames come from :class:`playground.analysis.heads.report.HeadReport`: ``frame()`` (score,
module, layer, head, value) for the layer x head heatmaps, ``pruning_frame()`` (order,
removed, fraction, loss) for the pruning curve.
"""
from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import pandas as pd

from playground.charts.layout import FULL, fit_width, panel_width

TITLES = {
    "ablation_zero": "loss increase, head zeroed",
    "ablation_mean": "loss increase, head mean-ablated",
    "gradient": "importance |dL/dξ| (Michel et al.)",
    "previous": "previous-token score",
    "self": "self (same position) score",
    "next": "next-token score",
    "first": "first-token score",
    "induction": "induction score (repeated random tokens)",
}
SIGNED = {"ablation_zero", "ablation_mean"}  # can be negative: a diverging scale centred at 0


def _heatmap(df: pd.DataFrame, score: str, width: int, cell_height: int = 22) -> alt.Chart:
    """One score: rows = attention modules in layer order, columns = heads, colour = value."""
    modules = df.sort_values("layer")["module"].drop_duplicates().tolist()
    scale = (alt.Scale(scheme="redblue", domainMid=0, reverse=True) if score in SIGNED
             else alt.Scale(scheme="oranges"))
    base = alt.Chart(df).encode(
        x=alt.X("head:O", title="head"),
        y=alt.Y("module:N", sort=modules, title=None),
    )
    rect = base.mark_rect().encode(
        color=alt.Color("value:Q", scale=scale, title=None, legend=alt.Legend(orient="bottom", gradientLength=80)),
        tooltip=["module:N", "head:O", alt.Tooltip("value:Q", format=".4f")],
    )
    text = base.mark_text(fontSize=9).encode(text=alt.Text("value:Q", format=".2f"))
    return (rect + text).properties(title=TITLES.get(score, score), width=width,
                                    height=cell_height * len(modules))


def head_heatmaps_chart(frame: pd.DataFrame, scores: Sequence[str] | None = None, columns: int = 3,
                        budget: int = FULL) -> alt.VConcatChart:
    """Layer x head heatmaps, one panel per score (each its own colour scale), ``columns`` a row."""
    names = [s for s in (scores or frame["score"].drop_duplicates().tolist()) if s in set(frame["score"])]
    width = panel_width(budget, columns, overhead=130)
    panels = [_heatmap(frame[frame["score"] == s], s, width) for s in names]
    rows = [alt.hconcat(*panels[i:i + columns]).resolve_scale(color="independent")
            for i in range(0, len(panels), columns)]
    return alt.vconcat(*rows).resolve_scale(color="independent")


def pruning_chart(frame: pd.DataFrame, clean_loss: float | None = None, width: int = FULL // 2) -> alt.LayerChart:
    """Loss as heads are removed, least important first, one line per importance order."""
    line = alt.Chart(frame).mark_line(point=True).encode(
        x=alt.X("fraction:Q", title="fraction of heads removed", axis=alt.Axis(format="%")),
        y=alt.Y("loss:Q", title="validation loss", scale=alt.Scale(zero=False)),
        color=alt.Color("order:N", title="removed in order of"),
        tooltip=["order:N", "removed:Q", alt.Tooltip("loss:Q", format=".4f")],
    )
    layers: list[alt.Chart] = [line]
    if clean_loss is not None:
        rule = pd.DataFrame({"loss": [clean_loss], "label": ["all heads"]})
        layers.append(alt.Chart(rule).mark_rule(strokeDash=[4, 3], color="grey").encode(y="loss:Q"))
    return fit_width(alt.layer(*layers).properties(title="Pruning curve (Michel et al. 2019)", height=260), width)
