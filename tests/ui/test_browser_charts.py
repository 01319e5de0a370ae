"""Charts fit their boxes and tables show rounded numbers, in a real headless Chromium at 1400 px.

gr.Plot centres an altair chart at the size its spec asks for; a wider chart lost its left axis
(and its right edge) to the box. Each rendered chart's canvas must lie inside its gr.Plot box:
the Train tab's own charts after a short run, and the other tabs' chart builders (many tokens,
the widest case) in boxes laid out as in their tabs. Screenshots: /tmp/charts-*.png.
"""
from __future__ import annotations

import uuid

import numpy as np
import pandas as pd
import pytest

from tests.ui.browser_helpers import BROWSER, open_app, open_tab, text_of

pytestmark = BROWSER

BOXES_JS = """
const rect = e => { const b = e.getBoundingClientRect(); return [b.left, b.right, b.width]; };
return arguments[0].map(id => {
  const block = document.getElementById(id);
  const plot = block && block.querySelector('[data-testid="altair"]');
  const drawn = plot && plot.querySelector('canvas, svg.marks');
  return {id: id, box: plot ? rect(plot) : null, chart: drawn ? rect(drawn) : null};
});
"""


def _boxes(driver, ids: list[str]) -> list[dict]:
    return driver.execute_script(BOXES_JS, ids)


def _drawn(driver, ids: list[str]) -> bool:
    return all(b["chart"] and b["chart"][2] > 50 for b in _boxes(driver, ids))


def _cut_off(driver, ids: list[str]) -> list[str]:
    """The charts (by box id) whose canvas sticks out of their gr.Plot box, with the overhang."""
    cut = []
    for b in _boxes(driver, ids):
        (left, right, _), (c_left, c_right, _) = b["box"], b["chart"]
        if c_left < left - 1 or c_right > right + 1:
            cut.append(f"{b['id']}: canvas {c_left:.0f}..{c_right:.0f} in box {left:.0f}..{right:.0f}")
    return cut


def test_train_charts_keep_their_axes_inside_their_boxes(browser, app_server):
    """A short run draws loss, learning rate and throughput; none sticks out of its box."""
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    wait = open_app(browser, app_server.url)
    open_tab(browser, wait, "Train")
    for css, text in (("#train-name textarea, #train-name input", f"charts-{uuid.uuid4().hex[:6]}"),
                      ("#train-train-max-steps input", "20")):
        box = browser.find_element("css selector", css)
        box.click()
        box.send_keys(Keys.CONTROL, "a")
        box.send_keys(text)
    browser.find_element("id", "train-start").click()
    WebDriverWait(browser, 300).until(lambda d: "saved as" in text_of(d, "#train-status"))
    ids = ["train-loss-plot", "train-lr-plot", "train-tput-plot"]
    WebDriverWait(browser, 60).until(lambda d: _drawn(d, ids))
    browser.execute_script("document.getElementById('train-loss-plot').scrollIntoView()")
    browser.save_screenshot("/tmp/charts-train.png")
    assert _cut_off(browser, ids) == []


def _distribution() -> pd.DataFrame:
    from playground.charts.generation import STAGE_ORDER

    return pd.DataFrame([{"rank": r, "token": f"tok{r}", "stage": s, "probability": 1 / 40, "kept": r < 20}
                         for r in range(40) for s in STAGE_ORDER])


def _importance(n_units: int, n_rows: int) -> pd.DataFrame:
    return pd.DataFrame([{"method": m, "row": r, "row_label": f"out{r}", "unit": u, "unit_label": f"word{u}",
                          "special": False, "value": float((u * 7 + r) % 11)}
                         for m in ("attention", "ig", "saliency", "ixg", "loo") for r in range(n_rows)
                         for u in range(n_units)])


@pytest.fixture(scope="module")
def charts_page():
    """The other tabs' chart builders (widest cases) in boxes laid out as in their tabs, and a Table."""
    import gradio as gr

    from playground.charts import analysis, experiments, generation
    from playground.ui.tables import Table
    from tests.conftest import free_port

    units = [f"unit{i}" for i in range(90)]
    with gr.Blocks() as page:
        with gr.Row():  # the Generate tab: controls (scale 2) beside the outputs (scale 3)
            with gr.Column(scale=2):
                gr.Textbox(label="prompt")
            with gr.Column(scale=3):
                gr.Plot(generation.distribution_chart(_distribution()), elem_id="c-dist")
                src = [f"src{i}" for i in range(40)]
                gr.Plot(generation.alignment_chart(generation.alignment_frame(np.eye(30, 40), src, src[:30])),
                        elem_id="c-align")
        # Analyze and its experiments: full width
        gr.Plot(analysis.matrices_chart(_importance(24, 20)), elem_id="c-matrices")
        gr.Plot(analysis.token_strips_chart(_importance(120, 1)), elem_id="c-strips")
        gr.Plot(experiments.attention_pair_chart(units, [1 / 90] * 90, [1 / 90] * 90), elem_id="c-pair")
        Table(pd.DataFrame({"run": ["a"], "loss": [5.617342877388], "lr": [0.000123456], "tokens": [12345.6],
                            "steps": [200]}), interactive=False, elem_id="c-table")
    port = free_port()
    page.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        page.close()


def test_generate_and_analyze_charts_fit_their_boxes(browser, charts_page):
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(charts_page)
    ids = ["c-dist", "c-align", "c-matrices", "c-strips", "c-pair"]
    WebDriverWait(browser, 60).until(lambda d: _drawn(d, ids))
    for name in ids:
        browser.execute_script(f"document.getElementById('{name}').scrollIntoView()")
        browser.save_screenshot(f"/tmp/charts-{name}.png")
    assert _cut_off(browser, ids) == []


def test_tables_show_four_significant_digits(browser, charts_page):
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(charts_page)
    WebDriverWait(browser, 60).until(lambda d: "5.617" in text_of(d, "#c-table"))
    shown = text_of(browser, "#c-table")
    browser.execute_script("document.getElementById('c-table').scrollIntoView()")
    browser.save_screenshot("/tmp/charts-table.png")
    assert "5.617" in shown and "5.6173" not in shown
    assert "0.0001235" in shown and "12350" in shown and "200" in shown
