"""`chart_frames`: the data a chart draws, found in its layers and panels, each frame once."""
from __future__ import annotations

import altair as alt
import pandas as pd

from playground.charts.layout import chart_frames


def test_layers_panels_and_shared_data_each_once():
    a = pd.DataFrame({"x": [1, 2], "y": [3, 4]})
    b = pd.DataFrame({"x": [5], "y": [6]})
    base = alt.Chart(a).mark_line().encode(x="x", y="y")
    layered = base + alt.Chart(b).mark_point().encode(x="x", y="y")
    panels = alt.hconcat(layered, base, alt.Chart(b).mark_bar().encode(x="x", y="y"))
    frames = chart_frames(panels)
    assert len(frames) == 2 and frames[0] is a and frames[1] is b
    assert chart_frames(alt.Chart(a).mark_line().encode(x="x", y="y").facet(column="x:N")) == [a]
    assert chart_frames(alt.Chart().mark_rule()) == []  # no data of its own
