"""Analyze -> Experiments in a real Chromium, with the shipped GPT and small runs: the expected
time shows before anything runs, the original-vs-adversarial controls wait for an adversarial
result, and a new start replaces the previous "Done" line at once (in the browser, with the
server's quick calls held back)."""
from __future__ import annotations

from tests.ui.browser_helpers import BROWSER, open_app, open_tab, tab_button, text_of
from tests.ui.test_browser_handoff import choose, value_of

pytestmark = BROWSER

SERVER_CALLS = "*/gradio_api/run/*"  # the non-queued (queue=False) handler calls


def open_experiments(driver, url: str):
    """The app with Analyze -> Experiments open; returns a wait."""
    wait = open_app(driver, url, timeout=120)
    open_tab(driver, wait, "Analyze")
    wait.until(lambda d: value_of(d, "#analyze-model input"))  # the shipped models are listed
    tab_button(driver, "Experiments").click()
    wait.until(lambda d: tab_button(d, "Experiments").get_attribute("aria-selected") == "true")
    return wait


def number_box(driver, label: str, timeout: float = 60):
    """The number input of the Experiments control labelled `label`, once it is shown (a method's
    own controls appear when the server answers the method change; an accordion opens in a frame)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    path = (f"//*[@id='analyze-experiments']//*[normalize-space(text())='{label}']"
            "/ancestor::div[contains(concat(' ', @class, ' '), ' block ')][1]//input[@type='number']")
    return WebDriverWait(driver, timeout).until(
        lambda d: next((e for e in d.find_elements(By.XPATH, path) if e.is_displayed()), None),
        f"the {label!r} box to show")


def set_number(driver, label: str, value: int) -> None:
    from selenium.webdriver.common.keys import Keys

    box = number_box(driver, label)
    box.send_keys(Keys.CONTROL, "a")
    box.send_keys(str(value), Keys.TAB)


def shown(driver, elem_id: str) -> bool:
    from selenium.webdriver.common.by import By

    return any(e.is_displayed() for e in driver.find_elements(By.ID, elem_id))


def run_and_wait(driver, wait, done: str) -> None:
    from selenium.webdriver.common.by import By

    driver.find_element(By.ID, "exp-run").click()
    wait.until(lambda d: done in text_of(d, "#exp-status"))


def test_the_expected_time_shows_before_a_run(browser, app_server, tmp_path):
    wait = open_experiments(browser, app_server.url)
    wait.until(lambda d: "Expected time: about" in text_of(d, "#exp-estimate"))
    assert "50 examples" in text_of(browser, "#exp-estimate")  # permutation, the default run
    choose(browser, wait, "exp-name", "Adversarial attention (J&W)")
    wait.until(lambda d: "10 examples × 100 Adam steps" in text_of(d, "#exp-estimate"))  # its own default
    set_number(browser, "Held-out examples", 3)
    wait.until(lambda d: "3 examples × 100 Adam steps" in text_of(d, "#exp-estimate"))
    browser.find_element("id", "exp-estimate").screenshot(str(tmp_path / "estimate.png"))
    browser.save_screenshot(str(tmp_path / "experiments.png"))
    assert "Expected time: about" in text_of(browser, "#exp-estimate") and not text_of(browser, "#exp-status")


def test_adversarial_controls_wait_for_an_adversarial_result(browser, app_server, tmp_path):
    wait = open_experiments(browser, app_server.url)
    assert not shown(browser, "exp-example") and not shown(browser, "exp-adversarial")
    set_number(browser, "Held-out examples", 2)
    run_and_wait(browser, wait, "Done: 2 of 2")  # a permutation result: still nothing to compare
    assert not shown(browser, "exp-example")
    choose(browser, wait, "exp-name", "Adversarial attention (J&W)")
    set_number(browser, "Held-out examples", 2)
    browser.find_element("xpath", "//*[@id='analyze-experiments']//button[contains(., 'Options')]").click()
    set_number(browser, "Adversarial Adam steps", 5)
    wait.until(lambda d: "2 examples × 5 Adam steps" in text_of(d, "#exp-estimate"))
    run_and_wait(browser, wait, "Done: 2 of 2")
    wait.until(lambda d: shown(d, "exp-example"))
    browser.find_element("id", "exp-example-show").click()
    wait.until(lambda d: d.find_elements("css selector", "#exp-example-chart canvas, #exp-example-chart svg"))
    browser.save_screenshot(str(tmp_path / "adversarial.png"))


def test_a_new_start_replaces_the_old_done_line_at_once(browser, app_server, tmp_path):
    wait = open_experiments(browser, app_server.url)
    set_number(browser, "Held-out examples", 2)
    run_and_wait(browser, wait, "Done: 2 of 2")
    # Record every text the status shows from now on, then hold back the server's quick calls:
    # what replaces "Done" must come from the browser itself.
    browser.execute_script("""
        const el = document.getElementById('exp-status');
        window.__statuses = [];
        new MutationObserver(() => window.__statuses.push(el.innerText))
            .observe(el, {subtree: true, childList: true, characterData: true});""")
    browser.execute_cdp_cmd("Network.enable", {})
    browser.execute_cdp_cmd("Network.setBlockedURLs", {"urls": [SERVER_CALLS]})
    try:
        browser.find_element("id", "exp-run").click()
        wait.until(lambda d: any("queued for a heavy slot" in s
                                 for s in d.execute_script("return window.__statuses") or []))
    finally:
        browser.execute_cdp_cmd("Network.setBlockedURLs", {"urls": []})
    wait.until(lambda d: "Done: 2 of 2" in text_of(d, "#exp-status"))
    seen = browser.execute_script("return window.__statuses")
    first_new = next(s for s in seen if s.strip())
    assert "Done:" not in first_new, seen  # the old line went before anything else showed
    browser.save_screenshot(str(tmp_path / "rerun.png"))
