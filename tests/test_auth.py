"""playground.auth: credentials from flags and files, and the rate-limited login guard."""
from __future__ import annotations

import asyncio
import threading

import pytest

from playground.auth import (
    CLIENT,
    AuthConfigError,
    LoginGuard,
    hash_password,
    merge_credentials,
    parse_credential,
    read_auth_file,
    secret_matches,
)


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_parse_credential_and_hashes():
    assert parse_credential("alice:pw") == ("alice", "pw")
    assert parse_credential("c:d:e") == ("c", "d:e")
    hashed = hash_password("secret")
    assert parse_credential(f"bob:{hashed}") == ("bob", hashed)
    assert secret_matches("secret", hashed) and not secret_matches("Secret", hashed)
    assert secret_matches("pw", "pw") and not secret_matches("pw2", "pw")
    for bad, why in (("nocolon", "no colon"), (":pw", "empty user"), ("u:", "empty password"),
                     ("u:sha256:abc", "64 hex digits"), ("a b:pw", "white space")):
        with pytest.raises(AuthConfigError, match=why):
            parse_credential(bad)


def test_auth_file_lines_comments_and_errors(tmp_path):
    good = tmp_path / "users.txt"
    good.write_text(f"# workshop users\n\nalice:wonderland\n  bob:{hash_password('builder')}  \n", encoding="utf-8")
    assert read_auth_file(good) == [("alice", "wonderland"), ("bob", hash_password("builder"))]

    bad = tmp_path / "bad.txt"
    bad.write_text("alice:ok\n# fine\ncarol-without-password\n", encoding="utf-8")
    with pytest.raises(AuthConfigError, match=r"bad.txt, line 3") as info:
        read_auth_file(bad)
    assert "ok" not in str(info.value).replace("bad.txt", "")  # no password in the message

    secret = tmp_path / "secret.txt"
    secret.write_text("dave:topsecret:sha256:zz\n", encoding="utf-8")
    assert read_auth_file(secret) == [("dave", "topsecret:sha256:zz")]  # a password may contain colons

    with pytest.raises(AuthConfigError, match="no such file"):
        read_auth_file(tmp_path / "missing.txt")
    empty = tmp_path / "empty.txt"
    empty.write_text("# nobody\n", encoding="utf-8")
    with pytest.raises(AuthConfigError, match="no user:password lines"):
        read_auth_file(empty)
    with pytest.raises(AuthConfigError, match="more than once"):
        merge_credentials([("a", "1")], [("a", "2")])


def test_guard_locks_a_user_after_n_failures_then_cools_down():
    clock = Clock()
    guard = LoginGuard({"alice": "pw", "bob": hash_password("b")}, max_failures=3, window_s=60, cooldown_s=120,
                       global_per_minute=100, clock=clock)
    assert guard("alice", "pw") and guard("bob", "b")
    assert not guard("alice", "x") and not guard("alice", "y")
    assert guard("alice", "pw")  # a success clears the count
    for _ in range(3):
        assert not guard("alice", "wrong")
    assert guard.locked("alice")
    assert not guard("alice", "pw")  # locked: even the right password is refused
    assert guard("bob", "b")  # other users are not affected
    clock.t += 119
    assert not guard("alice", "pw")
    clock.t += 2
    assert guard("alice", "pw")


def test_guard_failures_outside_the_window_do_not_count():
    clock = Clock()
    guard = LoginGuard({"alice": "pw"}, max_failures=3, window_s=60, cooldown_s=120, clock=clock)
    for _ in range(2):
        assert not guard("alice", "bad")
    clock.t += 61
    assert not guard("alice", "bad")
    assert not guard.locked("alice")
    assert guard("alice", "pw")


def _from(address: str, guard: LoginGuard, user: str, password: str) -> bool:
    token = CLIENT.set(address)
    try:
        return guard(user, password)
    finally:
        CLIENT.reset(token)


def test_guard_limits_are_per_address_so_a_guesser_locks_nobody_else():
    clock = Clock()
    guard = LoginGuard({"alice": "pw"}, max_failures=5, client_per_minute=30, clock=clock)
    for _ in range(5):
        assert not _from("6.6.6.6", guard, "alice", "guess")
    assert not _from("6.6.6.6", guard, "alice", "pw")  # the guesser's address is locked for alice...
    assert _from("10.0.0.7", guard, "alice", "pw")  # ...alice at her own address is not
    for i in range(30):
        _from("6.6.6.7", guard, f"guess{i}", "x")  # guessing across names
    assert not _from("6.6.6.7", guard, "alice", "pw")  # that address is refused for the minute
    assert _from("10.0.0.8", guard, "alice", "pw")
    clock.t += 61
    assert _from("6.6.6.7", guard, "alice", "pw")


def test_guard_global_ceiling_slows_but_never_refuses():
    clock = Clock()
    guard = LoginGuard({"alice": "pw"}, max_failures=100, client_per_minute=100, global_per_minute=5, slow_s=0.0,
                       clock=clock)
    for i in range(5):
        assert not _from(f"6.6.6.{i}", guard, f"guess{i}", "x")  # unknown users count too
    assert guard.slowing()
    assert asyncio.run(guard.login("alice", "pw"))  # slowed, still let in
    clock.t += 61
    assert not guard.slowing()


def test_guard_is_thread_safe():
    guard = LoginGuard({"alice": "pw"}, max_failures=50, window_s=600, cooldown_s=600, global_per_minute=10_000)
    barrier = threading.Barrier(8)

    def hammer() -> None:
        barrier.wait()
        for _ in range(25):
            guard("alice", "wrong")

    threads = [threading.Thread(target=hammer) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert guard.locked("alice") and not guard("alice", "pw")


def test_guard_refuses_bad_settings():
    with pytest.raises(AuthConfigError, match="no users"):
        LoginGuard({})
    with pytest.raises(AuthConfigError, match="positive"):
        LoginGuard({"a": "b"}, max_failures=0)
