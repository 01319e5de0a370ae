"""The Train tab in a real headless Chromium, as a student uses it: what the form shows is what
runs, however fast they type; Stop reports the step that is saved; Resume keeps the whole curve."""
from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

from tests.ui.browser_helpers import BROWSER, open_app, open_tab, text_of

pytestmark = BROWSER


def _status_step(driver) -> tuple[int, int, str]:
    """(step, max_steps, state) of the Train status bar."""
    html = driver.execute_script(  # one script call: the bar is re-rendered every second
        "const el = document.getElementById('train-status'); return el ? el.innerHTML : '';") or ""
    step = re.search(r'data-step="(\d+)"', html)
    total = re.search(r"step \d+/(\d+)", html)
    state = re.search(r'data-state="(\w+)"', html)
    return (int(step.group(1)) if step else -1, int(total.group(1)) if total else -1,
            state.group(1) if state else "")


def _type_fast(driver, css: str, text: str) -> None:
    """Select the field's text and type over it in one burst (one key event per character)."""
    from selenium.webdriver.common.keys import Keys

    box = driver.find_element("css selector", css)
    box.click()
    box.send_keys(Keys.CONTROL, "a")
    box.send_keys(text)


def _wait(driver, timeout: float, ready, what: str) -> None:
    """Wait for `ready(driver)`; on a timeout, fail with what the status bar says."""
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    try:
        WebDriverWait(driver, timeout).until(ready)
    except TimeoutException:
        raise AssertionError(f"waited {timeout:.0f} s for {what}; the status says: "
                             f"{text_of(driver, '#train-status')!r}") from None


def _wait_stopped(driver) -> str:
    """Wait for Stop's own answer (an evaluation's status line also says "saved as"); return it."""
    _wait(driver, 120, lambda d: _status_step(d)[2] in ("stopped", "done") and "saved as" in text_of(d, "#train-status"),
          "the stop's checkpoint")
    return text_of(driver, "#train-status")


def _model_meta(root: Path, name: str) -> dict:
    found = list(root.glob(f"users/*/models/{name}/config.json"))
    assert len(found) == 1, f"expected one saved model {name!r} under {root}, found {found}"
    return json.loads(found[0].read_text())


def test_fast_typing_then_start_runs_what_the_form_shows(browser, app_server):
    """Type "300" into Steps in one burst and press Start at once: the run has 300 steps."""
    wait = open_app(browser, app_server.url)
    open_tab(browser, wait, "Train")
    name = f"typed-{uuid.uuid4().hex[:6]}"
    _type_fast(browser, "#train-name textarea, #train-name input", name)
    _type_fast(browser, "#train-train-max-steps input", "300")
    browser.find_element("id", "train-start").click()  # no pause: keystrokes may still be in flight
    _wait(browser, 240, lambda d: _status_step(d)[0] > 0, "the first steps")
    assert _status_step(browser)[1] == 300
    browser.find_element("id", "train-stop").click()
    _wait_stopped(browser)
    assert _model_meta(app_server.workspace_root, name)["train"]["max_steps"] == 300


def _set_number(driver, css: str, value: int) -> None:
    """Type a number into a field and leave it (Tab), as a person does."""
    from selenium.webdriver.common.keys import Keys

    _type_fast(driver, css, str(value))
    driver.find_element("css selector", css).send_keys(Keys.TAB)


# A training job runs at a low CPU priority; beside a busy machine's other work (load 15-20 here)
# the preset's 0.8M-parameter model made one step per 24 s. This one is ~100 times cheaper.
SMALL_MODEL = {"model-n-layer": 1, "model-d-model": 32, "model-block-size": 16, "train-batch-size": 4}


def _loss_range(driver) -> tuple[int, int] | None:
    """(first, last) step of the loss chart, from vega's description (its aria-label)."""
    label = driver.execute_script(
        "const el = document.querySelector('#train-loss-plot [role=graphics-document]');"
        "return el ? el.getAttribute('aria-label') : null;")
    found = re.search(r"steps (\d+) to (\d+)", label or "")
    return (int(found.group(1)), int(found.group(2))) if found else None


def _status_errors(driver) -> list[str]:
    """gradio's red error badges on the Train status (shown when its event failed)."""
    return driver.execute_script(
        "return [...document.querySelectorAll('#train-status .error')]"
        ".filter(e => e.offsetParent !== null && e.textContent.trim()).map(e => e.textContent.trim());")


def test_stop_reports_the_saved_step_and_resume_keeps_the_curve(browser, app_server, tmp_path):
    """Stop halts the run within a few steps of the press and says the step of the checkpoint on
    disk, with no error badge; Resume continues from it and the loss chart is still the whole
    curve from step 1 (before: it began at the first evaluation with metrics.csv's interval
    average as a train point, and a stop could run on for 50 steps or never save)."""
    wait = open_app(browser, app_server.url)
    open_tab(browser, wait, "Train")
    name = f"stopper-{uuid.uuid4().hex[:6]}"
    _type_fast(browser, "#train-name textarea, #train-name input", name)
    _set_number(browser, "#train-train-max-steps input", 5000)
    _set_number(browser, "#train-train-eval-interval input", 20)
    for field, value in SMALL_MODEL.items():  # the behaviour under test is Stop and Resume, not the model
        _set_number(browser, f"#train-{field} input", value)
    browser.find_element("id", "train-start").click()
    _wait(browser, 240, lambda d: _status_step(d)[0] >= 25, "25 steps")
    shown = _status_step(browser)[0]
    browser.find_element("id", "train-stop").click()
    said = _wait_stopped(browser)
    stopped_at = int(re.search(r"at step (\d+)", said).group(1))
    meta = _model_meta(app_server.workspace_root, name)
    assert meta["run"]["status"] == "stopped" and meta["step"] == stopped_at >= 25
    assert stopped_at - shown <= 30, f"pressed Stop at step {shown}, the run stopped at {stopped_at}"
    assert _status_step(browser)[0] == stopped_at
    assert (_loss_range(browser) or (0, 0))[0] == 1  # the whole curve so far
    browser.find_element("id", "train-status").screenshot(str(tmp_path / "stopped.png"))
    assert not _status_errors(browser), _status_errors(browser)

    _set_number(browser, "#train-train-max-steps input", stopped_at + 20)
    browser.find_element("id", "train-resume").click()
    _wait(browser, 240, lambda d: _status_step(d)[2] == "done", "the resumed run to finish")
    assert _model_meta(app_server.workspace_root, name)["step"] == stopped_at + 20
    assert _loss_range(browser) == (1, stopped_at + 20)  # from the first step, not an evaluation
    assert not _status_errors(browser), _status_errors(browser)
    browser.find_element("id", "train-loss-plot").screenshot(str(tmp_path / "resumed-loss.png"))
