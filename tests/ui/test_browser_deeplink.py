"""Deep links in a real Chromium: the link's tab opens (the browser clicks it, the gr.Tabs is no
event's output: playground.ui.tab_switch) and a preset link fills the Train form."""
from __future__ import annotations

from tests.ui.browser_helpers import BROWSER, open_app, tab_button, text_of

pytestmark = BROWSER


def _selected(driver, label: str) -> bool:
    return tab_button(driver, label).get_attribute("aria-selected") == "true"


def test_tab_link_opens_that_tab(browser, app_server):
    wait = open_app(browser, app_server.url + "?tab=analyze")
    wait.until(lambda d: _selected(d, "Analyze"))
    assert not _selected(browser, "Tokenizer")


def test_preset_link_opens_train_with_the_setting(browser, app_server):
    wait = open_app(browser, app_server.url + "?preset=nanogpt-cpu-tiny&set=train.max_steps=321")
    wait.until(lambda d: _selected(d, "Train"))
    wait.until(lambda d: d.execute_script(
        "const i = document.querySelector('#train-train-max-steps input'); return i ? i.value : '';") == "321")


def test_unknown_tab_stays_on_the_first(browser, app_server):
    wait = open_app(browser, app_server.url + "?tab=nope")
    wait.until(lambda d: "nope" in text_of(d, ".toast-body, .toast-wrap") or _selected(d, "Tokenizer"))
    assert _selected(browser, "Tokenizer")
