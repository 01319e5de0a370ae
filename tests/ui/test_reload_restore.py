"""What a page that opens again brings back (issue #30, item 12), handler by handler: the Train
tab's last run from its saved checkpoint, Generate's last generation re-run with the seed it drew,
Analyze's last choices; nothing at all for a user with no memory or whose model has gone."""
from __future__ import annotations

from pathlib import Path

import gradio as gr
import pytest

from playground import screen_memory as sm
from playground.settings import make_settings
from playground.ui import analyze_tab as at
from playground.ui import generate_tab as gt
from playground.ui import train_tab as tt
from tests.ui.test_generate_tab import _save_gpt
from tests.ui.test_train_tab import _tiny_toml, corpus  # noqa: F401 - corpus is a fixture

SKIP = gr.skip()


def _all_skipped(values) -> bool:
    return all(v == SKIP for v in values)


def test_train_restores_the_last_runs_status_curve_and_form(workspace, corpus):  # noqa: F811 - the fixture
    settings = make_settings(workspace.root, device="cpu")
    assert _all_skipped(tt.restore_last_run(workspace))  # a first visit: the page stays as built
    toml = _tiny_toml("gpt", corpus, max_steps=12, eval_interval=4, log_interval=2, preview=False)
    live = list(tt.start_training(workspace, settings, "tiny", toml, "curve", False, 0))[-1]
    restored = tt.restore_last_run(workspace)
    n_form = len(tt.FORM_FIELDS)
    preset, toml_shown, _description, name = restored[:4]
    view = restored[4 + n_form:]
    assert preset == SKIP  # "tiny" is not a listed preset: the dropdown keeps its value
    assert toml_shown == toml and name["value"] == "curve"
    assert view[0] == live.status  # the status bar as the run's own stream last drew it
    assert 'data-state="done"' in view[0] and "saved as curve" in view[0]
    assert view[1].data.equals(live.loss_plot.data)  # the same curve, from step 1
    assert view[2].data.equals(live.lr_plot.data)
    assert Path(view[7]).read_text(encoding="utf-8").startswith("step,")  # the metrics CSV


def test_train_says_stopped_at_the_saved_step_and_forgets_a_deleted_run(workspace, corpus):  # noqa: F811
    settings = make_settings(workspace.root, device="cpu")
    toml = _tiny_toml("gpt", corpus, max_steps=400, eval_interval=1000, log_interval=1, preview=False)
    stream = tt.start_training(workspace, settings, "tiny", toml, "halted", False, 0)
    next(stream), next(stream), next(stream)  # starting, the run's start, a few steps in
    stream.close()  # what Stop and a closed page do: the run saves where it is
    step = workspace.get("models", "halted").meta["step"]
    assert 0 < step < 400
    status = tt.restore_last_run(workspace)[4 + len(tt.FORM_FIELDS)]
    assert status == tt.progress_html(step, 400, tt.stopped_text("halted", step, True), None, "stopped")
    workspace.delete("models", "halted")
    assert _all_skipped(tt.restore_last_run(workspace))


def test_generate_reruns_the_last_generation_with_the_seed_it_drew(workspace):
    _save_gpt(workspace, "g")
    env = gt.Env(workspace, "cpu", None)
    assert gt.refresh_models(env, None)["value"] == "g"
    knobs = dict(temperature=1.3, top_k=0, top_p=0.9, min_p=0.0, rep=1.0, freq=0.0, pres=0.0)
    first = list(gt.generate_text(env, "g", "the", *knobs.values(), 16, None, 1, "", 1, 0.0))[-1]
    last = sm.recall(workspace.root, "generate")
    assert last["model"] == "g" and last["seed_box"] is None and isinstance(last["seed"], int)
    assert f"{last['seed']}" in first.stats  # the seed the stats line shows is the one kept
    again = list(gt.restore_generation(env, {"model": "g"}))[-1]
    inputs, outputs = again[:len(gt.RUN_KNOBS)], again[len(gt.RUN_KNOBS):]
    assert dict(zip(gt.RUN_KNOBS, inputs))["prompt"] == "the"
    assert dict(zip(gt.RUN_KNOBS, inputs))["seed_box"] is None  # the box stays empty: the next run draws anew
    assert dict(zip(gt.RUN_KNOBS, inputs))["top_p"] == 0.9
    assert outputs[0] == first.output  # the same text, token for token
    assert outputs[2].equals(first.table)  # and the same per-token table
    assert _all_skipped(list(gt.restore_generation(env, {"model": "other"}))[-1])  # another model first: nothing


def test_generate_first_shown_arms_once_per_page():
    from playground.ui.context import first_on_page

    assert first_on_page(False, "g") == (True, {"model": "g"})
    assert _all_skipped(first_on_page(True, "h"))


def test_analyze_restores_the_last_choices_checked_against_the_checkpoint(workspace):
    _save_gpt(workspace, "g")
    assert _all_skipped(at.restore_choice(workspace, {"model": "g"}))
    view = at.checkpoint_view(workspace, "g")
    methods = [view["methods"][0], "no-such-method"]
    sm.remember(workspace.root, "analyze", {"model": "g", "text": "the cat", "sample": 99, "position": "1",
                                            "target": "t", "methods": methods, "layer": "0", "head": "",
                                            "ig_steps": 20, "ig_auto": False, "float64": True})
    assert at.analyses_models(workspace, None)["value"] == "g"
    shown = dict(zip(at.CHOICES, at.restore_choice(workspace, {"model": "g"})))
    assert shown["text"] == "the cat" and shown["position"] == "1" and shown["target"] == "t"
    assert shown["methods"] == [view["methods"][0]]  # a method this checkpoint does not offer is dropped
    assert shown["sample"] is None  # not one of its samples
    assert shown["ig_steps"] == 20 and shown["ig_auto"] is False and shown["float64"] is True
    assert at.restore_choice(workspace, {"model": "g"})[-1] == at.RESTORED_NOTE
    assert _all_skipped(at.restore_choice(workspace, {"model": "h"}))


@pytest.mark.parametrize("hostile", [{"model": "g", "text": 5, "methods": "attention"}, {"model": ["g"]}])
def test_analyze_takes_nothing_unchecked_from_the_record(workspace, hostile):
    _save_gpt(workspace, "g")
    (workspace.root / sm.MEMORY_FILE).write_text(__import__("json").dumps({"analyze": hostile}), encoding="utf-8")
    values = at.restore_choice(workspace, {"model": "g"})
    if hostile["model"] == "g":
        shown = dict(zip(at.CHOICES, values))
        assert shown["text"] == "" and shown["methods"] == at.checkpoint_view(workspace, "g")["defaults"]
    else:
        assert _all_skipped(values)
