"""The "Claims, reproduced" view's handlers, without a browser."""
from __future__ import annotations

import gradio as gr
import pandas as pd
import pytest

from playground.reproduce import all_claims, get_claim
from playground.settings import make_settings
from playground.ui import claims_view as cv
from playground.ui.tables import Table


@pytest.mark.parametrize("name", list(all_claims()))
def test_the_shipped_result_shows_at_once_with_the_papers_figure(name):
    view = cv.show_claim(name)
    claim = get_claim(name)
    assert claim.citation in view.about and claim.paper in view.about
    assert isinstance(view.table, pd.DataFrame) and not view.table.empty
    with gr.Blocks():
        shown = Table(label="t").postprocess(view.table)  # what the browser gets: mixed columns survive
    assert shown.headers == [str(c) for c in view.table.columns] and len(shown.data) == len(view.table)
    assert view.chart is not None and view.chart.to_dict()["title"] == claim.title
    shipped = claim.shipped()
    assert shipped.verdict[1:] in view.verdict and "shipped result" in view.verdict
    assert view.verdict.startswith(cv.VERDICT_MARKS[shipped.holds])


def test_an_unknown_claim_is_a_user_error():
    with pytest.raises(gr.Error, match="No claim"):
        cv.show_claim("no-such-claim")


def test_choices_name_every_claim():
    assert [n for _, n in cv.claim_choices()] == list(all_claims())


def test_rerun_streams_progress_then_the_new_result(workspace):
    settings = make_settings(workspace.root, device="cpu")
    views = list(cv.rerun_claim(workspace, settings, "pe_extrapolation", quick=True))
    assert len(views) >= 2
    assert "run 1 of 5" in views[0].status
    last = views[-1]
    assert "your re-run" in last.verdict and "quick smoke run" in last.verdict
    assert isinstance(last.table, pd.DataFrame) and len(last.table) == 5
    assert workspace.exists("models", "reproduce-pe_extrapolation-alibi")


def test_closing_a_rerun_stops_it_before_the_next_run(workspace):
    settings = make_settings(workspace.root, device="cpu")
    events = cv.rerun_claim(workspace, settings, "pe_extrapolation", quick=True)
    first = next(events)
    assert "run 1 of 5" in first.status
    events.close()  # what a Stop does to the streaming handler
    assert not workspace.exists("models", "reproduce-pe_extrapolation-sinusoidal")
