"""The page in a real headless Chromium: four tabs render and switch; a screenshot is saved."""
from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import pytest

from playground.workspace import Workspace

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists() or not Path(CHROMEDRIVER).exists(),
                       reason="Debian's chromium and chromium-driver are not installed (.ci/run installs them)"),
]


@pytest.fixture(scope="module")
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-dev-shm-usage", "--disable-component-update", "--no-first-run",
                 "--window-size=1400,1000"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


def _tab_button(driver, label: str):
    from selenium.webdriver.common.by import By

    for button in driver.find_elements(By.CSS_SELECTOR, "button[role='tab']"):
        if button.text.strip() == label:
            return button
    raise AssertionError(f"no tab button {label!r}; saw {[b.text for b in driver.find_elements(By.CSS_SELECTOR, 'button[role=tab]')]}")


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
