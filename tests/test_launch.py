"""`python launch.py` as a user runs it: flags, serving, offline --share, SPACE_ID."""
from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from launch import build_auth, check_libraries, main, parse_args, parse_auth
from tests.conftest import free_port

REPO = Path(__file__).resolve().parent.parent


def test_help_documents_every_flag():
    out = subprocess.run([sys.executable, "launch.py", "--help"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    for flag in ("--host", "--port", "--share", "--auth", "--auth-file", "--library", "--device", "--workspace", "--demo"):
        assert flag in out
    assert "deep links" in out and "?tab=train&preset=" in out  # the epilog explains workshop use


def test_defaults_and_auth():
    args = parse_args([])
    assert (args.host, args.port, args.device, args.share, args.demo) == (None, 7860, "auto", False, False)
    assert parse_auth(["a:b", "c:d:e"]) == [("a", "b"), ("c", "d:e")]
    with pytest.raises(SystemExit):
        parse_auth(["nopassword"])


def test_space_id_turns_on_demo_mode(monkeypatch, tmp_path):
    from playground.settings import DEMO_CAPS, make_settings

    monkeypatch.setenv("SPACE_ID", "user/space")
    settings = make_settings(tmp_path)
    assert settings.demo and settings.caps == DEMO_CAPS


def _wait_for_http(url: str, proc: subprocess.Popen, limit_s: float = 90) -> float:
    start = time.monotonic()
    while time.monotonic() - start < limit_s:
        if proc.poll() is not None:
            raise AssertionError(f"launch.py exited early:\n{proc.stdout.read()}")
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                if resp.status == 200:
                    return time.monotonic() - start
        except OSError:
            time.sleep(0.2)
    raise AssertionError("app did not serve")


@pytest.mark.slow  # a real launch.py process (about 8 s)
def test_launch_serves_and_share_degrades_offline(tmp_path):
    port = free_port()
    env = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False"}
    env.pop("SPACE_ID", None)
    proc = subprocess.Popen(
        [sys.executable, "launch.py", "--port", str(port), "--workspace", str(tmp_path / "ws"), "--device", "cpu", "--share"],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        _wait_for_http(f"http://127.0.0.1:{port}/", proc)
        time.sleep(1.0)
        assert proc.poll() is None  # still serving after trying (and, offline, failing) to share
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=30)
    assert "Traceback" not in out
    assert "No public share link could be made" in out  # one clear line ...
    assert "Download this file" not in out  # ... instead of gradio's multi-line instructions


def test_library_and_auth_file_flags(tmp_path, capsys):
    lib = tmp_path / "lib"
    (lib / "models").mkdir(parents=True)
    args = parse_args(["--library", str(lib), "--library", str(tmp_path), "--auth-file", "u.txt"])
    assert args.library == [str(lib), str(tmp_path)] and args.auth_file == ["u.txt"]
    assert check_libraries([str(lib)]) == [lib]
    with pytest.raises(SystemExit, match="no such folder"):
        check_libraries([str(tmp_path / "missing")])
    with pytest.raises(SystemExit, match="--library .*missing: no such folder"):
        main(["--library", str(tmp_path / "missing"), "--workspace", str(tmp_path / "ws")])
    check_libraries([str(tmp_path)])  # neither tokenizers/ nor models/: a note, not an error
    assert "nothing will show" in capsys.readouterr().err

    users = tmp_path / "users.txt"
    users.write_text("# room 2\nalice:wonder\n\nbob:sha256:" + "ab" * 32 + "\n", encoding="utf-8")
    guard = build_auth(["carol:c"], [str(users)])
    assert guard("alice", "wonder") and guard("carol", "c") and not guard("bob", "wonder")
    assert build_auth([], []) is None
    users.write_text("alice:wonder\nbroken line\n", encoding="utf-8")
    with pytest.raises(SystemExit, match="line 2") as info:
        build_auth([], [str(users)])
    assert "wonder" not in str(info.value)
    users.write_text("alice:y\n", encoding="utf-8")
    with pytest.raises(SystemExit, match="more than once"):
        build_auth(["alice:x"], [str(users)])


def test_main_builds_app_settings_with_library(monkeypatch, tmp_path):
    """launch.main passes --library and app=True to make_settings, and the guard to serve."""
    import launch
    import playground.ui.app as app_module

    lib = tmp_path / "lib"
    (lib / "tokenizers").mkdir(parents=True)
    seen = {}
    monkeypatch.delenv("SPACE_ID", raising=False)
    monkeypatch.setattr(app_module, "build_app", lambda settings: seen.update(settings=settings))
    monkeypatch.setattr(launch, "serve", lambda app, host, port, share, auth, size: seen.update(host=host, auth=auth))
    main(["--library", str(lib), "--workspace", str(tmp_path / "ws"), "--device", "cpu", "--auth", "a:b"])
    settings = seen["settings"]
    assert settings.library[-1] == lib.resolve() and settings.user_paths is False
    assert seen["host"] == "127.0.0.1" and asyncio.run(seen["auth"]("a", "b")) and not asyncio.run(seen["auth"]("a", "c"))
    monkeypatch.setenv("SPACE_ID", "someone/space")
    main(["--workspace", str(tmp_path / "ws"), "--device", "cpu"])
    assert seen["host"] == "0.0.0.0" and seen["settings"].demo and seen["auth"] is None


@pytest.mark.slow  # a real launch.py process (about 8 s)
def test_launched_app_rate_limits_logins(tmp_path):
    """POST /login: a good login works, 5 bad ones lock the user at that address (even the good password
    is refused there), and neither that nor 40 failures from one address lock anyone out elsewhere."""
    import httpx

    users = tmp_path / "users.txt"
    users.write_text("# test\nalice:wonderland\n", encoding="utf-8")
    port = free_port()
    env = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False"}
    env.pop("SPACE_ID", None)
    proc = subprocess.Popen(
        [sys.executable, "launch.py", "--port", str(port), "--workspace", str(tmp_path / "ws"), "--device", "cpu",
         "--auth-file", str(users)],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_for_http(f"{base}/", proc)  # the login page
        with httpx.Client(base_url=base, timeout=10) as client:
            assert client.get("/config").status_code == 401  # nothing without a login
            ok = client.post("/login", data={"username": "alice", "password": "wonderland"})
            assert ok.status_code == 200 and ok.json() == {"success": True}
        with httpx.Client(base_url=base, timeout=10) as client:
            for _ in range(5):
                assert client.post("/login", data={"username": "alice", "password": "guess"}).status_code == 400
            refused = client.post("/login", data={"username": "alice", "password": "wonderland"})
            assert refused.status_code == 400  # locked for the cool-down, from this address
            elsewhere = {"x-forwarded-for": "10.1.2.3"}  # alice herself, through the proxy on this machine
            assert client.post("/login", data={"username": "alice", "password": "wonderland"},
                               headers=elsewhere).json() == {"success": True}  # a guesser cannot lock her out
            for i in range(40):  # one address guessing across many names: that address is refused...
                client.post("/login", data={"username": f"guess{i}", "password": "x"})
            assert client.post("/login", data={"username": "alice", "password": "wonderland"},
                               headers={"x-forwarded-for": "10.9.9.9"}).json() == {"success": True}  # ...nobody else
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=30)
    assert "Traceback" not in out
    assert "wonderland" not in out and "guess" not in out  # passwords never printed


def test_main_names_the_matplotlib_backend(monkeypatch, tmp_path):
    """A server says "agg" before gradio's first event would import pyplot to guess a backend; a
    backend the operator chose is kept."""
    import launch
    import playground.ui.app as app_module

    monkeypatch.delenv("SPACE_ID", raising=False)
    monkeypatch.setattr(app_module, "build_app", lambda settings: None)
    monkeypatch.setattr(launch, "serve", lambda *args: None)
    monkeypatch.delenv("MPLBACKEND", raising=False)
    main(["--workspace", str(tmp_path / "ws"), "--device", "cpu"])
    assert os.environ["MPLBACKEND"] == "agg"
    monkeypatch.setenv("MPLBACKEND", "svg")
    main(["--workspace", str(tmp_path / "ws"), "--device", "cpu"])
    assert os.environ["MPLBACKEND"] == "svg"
