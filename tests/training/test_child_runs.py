"""Training in a child process (the served app's way): same events, errors as raised, Stop saves."""
from __future__ import annotations

import multiprocessing
import threading
import time

import pytest

from playground.child import _died, iter_in_child
from playground.errors import ConfigError, PlaygroundError, TooBigError
from tests.training.conftest import tiny_preset


def _no_children_left(within_s: float = 20.0) -> bool:
    """True once this process has no live child processes (a stopped job's reaper may need a moment)."""
    import time

    deadline = time.monotonic() + within_s
    while multiprocessing.active_children() and time.monotonic() < deadline:
        time.sleep(0.1)
    return not multiprocessing.active_children()


TRAIN = "playground.training.engine:train"


def test_a_run_in_a_child_streams_the_engines_events_and_saves(workspace, corpus_file):
    preset = tiny_preset("gpt", corpus_file, max_steps=6, eval_interval=3)
    events = list(iter_in_child(TRAIN, {"preset": preset, "workspace": workspace, "name": "kid", "device": "cpu"}))
    kinds = [e.kind for e in events]
    assert kinds[0] == "start" and kinds[-1] == "done" and kinds.count("eval") == 2
    assert [e.step for e in events if e.kind == "step"] == [1, 2, 3, 4, 5, 6]
    assert workspace.get("models", "kid").meta["step"] == 6
    assert _no_children_left()


def test_a_user_error_in_the_child_is_raised_here_with_its_class_and_message(workspace, corpus_file):
    preset = tiny_preset("gpt", corpus_file, max_steps=2)
    with pytest.raises(ConfigError, match="no_such_key"):
        list(iter_in_child(TRAIN, {"preset": preset, "workspace": workspace, "name": "bad", "device": "cpu",
                                       "overrides": ["train.no_such_key=1"]}))
    assert _no_children_left()


def test_closing_the_relay_stops_the_child_which_saves_its_step(workspace, corpus_file):
    preset = tiny_preset("gpt", corpus_file, max_steps=100_000, eval_interval=100_000, log_interval=1)
    gen = iter_in_child(TRAIN, {"preset": preset, "workspace": workspace, "name": "stopme", "device": "cpu"})
    for event in gen:
        if event.kind == "step" and event.step >= 5:
            break
    started = time.perf_counter()
    gen.close()  # what gradio does on Stop, on its event loop: it must not wait for the save
    assert time.perf_counter() - started < 1.0
    assert _no_children_left()
    meta = workspace.get("models", "stopme").meta
    assert meta["run"]["status"] == "stopped" and meta["step"] >= 5
    assert _no_children_left()


def test_a_stop_request_ends_the_run_with_its_own_stopped_event(workspace, corpus_file):
    """A user's Stop reaching the run directly (not by closing the relay): the child saves, the
    events go on to its "stopped" event and the relay ends as the run does."""
    preset = tiny_preset("gpt", corpus_file, max_steps=100_000, eval_interval=100_000, log_interval=1)
    asked = threading.Event()
    kinds, steps = [], []
    for event in iter_in_child(TRAIN, {"preset": preset, "workspace": workspace, "name": "asked", "device": "cpu"},
                               stop_requested=asked.is_set):
        kinds.append(event.kind)
        if event.kind == "step":
            steps.append(event.step)
            if event.step >= 5:
                asked.set()
    assert kinds[-1] == "stopped"
    meta = workspace.get("models", "asked").meta
    assert meta["run"]["status"] == "stopped" and meta["step"] == steps[-1] >= 5
    assert _no_children_left()


def test_a_killed_child_is_reported_as_too_big():
    assert isinstance(_died(-9), TooBigError) and "memory" in str(_died(-9))
    assert type(_died(1)) is PlaygroundError and "exit code 1" in str(_died(1))


def test_should_stop_ends_a_job_without_a_graceful_stop_at_once(workspace, corpus_file):
    import threading
    import time

    from playground.child import JobCancelled

    preset = tiny_preset("gpt", corpus_file, max_steps=100_000, eval_interval=100_000)
    cancel = threading.Event()
    gen = iter_in_child(TRAIN, {"preset": preset, "workspace": workspace, "name": "cut", "device": "cpu"},
                        stop_kw=None, should_stop=cancel.is_set)
    next(gen)  # the run has started
    cancel.set()
    started = time.perf_counter()
    with pytest.raises(JobCancelled):
        for _ in gen:
            pass
    assert time.perf_counter() - started < 5.0
    assert _no_children_left()


def test_a_stop_request_reaches_the_child_while_nobody_pulls_the_relay(workspace, corpus_file):
    """gradio may hold a run's relay without pulling it (a cancelled or slow request): the user's
    Stop must still reach the child, which saves within a step or two of the request."""
    preset = tiny_preset("gpt", corpus_file, max_steps=100_000, eval_interval=100_000, log_interval=1)
    asked = threading.Event()
    gen = iter_in_child(TRAIN, {"preset": preset, "workspace": workspace, "name": "unpulled", "device": "cpu"},
                        stop_requested=asked.is_set)
    seen = 0
    for event in gen:
        if event.kind == "step" and event.step >= 5:
            seen = event.step
            break
    asked.set()  # and the relay is left alone
    saved = threading.Event()

    def watch() -> None:
        while not saved.is_set():
            if workspace.exists("models", "unpulled") and \
                    workspace.get("models", "unpulled").meta["run"]["status"] == "stopped":
                saved.set()
            time.sleep(0.1)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        assert saved.wait(240), "the child never heard the stop"
    finally:
        saved.set()
        gen.close()
    step = workspace.get("models", "unpulled").meta["step"]
    # steps already sent before the request sit in the pipe; the child stops at its next check
    assert seen <= step
    assert _no_children_left()
