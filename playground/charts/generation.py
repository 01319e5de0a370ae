"""Charts of the Generate tab: DataFrame in, altair Chart out (pure, no gradio).

- `distribution_chart`: the next-token distribution and what temperature, top-k, top-p and
  min-p leave of it (one panel per stage, removed tokens greyed).
- `alignment_chart`: a seq2seq alignment heatmap, target rows x source columns (Bahdanau et
  al. 2015, Fig. 3: white = high weight).
- `class_chart`: ViT class probabilities.
"""
from __future__ import annotations

import json
from collections.abc import Sequence

import altair as alt
import numpy as np
import pandas as pd

from playground.charts.layout import GENERATE, fit_width

STAGE_ORDER = ["model (T = 1)", "after temperature", "after top-k", "after top-p", "after min-p (sampled from)"]


def _unique_labels(labels: Sequence[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for label in labels:
        label = label if label != "" else "∅"
        if label in seen:
            seen[label] += 1
            out.append(f"{label}#{seen[label]}")
        else:
            seen[label] = 0
            out.append(label)
    return out


def distribution_chart(df: pd.DataFrame, title: str = "Next-token distribution") -> alt.Chart:
    """Bars per token (x, by rank) and stage (rows): probability; tokens a filter removed are grey.

    `df` columns: rank, token, stage, probability, kept (as from
    `playground.generation.api.distribution_table`).
    """
    data = df.copy()
    order = data.drop_duplicates("rank").sort_values("rank")
    labels = dict(zip(order["rank"], _unique_labels(order["token"].astype(str).tolist())))
    data["label"] = data["rank"].map(labels)
    data["status"] = np.where(data["kept"], "kept", "removed")
    stages = [s for s in STAGE_ORDER if s in set(data["stage"])]
    base = alt.Chart(data).encode(
        x=alt.X("label:N", sort=[labels[r] for r in order["rank"]], title="token (most likely first)",
                axis=alt.Axis(labelAngle=0, labelOverlap=False)),
        y=alt.Y("probability:Q", title="p"),  # one scale shared by the stages (facet default)
        tooltip=[alt.Tooltip("token:N"), alt.Tooltip("stage:N"), alt.Tooltip("probability:Q", format=".4f"),
                 alt.Tooltip("status:N")],
    )
    bars = base.mark_bar().encode(
        color=alt.Color("status:N", scale=alt.Scale(domain=["kept", "removed"], range=["#3366cc", "#dddddd"]),
                        legend=alt.Legend(title=None, orient="top")),
    )
    # The stage names (row headers, left) and the y axis take about 240 px beside the bars.
    return (
        bars.properties(width=min(GENERATE - 240, max(240, 22 * len(labels))), height=70 if len(stages) > 1 else 160)
        .facet(row=alt.Row("stage:N", sort=stages, title=None, header=alt.Header(labelAngle=0, labelAlign="left")))
        .properties(title=title)
    )


def alignment_frame(alignment: np.ndarray, source_tokens: Sequence[str], target_tokens: Sequence[str]) -> pd.DataFrame:
    """Long table of an alignment matrix [T,S]: target_index, target, source_index, source, weight."""
    alignment = np.asarray(alignment, dtype=float)
    T, S = alignment.shape
    rows = [
        {"target_index": t, "target": target_tokens[t] if t < len(target_tokens) else str(t),
         "source_index": s, "source": source_tokens[s] if s < len(source_tokens) else str(s),
         "weight": float(alignment[t, s])}
        for t in range(T) for s in range(S)
    ]
    return pd.DataFrame(rows, columns=["target_index", "target", "source_index", "source", "weight"])


def alignment_chart(df: pd.DataFrame, title: str = "Alignment (attention over the source for each output token)") -> alt.Chart:
    """Heatmap: rows = output tokens (top to bottom), columns = source tokens; white = high."""
    src = df.drop_duplicates("source_index").sort_values("source_index")["source"].astype(str).tolist()
    tgt = df.drop_duplicates("target_index").sort_values("target_index")["target"].astype(str).tolist()
    src_expr = f"{json.dumps([s if s.strip() else '␣' for s in src])}[datum.value]"
    tgt_expr = f"{json.dumps([t if t.strip() else '␣' for t in tgt])}[datum.value]"
    n_src, n_tgt = max(len(src), 1), max(len(tgt), 1)
    cell = max(10, min(28, 520 // max(n_src, n_tgt)))
    return fit_width(
        alt.Chart(df)
        .mark_rect()
        .encode(
            x=alt.X("source_index:O", title="source", axis=alt.Axis(labelExpr=src_expr, labelAngle=0, orient="top")),
            y=alt.Y("target_index:O", title="output", axis=alt.Axis(labelExpr=tgt_expr)),
            color=alt.Color("weight:Q", scale=alt.Scale(scheme="greys", reverse=True, domain=[0, 1]), title="weight"),
            tooltip=[alt.Tooltip("target:N", title="output token"), alt.Tooltip("source:N", title="source token"),
                     alt.Tooltip("weight:Q", format=".3f")],
        )
        .properties(height=cell * n_tgt, title=title),
        min(GENERATE, cell * n_src + 220),  # + output labels, axis titles and the colour legend
    )


def class_chart(df: pd.DataFrame, title: str = "Class probabilities") -> alt.Chart:
    """Horizontal bars of class probabilities (`df` columns: class, probability), most likely on top."""
    return fit_width(
        alt.Chart(df)
        .mark_bar(color="#3366cc")
        .encode(
            x=alt.X("probability:Q", scale=alt.Scale(domain=[0, 1]), title="probability"),
            y=alt.Y("class:N", sort="-x", title=None),
            tooltip=[alt.Tooltip("class:N"), alt.Tooltip("probability:Q", format=".4f")],
        )
        .properties(height=max(60, 22 * len(df)), title=title),
        min(GENERATE, 480),
    )
