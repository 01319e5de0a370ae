"""Lanes on a real server: generation never waits behind training; one live training per user;
a run name is reserved while it trains; one user's Stop leaves another's run alone."""
from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest

from tests.conftest import RunningApp, serve_app

pytestmark = pytest.mark.slow

LONG_TOML = """family = "gpt"
[model]
block_size = 16
n_layer = 1
n_head = 2
d_model = 16
[data]
corpus = "python-docs"
tokenizer = "char"
[train]
max_steps = 20000
batch_size = 4
eval_interval = 20000
log_interval = 50
"""


@pytest.fixture(scope="module")
def lanes_server(tmp_path_factory) -> Iterator[RunningApp]:
    """The app with two heavy slots and a tiny GPT in its library."""
    from tests.ui.test_generate_tab import _save_gpt

    with serve_app(tmp_path_factory, "lanes", prepare_library=lambda ws: _save_gpt(ws, "lane-gpt"),
                   heavy_slots=2, light_slots=2) as running:
        yield running


def _client(url: str):
    """A client whose Cancel may take a few seconds: gradio's /cancel returns once the training
    generator reached its next yield (one UI interval) and the stopped run was saved."""
    from gradio_client import Client

    return Client(url, verbose=False, httpx_kwargs={"timeout": 60})


def _wait_running(job, timeout: float = 60.0) -> None:
    """Until the training job has streamed a progress update (it holds a heavy slot)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if job.done():
            raise AssertionError(f"the long training ended early: {job.exception() or job.outputs()[-1:]}")
        if any("data-state" in str(out[0]) and "running" in str(out[0]) for out in job.outputs()):
            return
        time.sleep(0.2)
    raise AssertionError("the long training did not start")


def hold_heavy_slots(url: str, n: int = 2) -> list:
    """`n` other users' long trainings, each streaming (so each holds a heavy slot); cancel them after."""
    jobs = [_client(url).submit("nanogpt-cpu-tiny", LONG_TOML, f"hold-{i}", True, 0,
                                               api_name="/train_start") for i in range(n)]
    for job in jobs:
        _wait_running(job)
    return jobs


@pytest.mark.slow  # fills every heavy slot with a training (about 7 s)
def test_generation_runs_while_every_heavy_slot_trains(lanes_server):
    jobs = hold_heavy_slots(lanes_server.url)
    try:
        student = _client(lanes_server.url)
        student.predict(None, api_name="/refresh_generate_models")  # the dropdown's choices, per session
        out = student.predict("lane-gpt", "the", 0.0, 0, 1.0, 0.0, 1.0, 0.0, 0.0, 30, 1, 1, "", 1, 0.0,
                              api_name="/generate_text")
        assert out[0].count("data-index=") == 30
        assert not any(job.done() for job in jobs)  # it was served while both trainings still held their slots
    finally:
        for job in jobs:
            job.cancel()


def test_one_live_training_per_user_and_names_reserved(lanes_server):
    alice, bob = _client(lanes_server.url), _client(lanes_server.url)
    name = f"mine-{uuid.uuid4().hex[:6]}"
    first = alice.submit("nanogpt-cpu-tiny", LONG_TOML, name, True, 0, api_name="/train_start")
    try:
        _wait_running(first)
        second = alice.submit("nanogpt-cpu-tiny", LONG_TOML, f"{name}-b", True, 0, api_name="/train_start")
        with pytest.raises(Exception, match="1 per user"):
            second.result(timeout=60)
        # Bob may use the same run name: it lives in his own space.
        bobs = bob.submit("nanogpt-cpu-tiny", LONG_TOML.replace("max_steps = 20000", "max_steps = 3"), name, True, 0,
                          api_name="/train_start")
        assert 'data-state="done"' in bobs.result(timeout=120)[0]
        assert lanes_server.space_of(bob).get("models", name).meta["step"] == 3
        assert not first.done()  # Bob's finished run did not touch Alice's live one
    finally:
        first.cancel()


def test_the_same_run_name_twice_is_refused_while_live(lanes_server):
    alice = _client(lanes_server.url)
    name = f"dup-{uuid.uuid4().hex[:6]}"
    first = alice.submit("nanogpt-cpu-tiny", LONG_TOML, name, True, 0, api_name="/train_start")
    try:
        _wait_running(first)
        again = alice.submit(LONG_TOML, name, 0, api_name="/train_resume")
        with pytest.raises(Exception, match="already running"):
            again.result(timeout=60)
    finally:
        first.cancel()
