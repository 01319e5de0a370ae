"""The page in a real headless Chromium: four tabs render and switch; a screenshot is saved."""
from __future__ import annotations

import uuid

from tests.ui.browser_helpers import tab_button as _tab_button
from tests.ui.browser_helpers import text_of as _text
from tests.ui.browser_helpers import BROWSER

pytestmark = BROWSER


def test_tabs_render_switch_and_refresh(browser, app_server, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import WebDriverWait
    from tokenizers import Tokenizer, models

    wait = WebDriverWait(browser, 30)
    browser.get(app_server.url)
    wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "button[role='tab']")))
    header = wait.until(EC.presence_of_element_located((By.ID, "header")))
    assert "Transformer Playground" in header.text and "cpu" in header.text

    labels = [b.text.strip() for b in browser.find_elements(By.CSS_SELECTOR, "button[role='tab']")]
    assert labels[:4] == ["Tokenizer", "Train", "Generate", "Analyze"]

    # A tokenizer saved while the page is open shows up in Train's choices on tab select.
    name = f"browser-{uuid.uuid4().hex[:6]}"
    tok = Tokenizer(models.WordLevel({"a": 0, "<unk>": 1}, unk_token="<unk>"))
    app_server.library.save_tokenizer(name, tok.to_str(), {"vocab_size": 2})

    for label in ("Train", "Generate", "Analyze", "Tokenizer", "Train"):
        _tab_button(browser, label).click()
        wait.until(lambda d, label=label: _tab_button(d, label).get_attribute("aria-selected") == "true")
        panel = browser.find_element(By.ID, f"tab-{label.lower()}")
        wait.until(lambda d, panel=panel: panel.is_displayed())

    dropdown = browser.find_element(By.CSS_SELECTOR, "#train-tokenizer input")
    wait.until(lambda d: dropdown.get_attribute("value") not in (None, ""))
    dropdown.click()
    wait.until(lambda d: name in " ".join(o.text for o in d.find_elements(By.CSS_SELECTOR, "ul[role='listbox'] li")))

    shot = tmp_path / "app.png"
    browser.save_screenshot(str(shot))
    assert shot.stat().st_size > 10_000


def test_a_browser_keeps_its_own_space_across_reloads(browser, app_server, tmp_path):
    """Build and save a tokenizer in the page; after a reload "My space" still lists it as the
    browser's own, beside the library, and never shows another session's entries."""
    from gradio_client import Client
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
    from tokenizers import Tokenizer, models

    wait = WebDriverWait(browser, 90)
    other = Client(app_server.url, verbose=False)
    theirs = f"theirs-{uuid.uuid4().hex[:6]}"
    tok = Tokenizer(models.WordLevel({"a": 0, "<unk>": 1}, unk_token="<unk>"))
    app_server.space_of(other).save_tokenizer(theirs, tok.to_str(), {"vocab_size": 2})
    shelf = f"shelf-{uuid.uuid4().hex[:6]}"
    app_server.library.save_tokenizer(shelf, tok.to_str(), {"vocab_size": 2})

    browser.get(app_server.url)
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "button[role='tab']"))
    _tab_button(browser, "Tokenizer").click()
    vocab = browser.find_element(By.CSS_SELECTOR, "#tok-vocab-size input[type='number']")
    vocab.clear()
    vocab.send_keys("300")
    browser.find_element(By.ID, "tok-build").click()
    wait.until(lambda d: "Built" in _text(d, "#tok-status"))
    mine = f"mine-{uuid.uuid4().hex[:6]}"
    name_box = browser.find_element(By.CSS_SELECTOR, "#tok-name textarea, #tok-name input")
    name_box.send_keys(mine)
    browser.find_element(By.ID, "tok-save").click()
    wait.until(lambda d: mine in _text(d, "#tok-save-status"))

    browser.refresh()
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "button[role='tab']"))
    _tab_button(browser, "My space").click()
    wait.until(lambda d: mine in _text(d, "#space-table"))
    table = _text(browser, "#space-table")
    assert shelf in table and "library" in table and "own" in table
    assert theirs not in table
    browser.save_screenshot(str(tmp_path / "space.png"))


def test_a_queued_start_says_what_it_waits_for(browser, app_server, tmp_path):
    """With both heavy slots held by other users' trainings, Start shows that it is queued and why."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from tests.ui.test_lanes import hold_heavy_slots

    jobs = hold_heavy_slots(app_server.url)
    try:
        wait = WebDriverWait(browser, 60)
        browser.get(app_server.url)
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "button[role='tab']"))
        _tab_button(browser, "Train").click()
        browser.find_element(By.ID, "train-start").click()
        wait.until(lambda d: "queued for a heavy slot" in _text(d, "#train-status"))
        browser.find_element(By.ID, "train-status").screenshot(str(tmp_path / "queued.png"))
        browser.find_element(By.ID, "train-stop").click()
    finally:
        for job in jobs:
            job.cancel()
