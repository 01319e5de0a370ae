"""Shared pieces for the browser tests: Debian's Chromium driven by Selenium (never a download)."""
from __future__ import annotations

import pytest

from tests.ui.browser_helpers import new_browser


@pytest.fixture(scope="module")
def browser():
    """One Chromium per test module."""
    driver = new_browser()
    try:
        yield driver
    finally:
        driver.quit()
