"""Altair charts for the model lessons (block parts, BPE by hand, bottleneck): data in, Chart out."""
from __future__ import annotations

import altair as alt
import pandas as pd

from playground.charts.layout import FULL, fit_width, panel_width

HEIGHT = 240
HALF_FULL = FULL // 2 - 20  # two charts side by side in a full-width row
# Each of two panels stacked in a half-width box (a lesson shows two charts a row): its plot
# width, leaving room for the y axis's labels and title beside it.
STACKED = HALF_FULL - 110


def parts_chart(parts: pd.DataFrame, title: str) -> alt.Chart:
    """Horizontal bars of parameters per part. `parts`: part, parameters, share."""
    return fit_width(
        alt.Chart(parts)
        .mark_bar(color="#3366cc")
        .encode(
            x=alt.X("parameters:Q", title="parameters"),
            y=alt.Y("part:N", sort="-x", title=None),
            tooltip=["part", alt.Tooltip("parameters:Q", format=","), alt.Tooltip("share:Q", format=".1%")],
        )
        .properties(height=max(80, 26 * len(parts)), title=title),
        HALF_FULL,
    )


def flops_context_chart(flops: pd.DataFrame, context: int) -> alt.LayerChart:
    """Training FLOPs per token against context length, stacked by term, the chosen T marked.
    `flops`: T, term, flops."""
    bars = (
        alt.Chart(flops)
        .mark_area(opacity=0.8)
        .encode(
            x=alt.X("T:Q", title="context T (tokens, log scale)", scale=alt.Scale(type="log", base=2)),
            y=alt.Y("flops:Q", stack=True, title="training FLOPs per token"),
            color=alt.Color("term:N", title=None, legend=alt.Legend(orient="top")),
            tooltip=["T", "term", alt.Tooltip("flops:Q", format=".3s")],
        )
    )
    rule = alt.Chart(pd.DataFrame({"T": [context]})).mark_rule(strokeDash=[4, 3], color="black").encode(x="T:Q")
    return fit_width(alt.layer(bars, rule).properties(height=HEIGHT, title="Where the FLOPs go as T grows"), HALF_FULL)


def norm_placement_chart(probe: pd.DataFrame) -> alt.VConcatChart:
    """Per layer at init: residual-stream RMS and block gradient norm, pre- vs post-LN.
    `probe`: placement, layer, activation_rms, grad_norm."""
    base = alt.Chart(probe).mark_line(point=True).encode(
        x=alt.X("layer:Q", title="block"),
        color=alt.Color("placement:N", title=None, legend=alt.Legend(orient="top")),
        tooltip=["placement", "layer", alt.Tooltip("activation_rms:Q", format=".3f"),
                 alt.Tooltip("grad_norm:Q", format=".3g")],
    )
    acts = base.encode(y=alt.Y("activation_rms:Q", title="RMS of the block's output")).properties(
        width=STACKED, height=HEIGHT, title="Activations at init")
    grads = base.encode(y=alt.Y("grad_norm:Q", title="‖∂loss/∂θ‖ of the block", scale=alt.Scale(type="log"))).properties(
        width=STACKED, height=HEIGHT, title="Gradients at init")
    return alt.vconcat(acts, grads, spacing=20)


def attention_cost_chart(cost: pd.DataFrame) -> alt.VConcatChart:
    """Bytes and milliseconds against T (log-log): the computed T×T matrix, then each path measured.
    `cost`: T, score_matrix_bytes, explicit_bytes, fused_bytes, explicit_ms, fused_ms."""
    names = {"score_matrix_bytes": "one T×T matrix (computed)", "explicit_bytes": "explicit path (measured)",
             "fused_bytes": "fused SDPA (measured)", "explicit_ms": "explicit path", "fused_ms": "fused SDPA"}
    memory = cost.melt("T", ["score_matrix_bytes", "explicit_bytes", "fused_bytes"], "series", "bytes")
    memory["series"] = memory["series"].map(names)
    timing = cost.melt("T", ["explicit_ms", "fused_ms"], "series", "ms")
    timing["series"] = timing["series"].map(names)
    x = alt.X("T:Q", title="sequence length T", scale=alt.Scale(type="log", base=2))
    mem = alt.Chart(memory).mark_line(point=True).encode(
        x=x, y=alt.Y("bytes:Q", title="bytes", scale=alt.Scale(type="log")),
        color=alt.Color("series:N", title=None, legend=alt.Legend(orient="bottom", columns=1)),
        tooltip=["series", "T", alt.Tooltip("bytes:Q", format=",")],
    ).properties(width=STACKED, height=HEIGHT, title="Memory of one attention call")
    time_ = alt.Chart(timing).mark_line(point=True).encode(
        x=x, y=alt.Y("ms:Q", title="milliseconds (this server)", scale=alt.Scale(type="log")),
        color=alt.Color("series:N", title=None, legend=alt.Legend(orient="bottom", columns=1)),
        tooltip=["series", "T", alt.Tooltip("ms:Q", format=".2f")],
    ).properties(width=STACKED, height=HEIGHT, title="Time of one attention call")
    return alt.vconcat(mem, time_, spacing=20).resolve_scale(color="independent")


def merge_counts_chart(counts: pd.DataFrame) -> alt.LayerChart:
    """Pair counts before each merge (the top pairs of each step), the chosen pair outlined.
    `counts`: step, pair, count, chosen."""
    pairs = counts.drop_duplicates("pair")["pair"].tolist()
    base = alt.Chart(counts).encode(
        x=alt.X("step:O", title="merge step", axis=alt.Axis(labelAngle=0)),
        y=alt.Y("pair:N", title=None, sort=pairs),
    )
    cells = base.mark_rect().encode(
        color=alt.Color("count:Q", scale=alt.Scale(scheme="blues"), title="count"),
        stroke=alt.condition("datum.chosen", alt.value("black"), alt.value(None)),
        strokeWidth=alt.condition("datum.chosen", alt.value(2), alt.value(0)),
        tooltip=["step", "pair", "count", "chosen"],
    )
    text = base.mark_text(fontSize=10).encode(text="count:Q")
    height = max(120, min(560, 18 * len(pairs)))
    return fit_width(alt.layer(cells, text).properties(height=height, title="Pair counts before each merge (chosen: outlined)"),
                     HALF_FULL)


def symbols_chart(steps: pd.DataFrame) -> alt.Chart:
    """Symbols the corpus takes after each merge. `steps`: step, symbols in corpus, vocabulary, merge."""
    return fit_width(
        alt.Chart(steps)
        .mark_line(point=True)
        .encode(
            x=alt.X("step:Q", title="merges learned"),
            y=alt.Y("symbols in corpus:Q", title="symbols in the corpus", scale=alt.Scale(zero=False)),
            tooltip=["step", "merge", "symbols in corpus", "vocabulary"],
        )
        .properties(height=HEIGHT, title="Fewer, longer symbols as the vocabulary grows"),
        HALF_FULL,
    )


def throughput_chart(speed: pd.DataFrame) -> alt.FacetChart:
    """Tokens per second against length, one panel per mode, a line per model (log-log).
    `speed`: model, mode, length, tokens_per_s."""
    modes = list(dict.fromkeys(speed["mode"]))
    return (
        alt.Chart(speed)
        .mark_line(point=True)
        .encode(
            x=alt.X("length:Q", title="tokens per sequence", scale=alt.Scale(type="log", base=2)),
            y=alt.Y("tokens_per_s:Q", title="tokens / s (this server)", scale=alt.Scale(type="log")),
            color=alt.Color("model:N", title=None, legend=alt.Legend(orient="top")),
            tooltip=["model", "mode", "length", alt.Tooltip("tokens_per_s:Q", format=",.0f")],
        )
        .properties(width=panel_width(FULL, len(modes), 90), height=HEIGHT)
        .facet(column=alt.Column("mode:N", sort=modes, title=None))
        .properties(title="RNN vs Transformer, measured")
    )
