"""What one hostile visitor could do to the others on a demo server, closed (issue 38, item 8),
each on the real app over loopback: a huge layer count is refused before it reaches the heavy
lane, which stays free; the next-token chart refuses an over-cap prompt and has a lane of its own;
uploads stop at the user's space cap; a run stops at the demo time cap; a closed session's
training is asked to stop."""
from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest

from tests.conftest import RunningApp, serve_app
from tests.ui.test_lanes import LONG_TOML, _client, _wait_running

pytestmark = pytest.mark.slow

TIME_CAP_S = 20.0
SEQ2SEQ_TOML = """family = "rnn_seq2seq"
[model]
cell = "lstm"
attention = "additive"
emb_dim = 16
hidden = 16
n_layers = {n_layers}
bidirectional = true
[data]
pairs = "copy"
n = 200
[train]
max_steps = 2
batch_size = 8
eval_interval = 2
"""


@pytest.fixture(scope="module")
def demo_server(tmp_path_factory) -> Iterator[RunningApp]:
    """A demo server with one heavy slot, a small space cap and a short time cap per run."""
    from tests.ui.test_generate_tab import _save_gpt

    with serve_app(tmp_path_factory, "hostile", demo=True, prepare_library=lambda ws: _save_gpt(ws, "tiny-gpt"),
                   heavy_slots=1, max_space_mb=1.0, max_job_s=TIME_CAP_S,
                   max_train_steps=20_000) as running:  # LONG_TOML's steps stand: a run outlasts the time cap
        yield running


def test_a_huge_layer_count_is_refused_before_the_heavy_lane_which_stays_free(demo_server):
    attacker = _client(demo_server.url)
    attack = attacker.submit("seq2seq-dates-bahdanau", SEQ2SEQ_TOML.format(n_layers=10**18), "attack", True, 0,
                             api_name="/train_start")
    # On a loaded machine the refusal takes milliseconds of work; the bound only catches a hang
    # (a per-layer count of 10**18 layers never ends, and held the only heavy slot for good).
    with pytest.raises(Exception, match="parameters"):
        attack.result(timeout=60)
    after = _client(demo_server.url).submit("seq2seq-dates-bahdanau", SEQ2SEQ_TOML.format(n_layers=1), f"ok-{uuid.uuid4().hex[:6]}",
                                            True, 0, api_name="/train_start")
    final = after.result(timeout=300)[0]  # the heavy lane took the next job
    assert 'data-state="done"' in final or 'data-state="stopped"' in final


def test_the_refusal_comes_before_any_child_process(demo_server):
    """The refusal is the validator's: no training child is started for it (a child would take
    seconds just to import torch)."""
    import multiprocessing

    before = {p.pid for p in multiprocessing.active_children()}
    with pytest.raises(Exception, match="parameters"):
        _client(demo_server.url).predict("seq2seq-dates-bahdanau", SEQ2SEQ_TOML.format(n_layers=10**9), "attack2", True, 0,
                                         api_name="/train_start")
    assert not [p for p in multiprocessing.active_children() if p.pid not in before and "train" in p.name]


def test_the_next_token_chart_refuses_an_over_cap_prompt_in_a_lane_of_its_own(demo_server):
    client = _client(demo_server.url)
    client.predict(None, api_name="/refresh_generate_models")
    ok = client.predict("tiny-gpt", "the", 0.8, 4, 0.9, 0.0, None, api_name="/generate_distribution")
    assert ok[0] is not None and ok[0]["type"] == "altair"
    huge = "the " * 2000  # 8,000 characters; the demo takes 5,000
    refused = client.predict("tiny-gpt", huge, 0.8, 4, 0.9, 0.0, None, api_name="/generate_distribution")
    assert refused[0] is None


def test_the_next_token_chart_has_a_lane_of_its_own(tmp_path):
    from playground.settings import make_settings
    from playground.ui.app import build_app

    app = build_app(make_settings(tmp_path / "ws", device="cpu", demo=True, app=True))
    fns = {f.api_name: f for f in app.fns.values()}
    dist, gen = fns["generate_distribution"], fns["generate_text"]
    light = fns["generate_classify"]
    assert dist.concurrency_id not in (gen.concurrency_id, light.concurrency_id) and dist.concurrency_limit == 1


def test_uploads_stop_at_the_users_space_cap(demo_server, tmp_path):
    from gradio_client import handle_file

    client = _client(demo_server.url)
    toml = 'family = "gpt"\n[model]\nn_layer = 1\n[data]\ncorpus = "python-docs"\n[train]\nmax_steps = 2\n'
    stored = 0
    with pytest.raises(Exception, match="MB per user"):
        for i in range(6):  # 6 x 0.3 MB against a 1 MB space
            path = tmp_path / f"part{i}.txt"
            path.write_text(f"{i} " + "abc " * 75_000, encoding="utf-8")
            client.predict(toml, handle_file(str(path)), api_name="/train_upload")
            stored += 1
    assert stored == 3
    uploads = demo_server.space_of(client).root / "uploads"
    assert sum(p.stat().st_size for p in uploads.iterdir()) <= 1_000_000


def test_a_demo_run_stops_by_itself_at_the_time_cap(demo_server):
    client = _client(demo_server.url)
    name = f"long-{uuid.uuid4().hex[:6]}"
    job = client.submit("nanogpt-cpu-tiny", LONG_TOML, name, True, 0, api_name="/train_start")
    final = job.result(timeout=300)[0]  # 20,000 steps would take far longer than the cap
    assert 'data-state="stopped"' in final and "stops a run after" in final
    space = demo_server.space_of(client)
    if space.exists("models", name):  # a run stopped before its first step keeps nothing
        meta = space.get("models", name).meta
        assert meta["run"]["status"] == "stopped" and meta["step"] < 20_000


def test_a_closed_session_asks_its_training_to_stop(demo_server):
    """The unload of a session (its heartbeat closes) stops the trainings it started: they save."""
    client = _client(demo_server.url)
    name = f"gone-{uuid.uuid4().hex[:6]}"
    space = demo_server.space_of(client)
    job = client.submit("nanogpt-cpu-tiny", LONG_TOML, name, True, 0, api_name="/train_start")
    _wait_running(job)
    started = time.time()
    client.close()  # the owner goes: the heartbeat ends, gradio runs the app's unload
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        meta = space.get("models", name).meta if space.exists("models", name) else {}
        if (meta.get("run") or {}).get("status") == "stopped":
            break
        time.sleep(0.5)
    assert (meta.get("run") or {}).get("status") == "stopped"
    assert float(meta["run"].get("saved_at") or 0) >= started - 60
