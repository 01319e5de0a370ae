"""Ordinary input mistakes in a real browser: a message that says what to do, never a bare
"Error" or a server traceback."""
from __future__ import annotations

import logging

from tests.ui.browser_helpers import BROWSER, open_app, open_tab
from tests.ui.test_browser_first_hour import _mark_chart, _redrawn

pytestmark = BROWSER


def test_clearing_a_slider_box_and_leaving_it(browser, app_server, caplog):
    """Empty Generate's Temperature box and leave it (a live knob: the distribution redraws when
    it is let go). Gradio's slider puts its minimum back into a box left empty, and may send the
    empty value first: then a toast says what to type. Either way no traceback in the server's log.
    (The sentences themselves: tests/ui/test_components.py.)"""
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    wait = open_app(browser, app_server.url)
    open_tab(browser, wait, "Generate")
    wait.until(lambda d: d.find_elements("css selector", "#generate-dist .vega-embed"))
    box = browser.find_element("css selector", "#generate-temperature input[type='number']")
    with caplog.at_level(logging.ERROR):
        _mark_chart(browser, "generate-dist")
        box.click()
        box.send_keys(Keys.CONTROL, "a", Keys.DELETE)
        box.send_keys(Keys.TAB)  # checked when the box is left, not per keystroke
        WebDriverWait(browser, 60).until(lambda d: "Temperature" in _toasts(d) or _redrawn(d, "generate-dist"))
    assert box.get_attribute("value") == "0"
    toasts = _toasts(browser)
    assert ("Temperature" not in toasts or "Temperature is empty: type a number from 0 to 2" in toasts
            or "Temperature: expected a number, got None; type a number" in toasts), toasts  # the handler's or the app's check
    slider_traces = [r for r in caplog.records if r.exc_info and "slider" in (r.getMessage() + str(r.exc_info[1])).lower()]
    assert not slider_traces, "a cleared box logged a traceback on the server"


def _toasts(driver) -> str:
    return " ".join(e.text for e in driver.find_elements("css selector", "[data-testid='toast-body']"))
