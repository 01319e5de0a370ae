"""The pure parts of issue 38's closed ways in: closed-form seq2seq sizes, generated pairs in the
memory estimate, a stuck job ended after its grace, a closed session's jobs stopped, anonymous
uploads swept sooner, per-user upload room."""
from __future__ import annotations

import multiprocessing
import os
import time

import pytest

from playground.child import JobCancelled, iter_in_child
from playground.data.policy import DataPolicy
from playground.errors import DataError, TooBigError
from playground.families.seq2seq.sizes import _rnn
from playground.settings import DEMO_CAPS, FULL_CAPS
from playground.spaces import LiveJobs, Spaces
from playground.training.spec import resolve_run


def _rnn_by_layer(cell: str, n_in: int, hidden: int, layers: int, directions: int) -> int:
    """The per-layer count the closed form replaced (the reference)."""
    gates = 3 if cell == "gru" else 4
    return sum(directions * gates * ((n_in if layer == 0 else hidden * directions) * hidden + hidden * hidden
                                     + 2 * hidden) for layer in range(layers))


@pytest.mark.parametrize("cell", ["gru", "lstm"])
@pytest.mark.parametrize("directions", [1, 2])
def test_the_closed_form_rnn_count_equals_the_per_layer_count(cell, directions):
    for n_in, hidden, layers in ((1, 1, 1), (7, 5, 3), (64, 128, 4), (32, 64, 0)):
        assert _rnn(cell, n_in, hidden, layers, directions) == _rnn_by_layer(cell, n_in, hidden, layers, directions)


def test_a_huge_layer_count_is_refused_at_once_with_a_suggestion():
    t0 = time.process_time()
    for layers in (10**9, 10**18):
        with pytest.raises(TooBigError, match="parameters"):
            resolve_run("seq2seq-dates-bahdanau", {"model.n_layers": layers, "train.max_steps": 10}, caps=DEMO_CAPS)
    assert time.process_time() - t0 < 1.0  # CPU time, not wall time: holds on a loaded machine


def test_generated_pairs_count_against_the_runs_memory():
    with pytest.raises(TooBigError, match=r"data.n = 2,000,000 generated pairs.*use data.n ≤"):
        resolve_run("seq2seq-dates-bahdanau", {"data.n": 2_000_000, "train.max_steps": 10},
                    caps=FULL_CAPS.__class__(**{**FULL_CAPS.__dict__, "max_train_memory_gb": 4.0}))
    resolve_run("seq2seq-dates-bahdanau", {"train.max_steps": 10}, caps=DEMO_CAPS)  # the preset itself fits


def stuck_job(stop=None):
    """A job that never looks at its stop request (a target for iter_in_child)."""
    yield "started"
    while True:
        time.sleep(0.05)


def test_a_job_past_its_time_cap_that_ignores_the_stop_is_ended():
    with pytest.raises(JobCancelled, match="did not stop within its grace"):
        for _ in iter_in_child("tests.test_hostile_limits:stuck_job", {}, stop_kw="stop", max_s=0.5, grace_s=0.5):
            pass  # ("started", unless the child took longer than the cap to start on a loaded machine)
    deadline = time.monotonic() + 30
    while multiprocessing.active_children() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [p for p in multiprocessing.active_children() if "stuck_job" in p.name]


def test_a_closed_session_stops_its_own_jobs_only():
    jobs = LiveJobs()
    with jobs.claim("u-a", "train", "one", 2, session="sess-a") as mine, \
            jobs.claim("u-a", "train", "two", 2, session="sess-b") as other:
        assert jobs.stop_session("sess-a") == 1
        assert mine.is_set() and not other.is_set()
    assert jobs.stop_session("sess-a") == 0  # released: nothing left to stop


def test_anonymous_uploads_go_after_a_day_their_spaces_stay(tmp_path):
    spaces = Spaces(tmp_path)
    old = time.time() - 2 * 86400
    made = {}
    for key in ("b-" + "1" * 24, "u-" + "2" * 24):
        uploads = spaces.users_dir / key / "uploads"
        uploads.mkdir(parents=True)
        (uploads / "corpus.txt").write_text("x")
        os.utime(uploads / "corpus.txt", (old, old))
        (spaces.users_dir / key / "models").mkdir()
        made[key] = uploads / "corpus.txt"
    assert spaces.remove_idle_spaces() == 0  # both spaces were touched recently (their folders)
    assert not made["b-" + "1" * 24].exists() and made["u-" + "2" * 24].exists()


def test_an_upload_past_the_users_room_is_refused(tmp_path):
    root = tmp_path / "users"
    mine = root / ("s-" + "3" * 24)
    (mine / "models" / "m").mkdir(parents=True)
    (mine / "models" / "m" / "model.safetensors").write_bytes(b"0" * 700)
    upload = tmp_path / "data.txt"
    upload.write_bytes(b"a" * 400)
    policy = DataPolicy(allow_paths=False, uploads=mine / "uploads", max_space_bytes=1000, spaces_root=root)
    with pytest.raises(DataError, match="models and tokenizers"):
        policy.store_upload(upload)  # 700 of models + 400 > 1000
    roomy = DataPolicy(allow_paths=False, uploads=mine / "uploads", max_space_bytes=2000, spaces_root=root,
                       max_spaces_bytes=1000)
    with pytest.raises(DataError, match="disk for users' files is full"):
        roomy.store_upload(upload)
    assert DataPolicy(allow_paths=False, uploads=mine / "uploads", max_space_bytes=2000).store_upload(upload) \
        == "upload:data.txt"
