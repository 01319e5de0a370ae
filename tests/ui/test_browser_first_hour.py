"""A student's first hour at a laptop's size (issue #30): a real Chromium, 1366x768, real clicks."""
from __future__ import annotations

import uuid

import pytest

from tests.ui.browser_helpers import BROWSER, new_browser, open_app, open_tab, text_of

pytestmark = BROWSER
LAPTOP = "1366,768"  # headless Chromium leaves a 1366x625 viewport, what a student's browser shows


@pytest.fixture(scope="module")
def laptop():
    """One Chromium with a laptop's window for this module."""
    driver = new_browser(LAPTOP)
    try:
        yield driver
    finally:
        driver.quit()


def shown(driver, elem_id: str) -> bool:
    """Whether the element with this id is on the page and displayed (gradio may drop a hidden one)."""
    return any(e.is_displayed() for e in driver.find_elements("id", elem_id))


def _lesson_tabs(driver) -> list[tuple[str, str]]:
    """(label, button id) of every lesson tab button, left to right."""
    return [(b.text.strip(), b.get_attribute("id"))
            for b in driver.find_elements("css selector", "#lessons-tabs button[role='tab']")]


def test_lesson_tabs_open_left_to_right(laptop, app_server):
    """Click every lesson tab in turn: each one opens and its lesson shows, and the row of tabs
    stays as it was (no tab turns into a copy of its left neighbour; "Claims, reproduced" stays)."""
    from selenium.webdriver.common.by import By

    wait = open_app(laptop, app_server.url)
    open_tab(laptop, wait, "Lessons")
    wait.until(lambda d: len(_lesson_tabs(d)) > 2)
    tabs = _lesson_tabs(laptop)
    assert tabs[-1][0] == "Claims, reproduced"
    assert len({i for _, i in tabs}) == len(tabs), tabs
    for label, button_id in tabs:
        laptop.find_element(By.ID, button_id).click()
        wait.until(lambda d, b=button_id: d.find_element(By.ID, b).get_attribute("aria-selected") == "true")
        panel = laptop.find_element(By.ID, button_id.removesuffix("-button"))
        wait.until(lambda d, p=panel: p.is_displayed())
        assert _lesson_tabs(laptop) == tabs, f"after clicking {label!r} the tabs read {_lesson_tabs(laptop)}"
        selected = [b.text for b in laptop.find_elements(By.CSS_SELECTOR, "#lessons-tabs button[aria-selected='true']")]
        assert selected == [label]
    wait.until(lambda d: "Claim" in text_of(d, "#lesson-tab-claims"))


def test_my_space_errors_show_on_the_page_and_delete_asks_first(laptop, app_server):
    """A mistyped name gives its message under the buttons (not only a red "Error" pill), and
    Delete removes nothing until the question it asks is answered."""
    from selenium.webdriver.common.by import By

    wait = open_app(laptop, app_server.url)
    open_tab(laptop, wait, "My space")
    name_box = laptop.find_element(By.CSS_SELECTOR, "#space-name textarea, #space-name input")
    name_box.send_keys("no-such-model-x")
    laptop.find_element(By.ID, "space-delete").click()
    wait.until(lambda d: "Could not delete" in text_of(d, "#space-status"))
    assert "No model named 'no-such-model-x'" in text_of(laptop, "#space-status")
    laptop.find_element(By.ID, "space-share").click()
    wait.until(lambda d: "Could not share" in text_of(d, "#space-status"))
    assert "Only your own" in text_of(laptop, "#space-status")

    # One of this browser's own tokenizers: Delete asks, "Keep it" keeps it, "Yes, delete" deletes.
    mine = f"mine-{uuid.uuid4().hex[:6]}"
    build_and_save_tokenizer(laptop, wait, mine)
    open_tab(laptop, wait, "My space")
    wait.until(lambda d: mine in text_of(d, "#space-table"))
    laptop.find_element(By.CSS_SELECTOR, "#space-kind input[value='tokenizer']").click()
    name_box = laptop.find_element(By.CSS_SELECTOR, "#space-name textarea, #space-name input")
    name_box.clear()
    name_box.send_keys(mine)
    laptop.find_element(By.ID, "space-delete").click()
    wait.until(lambda d: shown(d, "space-confirm"))
    assert f"Delete your tokenizer '{mine}' for good?" in text_of(laptop, "#space-confirm-text")
    laptop.find_element(By.ID, "space-confirm-no").click()
    wait.until(lambda d: not shown(d, "space-confirm"))
    assert mine in text_of(laptop, "#space-table")
    laptop.find_element(By.ID, "space-delete").click()
    wait.until(lambda d: shown(d, "space-confirm"))
    laptop.find_element(By.ID, "space-confirm-yes").click()
    wait.until(lambda d: f"Deleted your tokenizer '{mine}'" in text_of(d, "#space-status"))
    wait.until(lambda d: mine not in text_of(d, "#space-table"))


def build_and_save_tokenizer(driver, wait, name: str) -> None:
    """In the Tokenizer tab: build a 300-token BPE of the default corpus and save it as `name`."""
    from selenium.webdriver.common.by import By

    open_tab(driver, wait, "Tokenizer")
    vocab = driver.find_element(By.CSS_SELECTOR, "#tok-vocab-size input[type='number']")
    vocab.clear()
    vocab.send_keys("300")
    driver.find_element(By.ID, "tok-build").click()
    wait.until(lambda d: "Built" in text_of(d, "#tok-status"))
    driver.find_element(By.CSS_SELECTOR, "#tok-name textarea, #tok-name input").send_keys(name)
    driver.find_element(By.ID, "tok-save").click()
    wait.until(lambda d: name in text_of(d, "#tok-save-status"))
