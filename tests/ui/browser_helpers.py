"""Selenium helpers the browser tests share: Debian's Chromium (never a download), tabs, text."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
HAVE_CHROMIUM = Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()
LAPTOP = "1366,768"  # headless Chromium leaves a 1366x625 viewport, what a student's browser shows
BROWSER_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-dev-shm-usage", "--disable-component-update", "--no-first-run",
                 "--window-size=1400,1000")

# Mark a browser test module with: pytestmark = BROWSER. Browser tests are also `slow`: the day-to-day
# tier (`pytest -m "not slow"`) runs without Chromium; the whole suite (CI) runs them all.
BROWSER = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(not HAVE_CHROMIUM,
                       reason="Debian's chromium and chromium-driver are not installed (.ci/run installs them)"),
]


def new_browser(window: str = "1400,1000"):
    """A headless Chromium on the system's driver path (Selenium Manager never runs)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in BROWSER_FLAGS:
        options.add_argument(flag if not flag.startswith("--window-size") else f"--window-size={window}")
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    return driver



def tab_button(driver, label: str):
    """The tab button whose text is `label`."""
    from selenium.webdriver.common.by import By

    buttons = driver.find_elements(By.CSS_SELECTOR, "button[role='tab']")
    for button in buttons:
        if button.text.strip() == label:
            return button
    raise AssertionError(f"no tab button {label!r}; saw {[b.text for b in buttons]}")


def text_of(driver, css: str) -> str:
    """The visible text of every element matching `css`, joined by spaces (read in one script: an
    element gradio re-renders between a lookup and a read would be stale)."""
    return driver.execute_script(
        "return [...document.querySelectorAll(arguments[0])].map(e => e.innerText || '').join(' ')", css)


def open_app(driver, url: str, timeout: float = 60):
    """Load the app and wait for its tabs; returns a WebDriverWait with `timeout`."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(driver, timeout)
    driver.get(url)
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "button[role='tab']"))
    return wait


def open_tab(driver, wait, label: str) -> None:
    """Click a tab and wait until it is selected."""
    tab_button(driver, label).click()
    wait.until(lambda d: tab_button(d, label).get_attribute("aria-selected") == "true")
