"""ZeroGPU: what can be proved without a ZeroGPU Space, with the real `spaces` package installed.

`spaces.GPU` returns the function itself off ZeroGPU, so these tests put a probe in its place that
does, at call time, what spaces/zero/wrappers.py does short of the scheduler: read gradio's request
through spaces' own accessor (`spaces.utils.gradio_request_var`), evaluate the duration with the
call's arguments, pickle the arguments (into the worker) and each yield or the return value (back).
Served on loopback with ZeroGPU's paths on, every decorated call must then happen inside a gradio
request, in the server's own process, with a duration within the visitor's quota, and streaming.
"""
from __future__ import annotations

import dataclasses
import functools
import inspect
import os
import pickle
import sys
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from playground import zerogpu
from playground.config import load_preset
from playground.settings import DEMO_CAPS, make_settings
from tests.conftest import RunningApp, free_port

TINY_TOML = """family = "gpt"
[model]
block_size = 16
n_layer = 1
n_head = 2
d_model = 16
[data]
corpus = "python-docs"
tokenizer = "char"
[train]
max_steps = 30
batch_size = 4
eval_interval = 10
log_interval = 1
"""


@dataclasses.dataclass
class Call:
    """One decorated call as the probe saw it."""

    name: str
    request: Any
    pid: int
    thread: str
    duration: int
    yields: int = 0


def probe_gpu(calls: list[Call]):
    """A stand-in for `spaces.GPU` that checks what the real wrapper needs at call time."""
    from spaces.utils import gradio_request_var

    request_var = gradio_request_var()

    def GPU(task=None, *, duration=None, size=None):  # the shape of spaces.GPU
        def wrap(fn):
            def begin(args, kwargs) -> Call:
                seconds = duration(*args, **kwargs) if callable(duration) else duration
                call = Call(fn.__name__, request_var.get(None), os.getpid(), threading.current_thread().name, seconds)
                calls.append(call)
                return call

            if inspect.isgeneratorfunction(fn):
                @functools.wraps(fn)
                def gen_handler(*args, **kwargs):
                    call = begin(args, kwargs)
                    args, kwargs = pickle.loads(pickle.dumps((args, kwargs)))  # into the forked worker
                    for item in fn(*args, **kwargs):
                        call.yields += 1
                        yield pickle.loads(pickle.dumps(item))  # each yield back, as it comes
                return gen_handler

            @functools.wraps(fn)
            def handler(*args, **kwargs):
                begin(args, kwargs)
                args, kwargs = pickle.loads(pickle.dumps((args, kwargs)))
                return pickle.loads(pickle.dumps(fn(*args, **kwargs)))
            return handler
        return wrap(task) if callable(task) else wrap

    return GPU


@pytest.fixture(scope="module")
def zerogpu_server(tmp_path_factory) -> Iterator[tuple[RunningApp, list[Call]]]:
    """The app with its ZeroGPU paths on (Settings.zerogpu), every decorated call probed."""
    from playground.ui import experiments_view, gpu_calls
    from playground.ui.app import build_app, launch_options, prepare_server
    from tests.ui.test_generate_tab import _save_gpt

    calls: list[Call] = []
    gpu = probe_gpu(calls)
    patch = pytest.MonkeyPatch()
    for module, name, duration in ((gpu_calls, "train_events", gpu_calls._train_gpu_s),
                                   (gpu_calls, "generate_events", gpu_calls._generate_gpu_s),
                                   (gpu_calls, "analyze", gpu_calls._analysis_gpu_s),
                                   (experiments_view, "run_experiment", experiments_view._experiment_gpu_s)):
        patch.setattr(module, name, gpu(duration=duration)(getattr(module, name)))
    root, library = tmp_path_factory.mktemp("zgpu-ws"), tmp_path_factory.mktemp("zgpu-lib")
    running = RunningApp("", root, library)
    _save_gpt(running.library, "tiny-gpt")
    from playground.config import Preset
    from playground.training.engine import run_training

    run_training(Preset("exp-gpt", "gpt", model={"block_size": 12, "n_layer": 1, "n_head": 2, "d_model": 16},
                        data={"corpus": "python-docs", "tokenizer": "char"},
                        train={"max_steps": 2, "batch_size": 4, "eval_interval": 2, "eval_iters": 1, "warmup_steps": 1,
                               "save_optimizer": False, "preview": False}),
                 running.library, "exp-gpt", device="cpu")  # an experiment's examples come from a built-in corpus
    settings = dataclasses.replace(make_settings(root, device="cpu", demo=True, app=True, library=[library]),
                                   zerogpu=True)
    prepare_server(settings)
    app = build_app(settings)
    port = free_port()
    app.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, **launch_options())
    try:
        yield dataclasses.replace(running, url=f"http://127.0.0.1:{port}/"), calls
    finally:
        app.close()
        patch.undo()


def _client(url: str):
    from gradio_client import Client

    return Client(url, verbose=False, httpx_kwargs={"timeout": 120})


def _assert_in_request(call: Call, client) -> None:
    """Inside a gradio request of that client, in the server's own process (no child of ours)."""
    assert call.request is not None, f"{call.name} was called outside a gradio request"
    assert call.request.session_hash == client.session_hash
    assert call.pid == os.getpid()
    assert call.thread != threading.main_thread().name


@pytest.mark.slow
def test_training_is_a_decorated_generator_called_in_the_request_and_streams(zerogpu_server):
    running, calls = zerogpu_server
    client = _client(running.url)
    name = f"z-{uuid.uuid4().hex[:6]}"
    job = client.submit("nanogpt-cpu-tiny", TINY_TOML, name, True, 0, api_name="/train_start")
    final = job.result(timeout=600)[0]
    # The GPU time asked for is a GPU's estimate; on this CPU the run may reach its own deadline
    # (SAVE_MARGIN_S before that time ends) first, and then stops and saves where it is.
    assert 'data-state="done"' in final or 'data-state="stopped"' in final
    (call,) = [c for c in calls if c.name == "train_events"]
    _assert_in_request(call, client)
    assert 0 < call.duration <= zerogpu.ANON_QUOTA_S  # an API session is anonymous
    assert call.yields >= 4  # start, steps, evaluations, done: each crossed back on its own
    assert len(job.outputs()) >= 2  # and reached the client before the run ended
    assert running.space_of(client).get("models", name).meta["step"] >= 1  # saved on the way out


@pytest.mark.slow
def test_generation_and_analysis_are_decorated_calls_in_the_request(zerogpu_server):
    running, calls = zerogpu_server
    client = _client(running.url)
    client.predict(None, api_name="/refresh_generate_models")
    out = client.predict("tiny-gpt", "the", 0.0, 0, 1.0, 0.0, 1.0, 0.0, 0.0, 8, 1, 1, "", 1, 0.0,
                         api_name="/generate_text")
    assert out[0].count("data-index=") == 8
    client.predict(None, api_name="/refresh_analyze_models")
    client.predict("tiny-gpt", api_name="/analyze_checkpoint")
    summary = client.predict("tiny-gpt", "the quick", None, None, "3", "", ["attention", "saliency"], "", "", 20,
                             False, None, api_name="/analyze")[0]
    assert "position 3" in summary
    for name in ("generate_events", "analyze"):
        (call,) = [c for c in calls if c.name == name]
        _assert_in_request(call, client)
        assert 0 < call.duration <= zerogpu.ANON_QUOTA_S


@pytest.mark.slow
def test_an_experiment_is_a_decorated_generator_called_in_the_request(zerogpu_server):
    running, calls = zerogpu_server
    client = _client(running.url)
    client.predict(None, api_name="/refresh_analyze_models")
    out = client.predict("exp-gpt", "permutation", 2, 0, None, "all", "default", 5, 5, 2, ["attention"], ["loo"], [],
                         "attention", "1", None, api_name="/experiments_run")
    assert "Done" in out[0]
    (call,) = [c for c in calls if c.name == "run_experiment"]
    _assert_in_request(call, client)
    assert call.duration == zerogpu.experiment_seconds(2, zerogpu.ANON_QUOTA_S) and call.yields >= 2


def test_every_presets_duration_stays_within_the_quotas():
    from playground.config import list_presets
    from playground.ui.gpu_calls import planned_training

    for name in list_presets():
        for key, quota in (("b-" + "0" * 24, zerogpu.ANON_QUOTA_S), ("u-" + "0" * 24, zerogpu.SIGNED_IN_QUOTA_S)):
            plan = planned_training(load_preset(name), DEMO_CAPS.max_train_steps, key)
            assert zerogpu.MIN_CALL_S <= plan.seconds <= quota, (name, plan)
            assert plan.quota == quota and 1 <= plan.fits_steps <= plan.steps
            assert str(plan.seconds) in plan.note()


def test_a_plan_longer_than_the_quota_stops_early_and_says_so():
    from playground.ui.gpu_calls import planned_training

    meta = {"step": 10, "train": {"max_steps": 1000}, "run": {"elapsed_s": 5.0}}  # 0.5 s a step, measured
    plan = planned_training(None, 1000, "s-" + "0" * 24, resume_meta=meta)
    assert plan.measured and plan.steps == 990 and plan.seconds == zerogpu.ANON_QUOTA_S
    assert plan.fits_steps == int((120 - zerogpu.STARTUP_S - zerogpu.SAVE_MARGIN_S) / 0.5)
    assert "Resume continues" in plan.note() and "sign in" in plan.note()


def test_quota_follows_the_login():
    assert zerogpu.quota_s("u-" + "1" * 24) == 300 and zerogpu.quota_s("b-" + "1" * 24) == 120
    assert zerogpu.quota_s(None) == 120


def test_without_spaces_the_decorator_returns_the_function(monkeypatch):
    monkeypatch.setitem(sys.modules, "spaces", None)  # `import spaces` raises ImportError
    assert zerogpu.spaces_module() is None

    def fn(x: int) -> int:
        return x + 1

    assert zerogpu.gpu(duration=30)(fn) is fn


def test_the_real_spaces_gpu_off_zerogpu_is_the_identity_and_takes_a_callable_duration():
    import spaces

    assert zerogpu.spaces_module() is spaces

    def gen(n: int):
        yield from range(n)

    decorated = zerogpu.gpu(duration=lambda n: n)(gen)
    assert decorated is gen and inspect.isgeneratorfunction(decorated)  # streaming unchanged


def test_bad_duration_is_refused():
    with pytest.raises(ValueError, match="positive number of seconds"):
        zerogpu.gpu(duration=0)


def test_engines_are_not_decorated_only_the_ui_calls():
    """An engine called from a child process or the CLI has no request: only playground.ui's calls
    (made from a handler's thread) are decorated."""
    from playground.analysis.explain import per_input
    from playground.training import engine

    assert "@gpu(" not in inspect.getsource(engine) and "@gpu(" not in inspect.getsource(per_input)
    from playground.ui import experiments_view, gpu_calls

    src = inspect.getsource(gpu_calls) + inspect.getsource(experiments_view)
    assert src.count("@gpu(duration=_") == 4  # train, generate, analyze, experiment: durations are callables


def test_spaces_reads_the_request_from_gradios_context():
    """The accessor the probe uses is the one spaces' wrapper reads at each call (its module
    spaces/zero/wrappers.py imports only on ZeroGPU, so its text is read)."""
    from pathlib import Path

    import spaces
    from gradio.context import LocalContext
    from spaces.utils import gradio_request_var

    assert gradio_request_var() is LocalContext.request
    wrappers = (Path(spaces.__file__).parent / "zero" / "wrappers.py").read_text(encoding="utf-8")
    assert "request_var = gradio_request_var()" in wrappers and "request = request_var.get(None)" in wrappers
    assert "static_duration(duration, *args, **kwargs)" in wrappers  # a callable gets the call's arguments
    assert "worker.arg_queue.put(((args, kwargs)" in wrappers  # the arguments are pickled into the worker
