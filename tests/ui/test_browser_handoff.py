"""Generate -> "Explain in Analyze" in a real Chromium, as a student does it with the shipped
checkpoints: the input and the target arrive (the image for ViT, the text for GPT), the target
reads as a class name or a token (not an id), and nothing shows a red Error."""
from __future__ import annotations

import time

from tests.ui.browser_helpers import BROWSER, open_app, open_tab, text_of

pytestmark = BROWSER


def choose(driver, wait, elem_id: str, label: str | None = None, index: int | None = None) -> str:
    """Open dropdown `elem_id` and click the option `label` (or the `index`-th); returns its text."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    listbox = "ul[role='listbox'] li"
    wait.until(lambda d: not d.find_elements(By.CSS_SELECTOR, listbox))  # no other dropdown still open
    driver.find_element(By.CSS_SELECTOR, f"#{elem_id} input").click()
    options = wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, f"#{elem_id} {listbox}")
                         or d.find_elements(By.CSS_SELECTOR, listbox))
    def text(o) -> str:
        return (o.get_attribute("textContent") or "").strip().lstrip("✓").strip()

    option = next(o for o in options if text(o) == label) if label is not None else options[index or 0]
    picked = text(option)
    ActionChains(driver).move_to_element(option).click().perform()
    wait.until(lambda d: not d.find_elements(By.CSS_SELECTOR, listbox))
    return picked


def value_of(driver, css: str) -> str:
    """The value of the first input/textarea matching `css` ('' when none is shown)."""
    from selenium.webdriver.common.by import By

    found = [e for e in driver.find_elements(By.CSS_SELECTOR, css) if e.is_displayed()]
    return found[0].get_attribute("value") if found else ""


def error_panels(driver) -> int:
    """How many components show gradio's red error state."""
    from selenium.webdriver.common.by import By

    return sum(1 for e in driver.find_elements(By.CSS_SELECTOR, ".error") if e.is_displayed() and e.text.strip())


def wait_settled(driver, seconds: float = 1.5) -> None:
    """Let queue=False follow-up events (a checkpoint change) land before reading the page."""
    time.sleep(seconds)


def generate_pick(driver, wait, checkpoint: str) -> None:
    """Pick `checkpoint` in the Generate tab and wait until it is loaded.

    The model list refreshes when a tab is selected; on a busy machine that refresh can land
    after the pick and put the old value back, so the pick is repeated until it holds.
    """
    open_tab(driver, wait, "Generate")
    wait.until(lambda d: value_of(d, "#generate-model input"))  # the model list has arrived

    def loaded_or_reverted(d) -> str | None:
        if checkpoint in text_of(d, "#generate-info"):
            return "loaded"
        return "reverted" if value_of(d, "#generate-model input") != checkpoint else None

    for _ in range(4):
        choose(driver, wait, "generate-model", checkpoint)
        if wait.until(loaded_or_reverted) == "loaded":
            return
    driver.save_screenshot("/tmp/generate-pick-failed.png")
    raise AssertionError(f"{checkpoint} did not stay picked in the Generate tab")


def test_vit_handoff_brings_the_image_and_the_class(browser, app_server, tmp_path):
    from selenium.webdriver.common.by import By

    wait = open_app(browser, app_server.url, timeout=90)
    generate_pick(browser, wait, "vit-digits")
    choose(browser, wait, "generate-sample", index=0)
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#generate-image img"))  # the sample is drawn
    browser.find_element(By.ID, "generate-classify").click()
    wait.until(lambda d: "Predicted" in text_of(d, "#generate-stats"))
    picked = choose(browser, wait, "generate-token", index=1)  # the runner-up class, not the prediction
    class_name = picked.split("(p =")[0].strip()
    browser.find_element(By.ID, "generate-explain").click()

    wait.until(lambda d: open_tab_selected(d, "Analyze"))
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#analyze-image img"))
    wait_settled(browser)
    browser.save_screenshot(str(tmp_path / "vit-handoff.png"))
    assert value_of(browser, "#analyze-model input") == "vit-digits"
    assert browser.find_elements(By.CSS_SELECTOR, "#analyze-image img"), "the classified image did not arrive"
    assert value_of(browser, "#analyze-target input") == class_name
    assert f"explaining class {class_name} of" in " ".join(text_of(browser, "#analyze-about").split())
    assert not value_of(browser, "#analyze-text textarea")  # never a file path in a text box
    assert error_panels(browser) == 0

    browser.find_element(By.ID, "analyze-run").click()
    wait.until(lambda d: "Target" in text_of(d, "#analyze-summary"))
    browser.save_screenshot(str(tmp_path / "vit-explained.png"))
    assert f"Target {class_name} (id" in " ".join(text_of(browser, "#analyze-summary").split())
    assert error_panels(browser) == 0


def test_gpt_handoff_brings_the_text_and_the_token(browser, app_server, tmp_path):
    from selenium.webdriver.common.by import By

    wait = open_app(browser, app_server.url, timeout=90)
    generate_pick(browser, wait, "gpt-python-docs-char")
    prompt = browser.find_element(By.CSS_SELECTOR, "#generate-prompt textarea")
    prompt.clear()
    prompt.send_keys("The list")
    for max_new in browser.find_elements(By.CSS_SELECTOR, "#generate-max-new input[type='number']"):
        max_new.clear()  # a short continuation keeps the test quick
        max_new.send_keys("8")
    browser.find_element(By.ID, "generate-run").click()
    wait.until(lambda d: "tokens in" in text_of(d, "#generate-stats"))
    picked = choose(browser, wait, "generate-token", index=2)
    browser.find_element(By.ID, "generate-explain").click()

    wait.until(lambda d: open_tab_selected(d, "Analyze"))
    wait.until(lambda d: value_of(d, "#analyze-text textarea").startswith("The list"))
    wait_settled(browser)
    browser.save_screenshot(str(tmp_path / "gpt-handoff.png"))
    target = value_of(browser, "#analyze-target input")
    assert value_of(browser, "#analyze-model input") == "gpt-python-docs-char"
    assert "'" in target and "token #" in target, f"the target should read as a token, got {target!r} ({picked!r})"
    assert not target.startswith("#")
    assert "next token" in text_of(browser, "#analyze-about")
    assert error_panels(browser) == 0

    browser.find_element(By.ID, "analyze-run").click()
    wait.until(lambda d: "Target" in text_of(d, "#analyze-summary"))
    assert error_panels(browser) == 0


def open_tab_selected(driver, label: str) -> bool:
    from tests.ui.browser_helpers import tab_button

    return tab_button(driver, label).get_attribute("aria-selected") == "true"
