"""Analyze -> Experiments with a second model, in a real Chromium against the real app: the
shipped character-level GPT beside an imported (tiny, random, save_pretrained) GPT-2 from the
library, one permutation run, results in two columns with each model's own summary."""
from __future__ import annotations

from pathlib import Path

import pytest

from playground.settings import FIRST_MODEL
from tests.conftest import serve_app
from tests.ui.browser_helpers import BROWSER, text_of
from tests.ui.test_browser_experiments import open_experiments, run_and_wait, set_number, shown
from tests.ui.test_browser_handoff import choose

pytestmark = BROWSER

SECOND = "gpt2-tiny"


@pytest.fixture(scope="module")
def pair_server(tmp_path_factory: pytest.TempPathFactory):
    from playground.pretrained.importer import import_pretrained
    from tests.pretrained.conftest import save

    folder = tmp_path_factory.mktemp("hf") / "gpt2"

    def prepare(library) -> None:
        import_pretrained(str(save("GPT2LMHeadModel", folder).folder), library, SECOND)

    with serve_app(tmp_path_factory, "pair", prepare_library=prepare) as running:
        yield running


def test_the_experiments_show_two_models_in_two_columns(browser, pair_server, tmp_path: Path) -> None:
    wait = open_experiments(browser, pair_server.url)
    assert not shown(browser, "exp-col-2")  # one model: one column
    choose(browser, wait, "exp-second", SECOND)
    set_number(browser, "Held-out examples", 2)
    wait.until(lambda d: f"2 examples on each of {FIRST_MODEL} and {SECOND}" in text_of(d, "#exp-estimate"))
    run_and_wait(browser, wait, "Done: 2 examples on each model")
    wait.until(lambda d: shown(d, "exp-col-2"))
    assert FIRST_MODEL in text_of(browser, "#exp-col-1-head") and SECOND in text_of(browser, "#exp-col-2-head")
    first, second = text_of(browser, "#exp-summary"), text_of(browser, "#exp-summary-2")
    for summary in (first, second):
        assert "median TVD" in summary and "of 2 examples" in summary  # each model's own sentence and statistic
    assert first != second
    assert "Both models read the same 2 windows" in text_of(browser, "#exp-status")
    wait.until(lambda d: d.find_elements("css selector", "#exp-chart-2 canvas, #exp-chart-2 svg"))
    browser.execute_script("document.getElementById('exp-col-1-head').scrollIntoView()")
    browser.save_screenshot(str(tmp_path / "experiments-two-models.png"))
    choose(browser, wait, "exp-second", "none: one model")
    wait.until(lambda d: not shown(d, "exp-col-2"))  # back to one column, the old result cleared
