"""Analyze in a real Chromium at a laptop's size (1366x768): Explain keeps its buttons and
progress line in view and scrolls the results (below the form) into the window."""
from __future__ import annotations


from tests.ui.browser_helpers import BROWSER, open_app, open_tab
from tests.ui.test_browser_handoff import value_of

pytestmark = BROWSER


def _top(driver, elem_id: str) -> float:
    return driver.execute_script("return document.getElementById(arguments[0]).getBoundingClientRect().top", elem_id)


def test_explain_brings_its_results_into_view(laptop, app_server):
    from selenium.webdriver.common.by import By

    wait = open_app(laptop, app_server.url)
    open_tab(laptop, wait, "Analyze")
    wait.until(lambda d: value_of(d, "#analyze-model input"))  # a shipped checkpoint is chosen
    height = laptop.execute_script("return window.innerHeight")
    assert _top(laptop, "analyze-importance") > height, "the results start inside the window: this does not test the scroll"
    laptop.find_element(By.ID, "analyze-text").find_element(By.TAG_NAME, "textarea").send_keys("def f(x):")
    laptop.find_element(By.ID, "analyze-run").click()
    wait.until(lambda d: "Explaining" in d.find_element(By.ID, "analyze-summary").text)
    wait.until(lambda d: 0 <= _top(d, "analyze-run") < 40)  # scrolled: the buttons at the top of the window
    assert 0 <= _top(laptop, "analyze-stop") < height, "Stop scrolled out of view"
    assert 0 <= _top(laptop, "analyze-summary") < height / 2, "the progress line is out of view"
    wait.until(lambda d: "Target" in d.find_element(By.ID, "analyze-summary").text)
    assert _top(laptop, "analyze-importance") < height * 0.75, "the chart of the result is out of view"
    laptop.save_screenshot("/tmp/shots-i30ui/analyze-explained.png")
