"""A student's first hour at a laptop's size (issue #30): a real Chromium, 1366x768, real clicks."""
from __future__ import annotations

import uuid


from playground.lessons import all_lessons

from tests.ui.browser_helpers import BROWSER, open_app, open_tab, text_of
from tests.ui.test_browser_handoff import (
    choose,
    error_panels,
    generate_pick,
    open_tab_selected,
)

pytestmark = BROWSER


def shown(driver, elem_id: str) -> bool:
    """Whether the element with this id is on the page and displayed (gradio may drop a hidden one)."""
    return driver.execute_script("const e = document.getElementById(arguments[0]);"
                                 "return !!e && e.getClientRects().length > 0 && getComputedStyle(e).visibility !== 'hidden';",
                                 elem_id)


def _lesson_tabs(driver) -> list[tuple[str, str]]:
    """(label, button id) of every lesson tab button, left to right."""
    return [tuple(pair) for pair in driver.execute_script(
        "return [...document.querySelectorAll(\"#lessons-tabs button[role='tab']\")]"
        ".map(b => [b.innerText.trim(), b.id]);")]


def test_lesson_tabs_open_left_to_right(laptop, app_server):
    """Click every lesson tab in turn: each one opens and its lesson shows, and the row of tabs
    stays as it was (no tab turns into a copy of its left neighbour; "Claims, reproduced" stays)."""
    from selenium.webdriver.common.by import By

    wait = open_app(laptop, app_server.url)
    open_tab(laptop, wait, "Lessons")
    wait.until(lambda d: len(_lesson_tabs(d)) > 2)
    tabs = _lesson_tabs(laptop)
    assert tabs[-1][0] == "Claims, reproduced"
    assert len({i for _, i in tabs}) == len(tabs), tabs
    for label, button_id in tabs:
        laptop.find_element(By.ID, button_id).click()
        wait.until(lambda d, b=button_id: d.find_element(By.ID, b).get_attribute("aria-selected") == "true")
        panel = laptop.find_element(By.ID, button_id.removesuffix("-button"))
        wait.until(lambda d, p=panel: p.is_displayed())
        assert _lesson_tabs(laptop) == tabs, f"after clicking {label!r} the tabs read {_lesson_tabs(laptop)}"
        selected = text_of(laptop, "#lessons-tabs button[aria-selected='true']")
        assert selected == label
    wait.until(lambda d: "Claim" in text_of(d, "#lesson-tab-claims"))


def test_my_space_errors_show_on_the_page_and_delete_asks_first(laptop, app_server):
    """A mistyped name gives its message under the buttons (not only a red "Error" pill), and
    Delete removes nothing until the question it asks is answered."""
    from selenium.webdriver.common.by import By

    wait = open_app(laptop, app_server.url)
    open_tab(laptop, wait, "My space")
    name_box = laptop.find_element(By.CSS_SELECTOR, "#space-name textarea, #space-name input")
    name_box.send_keys("no-such-model-x")
    laptop.find_element(By.ID, "space-delete").click()
    wait.until(lambda d: "Could not delete" in text_of(d, "#space-status"))
    assert "No model named 'no-such-model-x'" in text_of(laptop, "#space-status")
    laptop.find_element(By.ID, "space-share").click()
    wait.until(lambda d: "Could not share" in text_of(d, "#space-status"))
    assert "Only your own" in text_of(laptop, "#space-status")

    # One of this browser's own tokenizers: Delete asks, "Keep it" keeps it, "Yes, delete" deletes.
    mine = f"mine-{uuid.uuid4().hex[:6]}"
    build_and_save_tokenizer(laptop, wait, mine)
    open_tab(laptop, wait, "My space")
    wait.until(lambda d: mine in text_of(d, "#space-table"))
    laptop.find_element(By.CSS_SELECTOR, "#space-kind input[value='tokenizer']").click()
    name_box = laptop.find_element(By.CSS_SELECTOR, "#space-name textarea, #space-name input")
    name_box.clear()
    name_box.send_keys(mine)
    laptop.find_element(By.ID, "space-delete").click()
    wait.until(lambda d: shown(d, "space-confirm"))
    assert f"Delete your tokenizer '{mine}' for good?" in text_of(laptop, "#space-confirm-text")
    laptop.find_element(By.ID, "space-confirm-no").click()
    wait.until(lambda d: not shown(d, "space-confirm"))
    assert mine in text_of(laptop, "#space-table")
    laptop.find_element(By.ID, "space-delete").click()
    wait.until(lambda d: shown(d, "space-confirm"))
    laptop.find_element(By.ID, "space-confirm-yes").click()
    wait.until(lambda d: f"Deleted your tokenizer '{mine}'" in text_of(d, "#space-status"))
    wait.until(lambda d: mine not in text_of(d, "#space-table"))


def build_and_save_tokenizer(driver, wait, name: str) -> None:
    """In the Tokenizer tab: build a 300-token BPE of the default corpus and save it as `name`."""
    from selenium.webdriver.common.by import By

    open_tab(driver, wait, "Tokenizer")
    vocab = driver.find_element(By.CSS_SELECTOR, "#tok-vocab-size input[type='number']")
    vocab.clear()
    vocab.send_keys("300")
    driver.find_element(By.ID, "tok-build").click()
    wait.until(lambda d: "Built" in text_of(d, "#tok-status"))
    driver.find_element(By.CSS_SELECTOR, "#tok-name textarea, #tok-name input").send_keys(name)
    driver.find_element(By.ID, "tok-save").click()
    wait.until(lambda d: name in text_of(d, "#tok-save-status"))


def _mark_chart(driver, elem_id: str) -> None:
    """Tag the chart now drawn in `elem_id`, so `_redrawn` can tell when a new one replaces it."""
    driver.execute_script("const c = document.querySelector(`#${arguments[0]} .vega-embed`); if (c) c.__seen = true;",
                          elem_id)


def _redrawn(driver, elem_id: str) -> bool:
    """Whether `elem_id` shows a chart drawn after the last `_mark_chart`."""
    return driver.execute_script("const c = document.querySelector(`#${arguments[0]} .vega-embed`);"
                                 "return !!c && !c.__seen;", elem_id)


def _toasts(driver) -> str:
    return " ".join(e.text for e in driver.find_elements("css selector", "[data-testid='toast-body']"))


def test_typing_095_into_top_p_raises_no_toast(laptop, app_server):
    """Type 0.95 into Top-p's box key by key and leave it: the distribution redraws for 0.95 and
    no red toast appears (the half-typed "0" and "0." are never checked)."""
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    wait = open_app(laptop, app_server.url)
    open_tab(laptop, wait, "Generate")
    wait.until(lambda d: d.find_elements("css selector", "#generate-dist .vega-embed"))  # the first drawing
    box = next(b for b in laptop.find_elements("css selector", "input[type='number']")
               if b.get_attribute("aria-label") == "number input for Top-p (nucleus)")
    _mark_chart(laptop, "generate-dist")
    box.click()
    box.send_keys(Keys.CONTROL, "a", Keys.DELETE)
    for key in "0.95":
        box.send_keys(key)
    box.send_keys(Keys.TAB)  # leave the box: now it counts
    WebDriverWait(laptop, 60).until(lambda d: _redrawn(d, "generate-dist"))
    assert box.get_attribute("value") == "0.95"
    assert "Top-p" not in _toasts(laptop), _toasts(laptop)
    assert not laptop.find_elements("css selector", ".toast-wrap .error, [data-testid='toast-body'].error")


def test_explain_in_analyze_explains_the_picked_token(laptop, app_server):
    """Generate, pick a token, press "Explain in Analyze": the Analyze tab opens and explains that
    token by itself (no second press of Explain), with the result in the window."""
    from selenium.webdriver.common.by import By

    wait = open_app(laptop, app_server.url, timeout=120)
    generate_pick(laptop, wait, "gpt-python-docs-char")
    prompt = laptop.find_element(By.CSS_SELECTOR, "#generate-prompt textarea")
    prompt.clear()
    prompt.send_keys("def f(x):")
    for max_new in laptop.find_elements(By.CSS_SELECTOR, "#generate-max-new input[type='number']"):
        max_new.clear()
        max_new.send_keys("6")
    laptop.find_element(By.ID, "generate-run").click()
    wait.until(lambda d: "tokens in" in text_of(d, "#generate-stats"))
    picked = choose(laptop, wait, "generate-token", index=1)
    laptop.find_element(By.ID, "generate-explain").click()
    wait.until(lambda d: open_tab_selected(d, "Analyze"))
    wait.until(lambda d: "Target" in text_of(d, "#analyze-summary"))
    summary = " ".join(text_of(laptop, "#analyze-summary").split())
    assert "predicted" in summary and "Time:" in summary, summary
    assert laptop.find_element(By.CSS_SELECTOR, "#analyze-importance .vega-embed")
    assert "next token" in text_of(laptop, "#analyze-about"), picked
    top = laptop.execute_script("return document.getElementById('analyze-summary').getBoundingClientRect().top")
    assert 0 <= top < laptop.execute_script("return window.innerHeight"), f"the result starts at y={top}, out of view"
    assert error_panels(laptop) == 0
    laptop.save_screenshot("/tmp/shots-i30ui/explain-in-analyze.png")


MAIN_BUTTONS = (("Tokenizer", "tok-build"), ("Train", "train-start"), ("Generate", "generate-run"),
                ("Analyze", "analyze-run"), ("My space", "space-share"), ("My space", "space-delete"))


def _in_window(driver, elem_id: str) -> tuple[bool, float]:
    """Whether the element lies wholly inside the window (scrolled to the top), and its bottom edge."""
    driver.execute_script("window.scrollTo(0, 0)")
    bottom = driver.execute_script("return document.getElementById(arguments[0]).getBoundingClientRect().bottom",
                                   elem_id)
    return 0 < bottom <= driver.execute_script("return window.innerHeight"), bottom


def test_main_buttons_inside_a_laptop_window(laptop, app_server):
    """Each tab's main button shows without scrolling in a 1366x768 window, Train's Start also
    under the preset with the longest description (about 300 words)."""
    wait = open_app(laptop, app_server.url)
    assert laptop.execute_script("return window.innerHeight") <= 640  # what a 768-pixel screen leaves
    for tab, button in MAIN_BUTTONS:
        open_tab(laptop, wait, tab)
        wait.until(lambda d, b=button: shown(d, b))
        inside, bottom = _in_window(laptop, button)
        assert inside, f"{tab}: #{button} ends at y={bottom:.0f}, below the window"
    open_tab(laptop, wait, "Lessons")
    for lesson in all_lessons().values():  # each lesson's Run, above its settings
        laptop.find_element("id", f"lesson-tab-{lesson.name}-button").click()
        wait.until(lambda d, n=lesson.name: shown(d, f"lesson-{n}-run"))
        inside, bottom = _in_window(laptop, f"lesson-{lesson.name}-run")
        assert inside, f"lesson {lesson.name}: Run ends at y={bottom:.0f}, below the window"
    open_tab(laptop, wait, "Train")
    choose(laptop, wait, "train-preset", "nanogpt-cpu-fast")
    wait.until(lambda d: "nanogpt-cpu-fast" in text_of(d, "#train-description"))
    inside, bottom = _in_window(laptop, "train-start")
    assert inside, f"under nanogpt-cpu-fast, Start ends at y={bottom:.0f}, below the window"


# Every chart shown in the page: (its box id or label, the box's inner width, the drawn chart's width).
CHART_WIDTHS_JS = """return [...document.querySelectorAll('[data-testid="altair"]')].filter(a => a.offsetParent).map(a => {
  const drawn = a.querySelector('.vega-embed > svg, .vega-embed > canvas');
  const block = a.closest('.block');
  const name = block ? (block.id || (block.querySelector('label') || {}).innerText || '?') : '?';
  return [name.trim().slice(0, 60), a.clientWidth, drawn ? drawn.getBoundingClientRect().width : 0];
});"""


def _charts(driver) -> list[tuple[str, float, float]]:
    return driver.execute_script(CHART_WIDTHS_JS)


def _too_wide(driver) -> list[str]:
    return [f"{name}: {drawn:.0f} px in a {box:.0f} px box" for name, box, drawn in _charts(driver) if drawn > box + 1]


def test_no_chart_wider_than_its_box_at_1366(laptop, app_server):
    """Every lesson's charts (the two-panel Block-parts ones included), Generate's distribution and
    a text classifier's importance strips are drawn no wider than their boxes in a 1366 px window."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    slow = WebDriverWait(laptop, 180)
    wait = open_app(laptop, app_server.url)
    open_tab(laptop, wait, "Lessons")
    wait.until(lambda d: len(_lesson_tabs(d)) > 2)
    too_wide: list[str] = []
    seen = 0
    for label, button_id in _lesson_tabs(laptop):
        laptop.find_element(By.ID, button_id).click()
        wait.until(lambda d, b=button_id: d.find_element(By.ID, b).get_attribute("aria-selected") == "true")
        # drawn: every chart box shown has its chart (a lesson computes when its tab opens)
        slow.until(lambda d: _charts(d) and all(drawn > 50 for _, _, drawn in _charts(d)))
        seen += len(_charts(laptop))
        too_wide += [f"{label} / {t}" for t in _too_wide(laptop)]
    open_tab(laptop, wait, "Generate")
    slow.until(lambda d: any(name == "generate-dist" and drawn > 50 for name, _, drawn in _charts(d)))
    too_wide += _too_wide(laptop)
    open_tab(laptop, wait, "Analyze")
    choose(laptop, wait, "analyze-model", "textclf-reviews-bilstm-additive")
    wait.until(lambda d: "Text classifier" in text_of(d, "#analyze-about"))
    offered = text_of(laptop, "#analyze-methods")  # a J&W classifier has one attention layer: nothing to roll out
    assert "saliency" in offered and not {"rollout", "flow", "relevancy"} & set(offered.split()), offered
    text = next(t for t in laptop.find_elements(By.CSS_SELECTOR, "#analyze-text textarea") if t.is_displayed())
    text.send_keys("a wonderful film with excellent acting and a moving story")
    laptop.find_element(By.ID, "analyze-run").click()
    slow.until(lambda d: "Target" in text_of(d, "#analyze-summary"))
    slow.until(lambda d: any(name == "analyze-importance" and drawn > 50 for name, _, drawn in _charts(d)))
    too_wide += _too_wide(laptop)
    assert seen >= 15, f"only {seen} lesson charts were drawn"
    assert too_wide == [], too_wide
