"""Offline by default, as a student meets it: open the app, Train, press Start on the default
preset, and the steps count up, on a server where every download is refused."""
from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import RunningApp, serve_app
from tests.ui.browser_helpers import BROWSER, open_app, open_tab, text_of

pytestmark = BROWSER

ERROR_TOAST = ".toast-body, [data-testid='toast-body']"
OFFLINE_ENV = "PLAYGROUND_OFFLINE"  # the documented switch (playground.data.corpora.OFFLINE_ENV)


@pytest.fixture(scope="module")
def offline_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningApp]:
    """The real app with PLAYGROUND_OFFLINE=1 in its environment (its training child processes
    inherit it), so no download can succeed, whatever this machine's network."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(OFFLINE_ENV, "1")
        with serve_app(tmp_path_factory, "offline") as running:
            yield running


def _progress(driver) -> tuple[int, str]:
    """(step, state) of the Train tab's progress bar; (0, "") before there is one. Read in one
    script call: the bar is re-rendered every second, so an element handle can go stale."""
    found = driver.execute_script(
        "const bar = document.querySelector('#train-status #train-progress');"
        "return bar ? [bar.getAttribute('data-step'), bar.getAttribute('data-state')] : null;")
    if not found:
        return 0, ""
    return int(found[0] or 0), found[1] or ""


def test_the_default_preset_trains_with_no_network(browser, offline_app, tmp_path):
    from selenium.webdriver.common.by import By

    wait = open_app(browser, offline_app.url, timeout=300)
    open_tab(browser, wait, "Train")
    wait.until(lambda d: d.find_element(By.CSS_SELECTOR, "#train-preset input").get_attribute("value"))
    assert browser.find_element(By.CSS_SELECTOR, "#train-preset input").get_attribute("value") == "nanogpt-cpu-tiny"

    browser.find_element(By.ID, "train-start").click()
    # steps counting up, or an error message (shown as it is, so a failure says why)
    wait.until(lambda d: _progress(d)[0] > 0 or _progress(d)[1] == "error" or text_of(d, ERROR_TOAST).strip())
    browser.save_screenshot(str(tmp_path / "offline-training.png"))
    step, state = _progress(browser)
    assert step > 0 and state == "running", f"{text_of(browser, ERROR_TOAST)!r} {text_of(browser, '#train-status')!r}"
    assert not text_of(browser, ERROR_TOAST).strip()

    browser.find_element(By.ID, "train-stop").click()
    wait.until(lambda d: _progress(d)[1] in ("stopped", "done"))
    assert not list(offline_app.workspace_root.rglob("tinyshakespeare.txt"))  # nothing was downloaded
