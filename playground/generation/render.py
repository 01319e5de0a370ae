"""Presenting generated tokens: HTML coloured by probability (alternatives on hover) and a table.

Pure functions (no gradio); the Generate tab shows their output.
"""
from __future__ import annotations

import html
from collections.abc import Sequence

import pandas as pd

from playground.generation.events import SampleResult, StepEvent

LEGEND = (
    '<div class="gen-legend" style="font-size:0.85em;margin:4px 0">'
    "Token colour = the model's probability of the token: "
    '<span style="background:hsl(0,75%,82%);padding:0 4px">low</span> '
    '<span style="background:hsl(60,75%,82%);padding:0 4px">medium</span> '
    '<span style="background:hsl(120,75%,82%);padding:0 4px">high</span>'
    " · hover a token for its top-5 alternatives</div>"
)


def prob_color(p: float) -> str:
    """Red (0) -> yellow (0.5) -> green (1) background."""
    p = min(max(p, 0.0), 1.0)
    return f"hsl({round(120 * p)},75%,82%)"


def visible(text: str) -> str:
    """Whitespace made visible for labels: ␣ for a space, ⏎ for a newline, ⇥ for a tab."""
    return text.replace(" ", "␣").replace("\n", "⏎").replace("\t", "⇥")


def _tooltip(ev: StepEvent) -> str:
    lines = [f"#{ev.index} {visible(ev.text) or '(special)'}  p = {ev.prob:.3f}"]
    if ev.sampled_prob != 1.0 or ev.prob == 1.0:
        lines[0] += f" (sampled with p = {ev.sampled_prob:.3f})"
    lines += [f"{visible(t) or repr(t)}  {p:.3f}" for _, t, p in ev.alternatives]
    return "\n".join(lines)


def tokens_html(sample: SampleResult | None, events: Sequence[StepEvent], prompt: str = "", selected: int | None = None,
                title: str | None = None) -> str:
    """The prompt in grey, then each generated token on a background coloured by its probability;
    the tooltip lists the top-5 alternatives. `selected` outlines one token."""
    parts = ['<div class="gen-output" style="font-family:ui-monospace,monospace;white-space:pre-wrap;'
             'line-height:1.7;font-size:0.95em">']
    if title:
        parts.append(f'<div style="font-weight:600;margin-bottom:2px">{html.escape(title)}</div>')
    if prompt:
        parts.append(f'<span style="color:#888">{html.escape(prompt)}</span>')
    for ev in events:
        label = ev.text if ev.text else ("⟨eos⟩" if ev.stopped else "·")
        outline = "outline:2px solid #3366cc;" if selected == ev.index else ""
        parts.append(
            f'<span data-index="{ev.index}" title="{html.escape(_tooltip(ev), quote=True)}" '
            f'style="background:{prob_color(ev.prob)};{outline}border-radius:3px;cursor:help">'
            f"{html.escape(label)}</span>"
        )
    parts.append("</div>")
    return "".join(parts)


def token_table(events: Sequence[StepEvent], sample: int = 0) -> pd.DataFrame:
    """One row per generated token: index, token, its probability, the top-5 alternatives."""
    rows = []
    for ev in events:
        row = {"sample": sample + 1, "index": ev.index, "token": visible(ev.text) if ev.text else ("<eos>" if ev.stopped else ""),
               "token_id": ev.token_id, "probability": round(ev.prob, 4), "sampled_probability": round(ev.sampled_prob, 4)}
        for j in range(5):
            if j < len(ev.alternatives):
                _, t, p = ev.alternatives[j]
                row[f"alt{j + 1}"] = f"{visible(t)} {p:.3f}"
            else:
                row[f"alt{j + 1}"] = ""
        rows.append(row)
    columns = ["sample", "index", "token", "token_id", "probability", "sampled_probability", *(f"alt{j}" for j in range(1, 6))]
    return pd.DataFrame(rows, columns=columns)


def token_choices(events: Sequence[StepEvent]) -> list[tuple[str, int]]:
    """(label, index) pairs for a token picker."""
    return [(f"#{ev.index}  {visible(ev.text) if ev.text else '<eos>'}  (p = {ev.prob:.3f})", ev.index) for ev in events]
