"""A deep link's values are text in the warning toast, never markup (issue 38): a link that puts
an anchor or an image in `?tab=` shows its characters, and the browser neither renders a live link
nor fetches the image."""
from __future__ import annotations

from urllib.parse import quote

from tests.ui.browser_helpers import BROWSER, open_app, text_of

pytestmark = BROWSER


def test_markup_in_a_link_shows_as_text(browser, app_server):
    from selenium.webdriver.common.by import By

    evil = "<a href=//evil.example id=evil>HI</a><img id=pix src=/nowhere.png>"
    wait = open_app(browser, app_server.url + "?tab=" + quote(evil))
    wait.until(lambda d: "no tab" in text_of(d, ".toast-body, .toast-wrap"))
    toast = text_of(browser, ".toast-body, .toast-wrap")
    assert "<a href" in toast  # the characters themselves are shown
    assert not browser.find_elements(By.CSS_SELECTOR, "#evil, #pix, .toast-wrap a, .toast-wrap img")
