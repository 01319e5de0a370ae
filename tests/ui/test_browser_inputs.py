"""Ordinary input mistakes in a real browser: a message that says what to do, never a bare
"Error" or a server traceback."""
from __future__ import annotations

import logging

from tests.ui.browser_helpers import BROWSER, open_app, open_tab

pytestmark = BROWSER


def test_clearing_a_slider_box_says_what_to_type(browser, app_server, caplog):
    """Empty Generate's Temperature box and leave it (a live knob: the distribution redraws when
    it is let go): a toast that says what to type, and no traceback in the server's log."""
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    wait = open_app(browser, app_server.url)
    open_tab(browser, wait, "Generate")
    box = browser.find_element("css selector", "#generate-temperature input[type='number']")
    with caplog.at_level(logging.ERROR):
        box.click()
        box.send_keys(Keys.CONTROL, "a", Keys.DELETE)
        box.send_keys(Keys.TAB)  # checked when the box is left, not per keystroke
        # (other toasts may come and go on a server other tests share: wait for this one)
        WebDriverWait(browser, 60).until(lambda d: "Temperature" in _toasts(d))
    assert "Temperature is empty: type a number from 0 to 2" in _toasts(browser), _toasts(browser)
    slider_traces = [r for r in caplog.records if r.exc_info and "slider" in (r.getMessage() + str(r.exc_info[1])).lower()]
    assert not slider_traces, "a cleared box logged a traceback on the server"


def _toasts(driver) -> str:
    return " ".join(e.text for e in driver.find_elements("css selector", "[data-testid='toast-body']"))
