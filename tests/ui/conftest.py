"""Shared pieces for the browser tests: Debian's Chromium driven by Selenium (never a download)."""
from __future__ import annotations

import pytest

from tests.ui.browser_helpers import LAPTOP, new_browser


@pytest.fixture(scope="module")
def browser():
    """One Chromium per test module."""
    driver = new_browser()
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def laptop():
    """One Chromium per test module with a laptop's window (1366x768)."""
    driver = new_browser(LAPTOP)
    try:
        yield driver
    finally:
        driver.quit()
