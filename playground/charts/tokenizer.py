"""Altair charts for the Tokenizer tab: DataFrame in, Chart out."""
from __future__ import annotations

import altair as alt
import pandas as pd

from playground.charts.layout import TOKENIZER, fit_width


def token_length_chart(lengths: pd.DataFrame) -> alt.Chart:
    """Bars of token length in bytes: share of the vocabulary and share of the corpus' tokens.

    `lengths` is `playground.tokenization.vocab.token_length_table(...)`.
    """
    columns = {"vocabulary_share": "vocabulary", "corpus_share": "corpus occurrences"}
    long = lengths.melt(id_vars=["length_bytes"], value_vars=[c for c in columns if c in lengths],
                        var_name="measure", value_name="share").dropna()
    long["measure"] = long["measure"].map(columns)
    return fit_width(
        alt.Chart(long)
        .mark_bar()
        .encode(
            x=alt.X("length_bytes:O", title="token length (bytes)"),
            xOffset=alt.XOffset("measure:N"),
            y=alt.Y("share:Q", title="share", axis=alt.Axis(format="%")),
            color=alt.Color("measure:N", title=None, legend=alt.Legend(orient="top")),
            tooltip=["length_bytes", "measure", alt.Tooltip("share:Q", format=".1%")],
        )
        .properties(title="How long are the tokens?", height=260),
        TOKENIZER,
    )


def compression_chart(sweep: pd.DataFrame, current: int | None = None) -> alt.LayerChart | alt.Chart:
    """Characters per token and tokens per word on held-out text, against vocabulary size (log2 axis).

    `sweep` has vocab_size, chars_per_token, tokens_per_word; `current` marks one vocabulary size.
    """
    long = sweep.melt(id_vars=["vocab_size"], value_vars=["chars_per_token", "tokens_per_word"],
                      var_name="measure", value_name="value")
    long["measure"] = long["measure"].map({"chars_per_token": "characters per token", "tokens_per_word": "tokens per word"})
    base = alt.Chart(long).encode(
        x=alt.X("vocab_size:Q", title="vocabulary size", scale=alt.Scale(type="log", base=2)),
        y=alt.Y("value:Q", title="held-out text"),
        color=alt.Color("measure:N", title=None, legend=alt.Legend(orient="top")),
        tooltip=["vocab_size", "measure", alt.Tooltip("value:Q", format=".3f")],
    )
    chart = base.mark_line(point=True)
    if current is not None:
        rule = alt.Chart(pd.DataFrame({"vocab_size": [current]})).mark_rule(strokeDash=[4, 4], color="gray").encode(
            x="vocab_size:Q")
        chart = alt.layer(chart, rule)
    return fit_width(chart.properties(title="Compression as the vocabulary grows", height=260), TOKENIZER)


def comparison_chart(summary: pd.DataFrame) -> alt.Chart:
    """Token counts of the compared tokenizers on the same text."""
    return fit_width(
        alt.Chart(summary)
        .mark_bar()
        .encode(
            x=alt.X("tokens:Q", title="tokens for the text"),
            y=alt.Y("tokenizer:N", title=None),
            color=alt.Color("tokenizer:N", legend=None),
            tooltip=["tokenizer", "tokens", "chars_per_token", "tokens_per_word", "vocab_size"],
        )
        .properties(title="Same text, two tokenizers", height=120),
        TOKENIZER,
    )
