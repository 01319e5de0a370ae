"""Per-user spaces: own entries, read-only shelves and shared area, keys, live-job claims, recovery."""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
from tokenizers import Tokenizer, models

from playground.errors import InvalidNameError, NotFoundError, PlaygroundError
from playground.spaces import LiveJobs, ReadOnlyError, Spaces, new_browser_token, user_key
from playground.workspace import Workspace


def _tok_json() -> str:
    return Tokenizer(models.WordLevel({"a": 0, "<unk>": 1}, unk_token="<unk>")).to_str()


@pytest.fixture
def spaces(tmp_path: Path) -> Spaces:
    library = Workspace(tmp_path / "library")
    library.save_tokenizer("shipped-tok", _tok_json(), {"vocab_size": 2})
    return Spaces(tmp_path / "root", [tmp_path / "library"], scratch_dir_base=tmp_path / "scratch")


def _space(spaces: Spaces, who: str):
    return spaces.space(user_key(username=who), session_hash=f"session-{who}")


def test_keys_are_hashes_and_bad_tokens_fall_back_to_the_session():
    token = new_browser_token()
    assert user_key(username="alice").startswith("u-") and "alice" not in user_key(username="alice")
    assert user_key(browser_token=token).startswith("b-")
    assert user_key(browser_token=token) == user_key(browser_token=token)  # stable across reloads
    assert user_key(browser_token="../../etc", session_hash="abc") == user_key(session_hash="abc")
    assert user_key(username="alice", browser_token=token) == user_key(username="alice")  # a login wins
    with pytest.raises(PlaygroundError):
        user_key()


def test_users_see_their_own_entries_and_the_library_but_not_each_other(spaces):
    alice, bob = _space(spaces, "alice"), _space(spaces, "bob")
    alice.save_tokenizer("mine", _tok_json(), {"vocab_size": 2})
    assert alice.names("tokenizers") == ["mine", "shipped-tok"]
    assert bob.names("tokenizers") == ["shipped-tok"]
    assert alice.origin("tokenizers", "mine") == "own" and alice.origin("tokenizers", "shipped-tok") == "library"
    with pytest.raises(NotFoundError):
        bob.get("tokenizers", "mine")
    assert alice.load_tokenizer("shipped-tok").get_vocab_size() == 2


def test_library_entries_are_read_only(spaces):
    alice = _space(spaces, "alice")
    with pytest.raises(ReadOnlyError, match="read-only"):
        alice.save_tokenizer("shipped-tok", _tok_json(), {}, overwrite=True)
    with pytest.raises(ReadOnlyError):
        with alice.writing("tokenizers", "shipped-tok", overwrite=True):
            pass
    with pytest.raises(ReadOnlyError):
        alice.delete("tokenizers", "shipped-tok")
    assert Workspace(spaces.shelves[0].root).exists("tokenizers", "shipped-tok")


def test_names_are_checked_before_any_path_is_made(spaces):
    alice = _space(spaces, "alice")
    for bad in ("../x", "/etc/passwd", "a/b", ".hidden", ""):
        with pytest.raises(InvalidNameError):
            alice.get("tokenizers", bad)


def test_share_lets_others_read_but_not_change(spaces):
    alice, bob = _space(spaces, "alice"), _space(spaces, "bob")
    alice.save_tokenizer("handout", _tok_json(), {"vocab_size": 2})
    alice.share("tokenizers", "handout")
    assert "handout" in bob.names("tokenizers") and bob.origin("tokenizers", "handout") == "shared"
    with pytest.raises(ReadOnlyError, match="shared"):
        bob.save_tokenizer("handout", _tok_json(), {}, overwrite=True)
    bob.save_tokenizer("bobs", _tok_json(), {})
    with pytest.raises(ReadOnlyError, match="already shared"):
        bob.share("tokenizers", "bobs", as_name="handout")
    with pytest.raises(NotFoundError, match="Only your own"):
        bob.share("tokenizers", "handout")  # bob cannot re-share what he does not own
    alice.share("tokenizers", "handout")  # the owner may update the shared copy
    with pytest.raises(ReadOnlyError, match="library"):
        alice.share("tokenizers", "handout", as_name="shipped-tok")


def test_live_jobs_limit_per_user_and_reserve_names():
    jobs = LiveJobs()
    with jobs.claim("u-a", "train", "run1", limit=1):
        with pytest.raises(PlaygroundError, match="already running"):
            with jobs.claim("u-a", "train", "run1", limit=5):
                pass
        with pytest.raises(PlaygroundError, match="1 per user"):
            with jobs.claim("u-a", "train", "run2", limit=1):
                pass
        with jobs.claim("u-b", "train", "run1", limit=1):  # another user, same name: their own space
            assert jobs.count("train") == 2
    assert jobs.count() == 0


def test_a_stop_request_reaches_only_that_users_live_job():
    jobs = LiveJobs()
    assert not jobs.request_stop("u-a", "train", "run1")  # nothing live: nothing to stop
    with jobs.claim("u-a", "train", "run1", limit=2) as mine, jobs.claim("u-b", "train", "run1", limit=2) as theirs:
        assert not jobs.request_stop("u-a", "train", "other")
        assert jobs.request_stop("u-a", "train", "run1")
        assert mine.is_set() and not theirs.is_set()  # another user's run of the same name runs on
    assert not jobs.request_stop("u-a", "train", "run1")  # released with the claim
    with jobs.claim("u-a", "train", "run1", limit=1) as again:
        assert not again.is_set()  # a new run under the old name starts unstopped


def test_live_job_claims_race_safely():
    jobs, won, lost = LiveJobs(), [], []
    barrier = threading.Barrier(8)

    def start():
        barrier.wait()
        try:
            with jobs.claim("u-a", "train", "same", limit=8):
                won.append(1)
                time.sleep(0.2)
        except PlaygroundError:
            lost.append(1)

    threads = [threading.Thread(target=start) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(won) == 1 and len(lost) == 7


def test_a_reader_finds_the_old_entry_in_the_replace_window(tmp_path):
    ws = Workspace(tmp_path)
    ws.save_tokenizer("t", _tok_json(), {"vocab_size": 2, "version": "old"})
    path = ws.path("tokenizers", "t")
    old = path.with_name(".old-t-0123abcd")
    os.replace(path, old)  # a kill here used to make the entry vanish
    assert ws.exists("tokenizers", "t") and ws.names("tokenizers") == ["t"]
    assert ws.get("tokenizers", "t").meta["version"] == "old"
    assert ws.recover("tokenizers") == (0, 1)
    assert path.is_dir() and not old.exists() and ws.get("tokenizers", "t").path == path


def test_recover_drops_temp_folders_and_stale_old_copies(tmp_path):
    ws = Workspace(tmp_path)
    ws.save_tokenizer("t", _tok_json(), {})
    folder = ws.dir("tokenizers")
    (folder / ".tmp-t-abc").mkdir()
    (folder / ".trash-t-1234abcd").mkdir()
    stale = folder / ".old-t-89abcdef"
    stale.mkdir()
    (stale / "tokenizer.json").write_text(_tok_json())
    assert ws.recover("tokenizers") == (3, 0)
    assert sorted(p.name for p in folder.iterdir()) == ["t"]


def test_replace_keeps_the_entry_readable_under_concurrent_readers(tmp_path):
    ws = Workspace(tmp_path)
    ws.save_tokenizer("t", _tok_json(), {"n": 0})
    misses, stop = [], threading.Event()

    def read():
        while not stop.is_set():
            if not ws.exists("tokenizers", "t"):
                misses.append(1)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for n in range(1, 40):
            ws.save_tokenizer("t", _tok_json(), {"n": n}, overwrite=True)
    finally:
        stop.set()
        reader.join()
    assert misses == [] and ws.get("tokenizers", "t").meta["n"] == 39


def test_clean_on_start_recovers_user_spaces_and_drops_stale_session_spaces(spaces, tmp_path):
    alice = _space(spaces, "alice")
    alice.save_tokenizer("t", _tok_json(), {})
    (alice.own.dir("tokenizers") / ".tmp-t-zzz").mkdir()
    ghost = spaces.users_dir / user_key(session_hash="gone")
    (ghost / "tokenizers").mkdir(parents=True)
    old = time.time() - 30 * 86400
    os.utime(ghost / "tokenizers", (old, old))
    os.utime(ghost, (old, old))
    dead = spaces.scratch_base.parent / "playground-sessions-999999999"
    dead.mkdir(parents=True)
    counts = spaces.clean_on_start()
    assert counts["temp"] == 1 and counts["stale_spaces"] == 1
    assert not ghost.exists() and alice.exists("tokenizers", "t")


def test_session_scratch_is_removed_when_the_session_ends(spaces):
    alice = _space(spaces, "alice")
    folder = alice.scratch_dir("x-")
    (folder / "f.csv").write_text("a")
    spaces.end_session("session-alice")
    assert not folder.exists()


def test_idle_anonymous_spaces_expire_but_logins_stay(spaces):
    import time as _time

    from playground.spaces import IDLE_BROWSER_SPACE_S

    keys = [user_key(username="alice"), user_key(browser_token=new_browser_token()), user_key(session_hash="api")]
    for key in keys:
        (spaces.users_dir / key / "models").mkdir(parents=True)
    browser_key = keys[1]
    old = _time.time() - IDLE_BROWSER_SPACE_S - 3600
    for path in (spaces.users_dir / browser_key / "models", spaces.users_dir / browser_key):
        os.utime(path, (old, old))
    assert spaces.remove_idle_spaces() == 1
    assert sorted(p.name for p in spaces.users_dir.iterdir()) == sorted([keys[0], keys[2]])
    spaces._last_sweep = _time.time()
    assert spaces.sweep_idle_spaces(every_s=3600) == 0  # within the hour: no second walk of the disk


def test_a_space_holds_at_most_max_entries_of_a_kind(tmp_path):
    capped = Spaces(tmp_path / "root", max_entries=2, scratch_dir_base=tmp_path / "scratch")
    alice = capped.space(user_key(username="alice"))
    alice.save_tokenizer("a", _tok_json(), {})
    alice.save_tokenizer("b", _tok_json(), {})
    with pytest.raises(PlaygroundError, match="holds 2 tokenizers"):
        alice.save_tokenizer("c", _tok_json(), {})
    alice.save_tokenizer("b", _tok_json(), {"v": 2}, overwrite=True)  # replacing one of yours is fine
    alice.delete("tokenizers", "a")
    alice.save_tokenizer("c", _tok_json(), {})
    assert alice.names("tokenizers") == ["b", "c"]


def test_racing_shares_of_one_name_leave_one_owner_and_one_refusal(spaces):
    alice, bob = _space(spaces, "alice"), _space(spaces, "bob")
    for user in (alice, bob):
        user.save_tokenizer("mine", _tok_json(), {"who": user.key})
    barrier, results = threading.Barrier(2), {}

    def share(user):
        barrier.wait()
        try:
            user.share("tokenizers", "mine", as_name="pub")
            results[user.key] = "shared"
        except PlaygroundError as exc:
            results[user.key] = str(exc)

    threads = [threading.Thread(target=share, args=(u,)) for u in (alice, bob)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winner = next(k for k, v in results.items() if v == "shared")
    loser = next(k for k, v in results.items() if v != "shared")
    assert "already shared" in results[loser]
    assert spaces.shared.get("tokenizers", "pub").meta["who"] == winner


def test_owners_can_unshare_and_shares_are_capped(tmp_path):
    capped = Spaces(tmp_path / "root", max_entries=1, scratch_dir_base=tmp_path / "scratch")
    alice, bob = (capped.space(user_key(username=n)) for n in ("alice", "bob"))
    alice.save_tokenizer("t", _tok_json(), {})
    alice.share("tokenizers", "t", as_name="one")
    with pytest.raises(PlaygroundError, match="already shared 1"):
        alice.share("tokenizers", "t", as_name="two")
    with pytest.raises(ReadOnlyError):
        bob.delete("tokenizers", "one")
    alice.delete("tokenizers", "one")  # her shared copy goes; her own entry stays
    assert "one" not in bob.names("tokenizers") and alice.exists("tokenizers", "t")


def test_experiments_on_a_library_bundle_never_open_its_recorded_path(tmp_path):
    """An instructor trained a bundle from a CLI path; a user's experiment must not read that file."""
    from playground.analysis.experiments.data import prepare_data
    from playground.bundle import load_bundle
    from playground.config import Preset
    from playground.training.engine import run_training

    secret = tmp_path / "private.txt"
    secret.write_text("the instructor's private notes. " * 200, encoding="utf-8")
    library = Workspace(tmp_path / "library")
    preset = Preset("tiny", "gpt", model={"block_size": 8, "n_layer": 1, "n_head": 1, "d_model": 8},
                    data={"corpus": str(secret), "tokenizer": "char"},
                    train={"max_steps": 2, "batch_size": 2, "eval_interval": 2, "eval_iters": 1})
    run_training(preset, library, "from-a-path", device="cpu")
    student = Spaces(tmp_path / "root", [library.root], scratch_dir_base=tmp_path / "s").space(user_key(username="s"))
    bundle = load_bundle("from-a-path", student)
    with pytest.raises(PlaygroundError, match="Paths are not accepted"):
        prepare_data(bundle, student)
    prepare_data(bundle, library)  # the CLI's workspace may (the instructor owns the machine)
