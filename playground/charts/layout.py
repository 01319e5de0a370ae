"""Chart sizes that fit the app's plot boxes (pure; no gradio).

gr.Plot draws an altair chart at the size its spec asks for, centred in the box: a chart wider
than its box loses its left axis and its right edge (the overflow is clipped on both sides), and
``width="container"`` does not help there (the chart's wrapper shrinks to its content, so the
container measures 0). So every chart here has a fixed *total* width: single and layered views
use ``autosize fit-x`` (axes, legend and title drawn inside the width), concatenated and faceted
ones size their panels so that panels plus labels stay within the same budget.

Budgets are the boxes' inner widths in a 1400 px window, less the 12 px canvas padding and a
margin; the half-width Train charts also fit their boxes in a 1000 px window.
"""
from __future__ import annotations

from typing import TypeVar

import altair as alt
import pandas as pd

# Total widths (px) per box, axes and legends included.
HALF = 320  # Train: learning rate, throughput (boxes 392 px at 1400, 328 px at 1000)
TRAIN = 560  # Train: loss, confusion, run overlay, bottleneck (boxes 800 and 600 px)
GENERATE = 660  # Generate: distribution, alignment, classes (box 720 px)
TOKENIZER = 620  # Tokenizer: charts sub-tab (box about 740 px)
FULL = 1120  # Analyze and its experiments: full-width boxes (1216 px and a little less)

FIT_X = alt.AutoSizeParams(type="fit-x", contains="padding")

ChartT = TypeVar("ChartT", alt.Chart, alt.LayerChart)


def fit_width(chart: ChartT, width: int) -> ChartT:
    """`chart` (a single or layered view) drawn `width` px wide in all, its height unchanged."""
    return chart.properties(width=int(width), autosize=FIT_X)


def panel_width(budget: int, panels: int, overhead: int, least: int = 40) -> int:
    """The width of each of `panels` side-by-side panels when each costs `overhead` px beside its
    plot (axis labels, titles, spacing) and all must fit in `budget` px (never below `least`)."""
    return max(least, (budget - panels * overhead) // max(1, panels))


def chart_frames(chart: alt.TopLevelMixin) -> list[pd.DataFrame]:
    """The DataFrames a chart draws: its own and its layers' and panels', each once, in order."""
    frames: list[pd.DataFrame] = []

    def walk(part: object) -> None:
        data = getattr(part, "data", None)
        if isinstance(data, pd.DataFrame) and not any(f is data for f in frames):
            frames.append(data)
        for attr in ("layer", "hconcat", "vconcat", "concat"):
            children = getattr(part, attr, None)
            if isinstance(children, list):
                for child in children:
                    walk(child)
        spec = getattr(part, "spec", None)  # a faceted or repeated chart draws its inner spec
        if spec is not None and spec is not alt.Undefined:
            walk(spec)

    walk(chart)
    return frames
