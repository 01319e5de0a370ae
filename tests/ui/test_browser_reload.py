"""A reload in a real Chromium at a laptop's size brings back what the student last had on screen:
the finished run's status and whole curve, Generate's output (the same text, re-run with the seed
it drew) and Analyze's choices (issue #30, item 12). Before, a reload kept the saved work but
opened every tab as new."""
from __future__ import annotations

import uuid


from playground.ui.analyze_tab import RESTORED_NOTE
from tests.ui.browser_helpers import BROWSER, open_app, open_tab, text_of
from tests.ui.test_browser_train import SMALL_MODEL, _loss_range, _set_number, _status_step, _type_fast, _wait

pytestmark = BROWSER


def _value(driver, css: str) -> str:
    return driver.execute_script("const e = document.querySelector(arguments[0]); return e ? e.value : null;", css)


def _output_text(driver) -> str:
    return " ".join(text_of(driver, "#generate-output").split())


def test_reload_brings_back_the_run_the_generation_and_the_analysis(laptop, app_server, tmp_path):
    from selenium.webdriver.support.ui import WebDriverWait

    wait = open_app(laptop, app_server.url, timeout=120)
    # Train: a tiny run to its end.
    open_tab(laptop, wait, "Train")
    name = f"reloaded-{uuid.uuid4().hex[:6]}"
    _type_fast(laptop, "#train-name textarea, #train-name input", name)
    _set_number(laptop, "#train-train-max-steps input", 40)
    _set_number(laptop, "#train-train-eval-interval input", 20)
    for field, value in SMALL_MODEL.items():
        _set_number(laptop, f"#train-{field} input", value)
    laptop.find_element("id", "train-start").click()
    _wait(laptop, 300, lambda d: _status_step(d)[2] == "done", "the run to finish")
    trained_status = " ".join(text_of(laptop, "#train-status").split())
    assert name in trained_status and "finished" in trained_status
    assert _loss_range(laptop) == (1, 40)

    # Generate: a sampled continuation (no seed typed: the run draws one).
    open_tab(laptop, wait, "Generate")
    wait.until(lambda d: _value(d, "#generate-prompt textarea") is not None)
    prompt = laptop.find_element("css selector", "#generate-prompt textarea")
    prompt.clear()
    prompt.send_keys("def area(r):")
    laptop.find_element("id", "generate-run").click()
    WebDriverWait(laptop, 180).until(lambda d: "tokens in" in text_of(d, "#generate-stats"))
    generated = _output_text(laptop)
    assert "def area(r):" in generated and "tokens in" in text_of(laptop, "#generate-stats")

    # Analyze: one explanation of a typed input.
    open_tab(laptop, wait, "Analyze")
    text = laptop.find_element("css selector", "#analyze-text textarea")
    text.clear()
    text.send_keys("self.name = name")
    laptop.find_element("id", "analyze-run").click()
    WebDriverWait(laptop, 300).until(lambda d: "Target" in text_of(d, "#analyze-summary"))

    laptop.refresh()  # the same browser: its localStorage token says whose space this is
    wait = WebDriverWait(laptop, 120)
    wait.until(lambda d: d.find_elements("css selector", "button[role='tab']"))
    open_tab(laptop, wait, "Train")
    _wait(laptop, 120, lambda d: name in text_of(d, "#train-status"), "the last run's status after the reload")
    status = " ".join(text_of(laptop, "#train-status").split())
    assert status == trained_status, (status, trained_status)
    assert _status_step(laptop)[:2] == (40, 40)
    WebDriverWait(laptop, 60).until(lambda d: _loss_range(d) == (1, 40))  # the whole curve, from step 1
    assert _value(laptop, "#train-name textarea, #train-name input") == name  # Resume would continue it

    open_tab(laptop, wait, "Generate")
    WebDriverWait(laptop, 180).until(lambda d: "tokens in" in text_of(d, "#generate-stats"))
    assert _value(laptop, "#generate-prompt textarea") == "def area(r):"
    assert _output_text(laptop) == generated  # the same text: re-run with the seed it drew
    laptop.save_screenshot(str(tmp_path / "generate-after-reload.png"))

    open_tab(laptop, wait, "Analyze")
    WebDriverWait(laptop, 60).until(lambda d: RESTORED_NOTE.split(":")[0] in text_of(d, "#analyze-summary"))
    assert _value(laptop, "#analyze-text textarea") == "self.name = name"
    laptop.save_screenshot(str(tmp_path / "analyze-after-reload.png"))
