"""List refreshers: an answer the page already has is skipped (not re-rendered), a save asks all
of them in one event, a dropdown's value is only sent when it must change, and a tab's own
refreshers run when it is opened."""
from __future__ import annotations

import gradio as gr
import pandas as pd

from playground.settings import make_settings
from playground.ui.app import build_app
from playground.ui.context import choices_update, fingerprint, refresh_all, remember_answer, skip_repeats


def _listener(answers: list):
    def listener(request: gr.Request, token=None, *args):
        return answers.pop(0)
    return listener


def _is_skip(value) -> bool:
    return isinstance(value, dict) and value == gr.skip()


def test_fingerprint_tells_tables_and_updates_apart():
    table = pd.DataFrame({"run": ["a", "b"], "loss": [1.0, 2.0]})
    assert fingerprint([table]) == fingerprint([table.copy()])
    assert fingerprint([table]) != fingerprint([table.assign(loss=[1.0, 2.5])])
    assert fingerprint([gr.update(choices=["a"])]) != fingerprint([gr.update(choices=["a", "b"])])
    assert fingerprint([1]) != fingerprint(["1"])  # a number and its text are different answers


def test_a_repeated_answer_is_skipped_and_a_new_one_sent():
    first, new = (gr.update(choices=["a"]), "x"), (gr.update(choices=["a", "b"]), "x")
    remembered = remember_answer(_listener([first]), 2)(None, "token")
    assert remembered[:2] == first and remembered[2] == fingerprint(first)
    ask = skip_repeats(_listener([first, new, new]), 2)
    again = ask(None, "token", remembered[2])
    assert all(_is_skip(v) for v in again) and len(again) == 3  # both outputs and the memo itself
    changed = ask(None, "token", remembered[2])
    assert changed[:2] == new and changed[2] == fingerprint(new)
    assert all(_is_skip(v) for v in ask(None, "token", changed[2]))


def test_a_single_output_is_not_unpacked():
    table = pd.DataFrame({"name": ["a"]})
    out = skip_repeats(_listener([table]), 1)(None, "token", None)
    assert out[0] is table and out[1] == fingerprint((table,))


def test_choices_keep_the_users_pick_by_not_sending_a_value():
    assert choices_update(["a", "b"], "b") == gr.update(choices=["a", "b"])  # no value: a pick in flight stays
    assert choices_update(["a", "b"], "gone") == gr.update(choices=["a", "b"], value="a")
    assert choices_update([], "gone") == gr.update(choices=[], value=None)
    assert choices_update(["a"], None) == gr.update(choices=["a"], value="a")
    assert choices_update(["a", "b"], None, first="b") == gr.update(choices=["a", "b"], value="b")
    assert choices_update(["a", "b"], "a", first="b") == gr.update(choices=["a", "b"])  # a pick wins
    assert choices_update(["a"], None, first="gone") == gr.update(choices=["a"], value="a")


def test_checkpoint_lists_open_on_the_demo_gpt(tmp_path):
    """A new page's Generate and Analyze open on the demo GPT the README starts with, not on
    whichever shipped checkpoint sorts first (a fill-mask BERT hides the sampling knobs)."""
    from playground.settings import FIRST_MODEL, SHIPPED_LIBRARY
    from playground.spaces import Spaces, user_key
    from playground.ui.context import model_choices

    ws = Spaces(tmp_path / "root", [SHIPPED_LIBRARY]).space(user_key(None, None, "s"), "s")
    names = ws.names("models")
    assert FIRST_MODEL in names and names[0] != FIRST_MODEL
    assert model_choices(ws, None)["value"] == FIRST_MODEL


def test_several_refreshers_answer_as_one_event():
    a, b = (gr.update(choices=["a"]),), (pd.DataFrame({"x": [1]}), "text")
    both = refresh_all([(skip_repeats(_listener([a[0], a[0]]), 1), 1, 1),
                        (skip_repeats(_listener([b, b]), 2), 2, 2)])
    first = both(None, "token", "token", "b-input", None, None)  # inputs of each, then each memo
    assert first[0] == a[0] and first[1] is b[0] and first[2] == "text"
    assert first[3:] == (fingerprint(a), fingerprint(b))
    again = both(None, "token", "token", "b-input", *first[3:])
    assert all(_is_skip(v) for v in again) and len(again) == 5


def test_each_refresher_runs_on_save_and_on_its_own_tab(tmp_path):
    app = build_app(make_settings(tmp_path, device="cpu"))
    config = app.get_config_file()
    ids = {c["id"]: c for c in config["components"]}
    tabs = {c["id"]: c["props"].get("elem_id") for c in config["components"] if c["type"] == "tabitem"}
    private = [d for d in config["dependencies"] if d["api_visibility"] == "undocumented"]
    # the app's own tabs, but Lessons: it and its inner tabs compute a lesson when opened (not refreshers)
    top = {i for i, elem_id in tabs.items() if (elem_id or "").startswith("tab-") and elem_id != "tab-lessons"}
    on_tab = [d for d in private if [t[1] for t in d["targets"]] == ["select"] and d["targets"][0][0] in top]
    # tokenizers saved, Train's tokenizers and runs, Generate and its second model, Analyze and its
    # second model (per input and in Experiments), My space
    assert len(on_tab) == 9
    assert sorted(tabs[d["targets"][0][0]] for d in on_tab) == [
        "tab-analyze", "tab-analyze", "tab-analyze", "tab-generate", "tab-generate", "tab-space", "tab-tokenizer",
        "tab-train", "tab-train"]
    memos = set()
    for dep in on_tab:
        assert ids[dep["outputs"][-1]]["type"] == "state" and dep["inputs"][-1] == dep["outputs"][-1]  # the memo
        memos.add(dep["outputs"][-1])
    (on_save,) = [d for d in private if d["outputs"] and set(memos) <= set(d["outputs"])]
    assert [ids[t[0]]["type"] for t in on_save["targets"]] == ["state"]  # the workspace version
    assert {o for d in on_tab for o in d["outputs"]} == set(on_save["outputs"])  # every list, one event
