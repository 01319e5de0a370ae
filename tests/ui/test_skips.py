"""`playground.ui.skips.Blocks`: skipped outputs answered without rebuilding components, every
result the same as gradio's own `postprocess_data` gives."""
from __future__ import annotations

import asyncio

import gradio as gr
import pandas as pd
import pytest
from gradio.state_holder import SessionState

from playground.ui.skips import SKIP, Blocks, is_pure_skip


def _demo(cls: type[gr.Blocks]) -> tuple[gr.Blocks, list]:
    with cls() as demo:
        outputs = [gr.HTML(), gr.Dataframe(), gr.DownloadButton(), gr.Dropdown(choices=["a"]), gr.State(1),
                   gr.Markdown("start")]
        button = gr.Button()
        button.click(lambda: None, None, outputs)
    return demo, outputs


def _post(cls: type[gr.Blocks], predictions: list) -> tuple[list, SessionState, list]:
    demo, outputs = _demo(cls)
    state = SessionState(demo)
    fn = demo.default_config.fns[0]
    result = asyncio.run(demo.postprocess_data(fn, list(predictions), state))
    return result, state, outputs


def _configs(state: SessionState) -> list[dict]:
    """The session's component configs in creation order, without their ids (two apps differ there)."""
    return [{k: v for k, v in state.config_values[i].items() if k != "id"} for i in sorted(state.config_values)]


CASES = {
    "two of six updated": lambda: ["<b>hi</b>", gr.skip(), gr.skip(), gr.skip(), gr.skip(), "*done*"],
    "one updated": lambda: [gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip(), "*done*"],
    "all skipped": lambda: [gr.skip()] * 6,
    "a table, a property update, a state": lambda: [
        gr.skip(), pd.DataFrame({"token": ["a", "b"], "p": [0.5, 0.25]}), gr.skip(),
        gr.update(choices=["x", "y"], value=None), 7, gr.skip()],
    "nothing skipped": lambda: ["<i>x</i>", pd.DataFrame({"a": [1]}), None, gr.update(value="a"), 3, "text"],
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_same_result_and_session_config_as_gradio(case: str) -> None:
    predictions = CASES[case]()
    ours, our_state, _ = _post(Blocks, predictions)
    theirs, their_state, _ = _post(gr.Blocks, CASES[case]())
    assert ours == theirs
    assert list(our_state.state_data.values()) == list(their_state.state_data.values())  # the gr.State output
    ours_cfg, theirs_cfg, before = _configs(our_state), _configs(their_state), _configs(SessionState(_demo(Blocks)[0]))
    skipped = {i for i, p in enumerate(predictions) if is_pure_skip(p)}
    for i in range(len(ours_cfg)):
        if i in skipped:
            # unchanged; gradio's rebuild drops the component's value from the session config
            # (the Markdown's "start"), which a deep link of this session would then lose
            assert ours_cfg[i] == before[i]
        else:
            assert ours_cfg[i] == theirs_cfg[i]


def test_a_skipped_output_keeps_its_component() -> None:
    """gradio rebuilds a skipped component (the cost this class removes); ours keeps it."""
    _, state, outputs = _post(Blocks, CASES["one updated"]())
    download = outputs[2]
    assert state[download._id] is download
    _, their_state, their_outputs = _post(gr.Blocks, CASES["one updated"]())
    assert their_state[their_outputs[2]._id] is not their_outputs[2]


def test_pure_skip_is_only_the_empty_update() -> None:
    assert is_pure_skip(gr.skip()) and is_pure_skip(dict(SKIP))
    assert not is_pure_skip(gr.update(visible=False))
    assert not is_pure_skip(gr.update(value=None))
    assert not is_pure_skip({"__type__": "update", "choices": []})
    assert not is_pure_skip("update")
