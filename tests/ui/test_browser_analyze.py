"""Analyze in a real Chromium at a laptop's size: Explain brings the place where its progress
and results show into view (they start below the controls, at the fold of a 1000 px window)."""
from __future__ import annotations

from tests.ui.browser_helpers import BROWSER, open_app, open_tab
from tests.ui.test_browser_handoff import value_of

pytestmark = BROWSER


def test_explain_scrolls_to_where_the_results_show(browser, app_server):
    from selenium.webdriver.common.by import By

    wait = open_app(browser, app_server.url)
    open_tab(browser, wait, "Analyze")
    wait.until(lambda d: value_of(d, "#analyze-model input"))  # a shipped checkpoint is chosen
    summary = browser.find_element(By.ID, "analyze-summary")
    top = browser.execute_script("return arguments[0].getBoundingClientRect().top / window.innerHeight", summary)
    assert top > 0.6, f"the summary line starts at {top:.0%} of the window: this window does not test the scroll"
    browser.find_element(By.ID, "analyze-text").find_element(By.TAG_NAME, "textarea").send_keys("def f(x):")
    browser.find_element(By.ID, "analyze-run").click()
    wait.until(lambda d: "Explaining" in d.find_element(By.ID, "analyze-summary").text)
    wait.until(lambda d: d.execute_script(
        "const r = arguments[0].getBoundingClientRect(); return r.top >= 0 && r.top < window.innerHeight / 2;",
        summary))
    assert browser.find_element(By.ID, "analyze-stop").is_displayed()
    stop_top = browser.execute_script(
        "return document.getElementById('analyze-stop').getBoundingClientRect().top")
    assert stop_top >= 0, "Stop scrolled out of view"
    browser.save_screenshot("/tmp/analyze-explaining.png")
    browser.find_element(By.ID, "analyze-stop").click()
