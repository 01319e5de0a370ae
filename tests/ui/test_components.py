"""Input components whose bad values read as sentences (no traceback, no bare "Error")."""
from __future__ import annotations

import gradio as gr
import pytest

from playground.ui.components import Slider


@pytest.mark.parametrize("payload, message", [(None, "Temperature is empty: type a number from 0 to 2"),
                                              ("", "Temperature is empty"),
                                              ("abc", "must be a number from 0 to 2"),
                                              (3, "must be from 0 to 2; 3 is outside")])
def test_a_cleared_or_wrong_slider_box_says_what_to_do(payload, message):
    slider = Slider(0, 2, value=0.8, step=0.05, label="Temperature")
    with pytest.raises(gr.Error, match=message) as raised:
        slider.preprocess(payload)
    assert raised.value.print_exception is False  # the server log stays free of tracebacks


def test_a_good_value_passes_as_gr_slider_gives_it():
    slider = Slider(0, 10, value=3, step=1, label="Top-k", precision=0)
    assert slider.preprocess(4.0) == gr.Slider(0, 10, value=3, step=1, precision=0).preprocess(4.0) == 4
    assert slider.get_block_name() == "slider"


def test_charts_go_out_without_the_leaking_actions_menu():
    """Chart: the altair spec the browser gets turns vega-embed's actions menu off (its document
    listener kept every replaced chart alive); the chart itself is unchanged."""
    import json

    import altair as alt
    import pandas as pd

    from playground.ui.components import Chart

    chart = alt.Chart(pd.DataFrame({"x": [1, 2], "y": [3, 4]})).mark_line().encode(x="x", y="y")
    sent = json.loads(Chart().postprocess(chart).plot)
    plain = json.loads(gr.Plot().postprocess(chart).plot)
    assert sent["usermeta"]["embedOptions"]["actions"] is False
    sent.pop("usermeta")
    assert sent == plain
    assert Chart().postprocess(None) is None and Chart().get_block_name() == "plot"


def test_chart_specs_are_validated_in_tests_only(monkeypatch):
    """The server sends a chart's spec unvalidated (validation was most of the cost of a live
    curve's refresh); the tests validate every chart they send, so a bad spec still fails them."""
    import json

    import altair as alt
    import pandas as pd

    from playground.ui.components import VALIDATE_ENV, Chart

    bad = alt.Chart(pd.DataFrame({"x": [1, 2], "y": [3, 4]})).mark_line().encode(x="x", y="y")
    bad.width = "wide"  # not checked when set; the schema wants a number or "container"
    monkeypatch.setenv(VALIDATE_ENV, "1")
    with pytest.raises(Exception, match="width|wide"):
        Chart().postprocess(bad)
    monkeypatch.setenv(VALIDATE_ENV, "0")
    assert json.loads(Chart().postprocess(bad).plot)["width"] == "wide"
