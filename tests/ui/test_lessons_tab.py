"""The Lessons tab: its handlers without a browser (widgets from Params, examples, slot updates,
errors as messages), its place in the app, and one lesson used in a real headless Chromium."""
from __future__ import annotations

import functools
import time

import gradio as gr
import pandas as pd
import pytest

from playground.lessons import Param, all_lessons
from playground.lessons.sampling import LESSON as SAMPLING
from playground.settings import make_settings
from playground.ui import lessons_tab
from playground.ui.app import build_app
from playground.ui.components import Slider
from tests.ui.browser_helpers import BROWSER, open_app, open_tab, text_of


def browser_test(fn):
    """Mark one test as a browser test (the rest of this module runs without Chromium)."""
    return functools.reduce(lambda f, mark: mark(f), BROWSER, fn)


def test_widgets_follow_the_param_kind_and_bounds():
    with gr.Blocks():
        slider = lessons_tab.widget(Param("t", "T", "float", 1.0, minimum=0.0, maximum=5.0, step=0.05))
        number = lessons_tab.widget(Param("seed", "Seed", "int", 0, minimum=0, maximum=2**31 - 1, step=1))
        choice = lessons_tab.widget(Param("mask", "Mask", "choice", "none", choices=("none", "causal")))
        text = lessons_tab.widget(Param("q", "Q", "text", "1, 0", max_chars=600))
        tick = lessons_tab.widget(Param("b", "B", "bool", True))
    assert isinstance(slider, Slider) and (slider.minimum, slider.maximum, slider.step) == (0.0, 5.0, 0.05)
    assert isinstance(number, gr.Number) and number.precision == 0 and number.maximum == 2**31 - 1
    assert isinstance(choice, gr.Dropdown) and [c[0] for c in choice.choices] == ["none", "causal"]
    assert isinstance(text, gr.Textbox) and text.max_length == 600
    assert isinstance(tick, gr.Checkbox) and tick.value is True


def test_examples_fill_every_widget_and_a_run_fills_the_slots():
    values = lessons_tab.preset_values(SAMPLING, "Sharp: T = 0.5, top-k 2")
    assert values == ["2, 1, 0.5, -0.5", 0.5, 2, 1.0, 0.0]
    assert lessons_tab.preset_values(SAMPLING, None) == [p.default for p in SAMPLING.params]
    out = lessons_tab.run_lesson(SAMPLING, *values)
    assert len(out) == 1 + SAMPLING.max_charts + SAMPLING.max_tables + 1
    assert "Sampled from: 2 of 4 tokens" in out[0] and "T = 1: the notes print" in out[0]
    charts, tables, csv = out[1:3], out[3:-1], out[-1]
    assert all(u["visible"] for u in charts + tables)
    assert tables[0]["label"] == "After each filter" and isinstance(tables[0]["value"], pd.DataFrame)
    # the download holds every chart's data and every table, each row saying where it is drawn
    data = pd.read_csv(csv)
    shown = set(data["shown_in"])
    assert {"What each filter leaves", "After each filter"} <= shown
    table = tables[0]["value"]
    rows = data[data["shown_in"] == "After each filter"]
    assert len(rows) == len(table) and list(rows[table.columns[0]].astype(str)) == list(table.iloc[:, 0].astype(str))


def test_unused_slots_are_hidden():
    attention = all_lessons()["attention_steps"]
    view = attention.run()
    wide = attention.__class__(**{**attention.__dict__, "max_charts": 3, "max_tables": 4})
    out = lessons_tab.view_updates(wide, view)
    assert [u["visible"] for u in out[1:4]] == [True, False, False]
    assert [u["visible"] for u in out[4:-1]] == [True, True, False, False]


def test_bad_input_is_a_message_and_the_charts_and_tables_stay():
    handler = lessons_tab._runner(SAMPLING)
    slots = SAMPLING.max_charts + SAMPLING.max_tables + 1  # charts, tables, the CSV
    with pytest.warns(UserWarning, match="'x' is not a number"):  # gr.Warning outside a request warns
        out = handler("1, x", 1.0, 0, 1.0, 0.0)
    assert out[0] == "**Cannot run this:** Logits: 'x' is not a number; write numbers like 0.5 or -2."
    assert all(isinstance(u, type(gr.skip())) for u in out[1:]) and len(out) == 1 + slots
    with pytest.warns(UserWarning):
        assert "at most 32 numbers" in handler(", ".join(["1"] * 40), 1.0, 0, 1.0, 0.0)[0]


def test_other_failures_are_a_short_message_without_a_trace(monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("/secret/path exploded")

    monkeypatch.setattr(lessons_tab, "run_lesson", broken)
    with pytest.raises(gr.Error, match="Something went wrong") as caught:
        lessons_tab._runner(SAMPLING)("1, 2", 1.0, 0, 1.0, 0.0)
    assert "/secret" not in str(caught.value)


def test_the_tab_has_one_inner_tab_per_lesson_and_a_lane(tmp_path):
    app = build_app(make_settings(tmp_path, device="cpu"))
    inner = [b.elem_id for b in app.blocks.values() if type(b).__name__ == "Tab"
             and (b.elem_id or "").startswith("lesson-tab-")]
    assert inner[:len(all_lessons())] == [f"lesson-tab-{name}" for name in all_lessons()]
    runs = [d for d in app.fns.values() if (d.api_name or "").startswith("lesson_")]
    assert {d.api_name for d in runs} >= {f"lesson_{name}" for name in all_lessons()}
    assert {d.concurrency_id for d in runs} == {lessons_tab.LANE}
    assert {d.concurrency_limit for d in runs} == {lessons_tab.LANE_SLOTS}


@browser_test
def test_lessons_tab_in_a_browser(browser, app_server):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    wait = open_app(browser, app_server.url)
    open_tab(browser, wait, "Lessons")
    # The first lesson is drawn at once: its stage chart and the formula (KaTeX) are on the page.
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#tab-lessons [data-testid='altair'] canvas, "
                                                          "#tab-lessons [data-testid='altair'] svg"))
    assert browser.find_elements(By.CSS_SELECTOR, "#lesson-attention_steps-about .katex")
    open_tab(browser, wait, "Sampling")
    wait.until(lambda d: "Sampled from: 4 of 4 tokens" in text_of(d, "#lesson-sampling-notes"))
    assert "summing to 0.847" in text_of(browser, "#lesson-sampling-notes")

    box = browser.find_element(By.CSS_SELECTOR, "#lesson-tab-sampling textarea, #lesson-tab-sampling input[type=text]")
    box.clear()
    box.send_keys("3, 1, 0", Keys.ENTER)
    wait.until(lambda d: "Sampled from: 3 of 3 tokens" in text_of(d, "#lesson-sampling-notes"))

    box.clear()
    box.send_keys("3, x", Keys.ENTER)
    wait.until(lambda d: "Cannot run this: Logits: 'x' is not a number" in text_of(d, "#lesson-sampling-notes"))
    assert box.get_attribute("value") == "3, x"  # the input stays for the student to fix
    plots = browser.find_elements(By.CSS_SELECTOR, "#lesson-tab-sampling [data-testid='altair']")
    assert len(plots) == 2 and all(p.is_displayed() for p in plots)  # the last good charts stay
    time.sleep(0.5)
    browser.save_screenshot("/tmp/lessons.png")


def test_the_first_lesson_computes_when_the_lessons_tab_first_opens(tmp_path):
    """Not at start-up (a quarter of a second of every start): opening the Lessons tab runs the
    first lesson into its view, once per page (a state flag), and later openings skip."""
    from playground.ui.lessons_tab import _once

    app = build_app(make_settings(tmp_path, device="cpu"))
    config = app.get_config_file()
    elem = {c["id"]: c["props"].get("elem_id") for c in config["components"]}
    (lessons_tab,) = [i for i, e in elem.items() if e == "tab-lessons"]
    (opened,) = [d for d in config["dependencies"] if [tuple(t) for t in d["targets"]] == [(lessons_tab, "select")]]
    assert "lesson-attention_steps-notes" in [elem[o] for o in opened["outputs"]]
    notes = next(b for b in app.blocks.values() if getattr(b, "elem_id", None) == "lesson-attention_steps-notes")
    assert notes.value == ""  # nothing computed while building

    calls = []
    run = _once(lambda *values: calls.append(values) or ["notes", "chart"], 2)
    assert run(False, 1, 2) == ["notes", "chart", True] and calls == [(1, 2)]
    assert run(True, 1, 2) == [gr.skip(), gr.skip(), True] and len(calls) == 1
