"""A public server sends nothing home, keeps its secrets, says whether work persists, and keys a
signed-in visitor's space to their Hugging Face name (issue 38, items 3-6)."""
from __future__ import annotations

import os
from pathlib import Path

import gradio as gr
import httpx
import pytest

from launch import parse_args
from playground.errors import PlaygroundError
from playground.persistence import (
    WORKSPACE_ENV,
    check_writable,
    mount_point,
    persistence,
    workspace_setting,
)
from playground.settings import make_settings
from playground.spaces import Spaces, user_key
from tests.conftest import serve_app


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    with serve_app(tmp_path_factory, "public", demo=True) as running:
        yield running


def _get(url: str) -> str:
    return httpx.get(url, timeout=60, headers={"accept-encoding": "identity"}).text


def test_config_says_analytics_are_off(served):
    config = httpx.get(served.url + "config", timeout=60).json()
    assert config["analytics_enabled"] is False


def test_analytics_are_a_flag_off_by_default(tmp_path):
    assert parse_args([]).analytics is False and parse_args(["--analytics"]).analytics is True
    assert make_settings(tmp_path, device="cpu", app=True).analytics is False
    assert os.environ.get("GRADIO_ANALYTICS_ENABLED") == "False"  # playground.ui sets it before gradio reads it


def test_the_install_secret_is_neither_in_the_page_nor_in_the_config(served):
    secret = (served.workspace_root / ".browser-secret").read_text(encoding="utf-8").strip()
    assert len(secret) >= 32
    served_text = _get(served.url) + _get(served.url + "config")
    assert "browserstate" in served_text  # the component (whose key gradio sends to the browser) is there...
    pieces = {secret[i:i + 12] for i in range(len(secret) - 11)}
    assert not [p for p in pieces if p in served_text]  # ...and no 12 characters of the key material


def test_workspace_comes_from_the_flag_else_the_environment(monkeypatch):
    monkeypatch.setenv(WORKSPACE_ENV, "/mnt/bucket/playground")
    assert workspace_setting(None) == "/mnt/bucket/playground"
    assert workspace_setting("/elsewhere") == "/elsewhere"
    monkeypatch.delenv(WORKSPACE_ENV)
    assert workspace_setting(None) is None


def test_a_workspace_that_cannot_be_written_is_refused_by_name(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    with pytest.raises(PlaygroundError, match="not writable.*PLAYGROUND_WORKSPACE"):
        check_writable(blocker / "workspace")
    check_writable(tmp_path / "fine")  # made, written, cleaned up
    assert list((tmp_path / "fine").iterdir()) == []


def test_persistence_is_said_for_a_space_disk_and_a_mounted_volume(tmp_path):
    laptop = persistence(tmp_path, space=False)
    assert laptop.persistent and laptop.page_note == ""
    if mount_point(tmp_path) == Path("/"):
        wiped = persistence(tmp_path, space=True)
        assert not wiped.persistent and "until it restarts" in wiped.page_note and str(tmp_path) not in wiped.page_note
        assert WORKSPACE_ENV in wiped.log_line
    if os.path.ismount("/dev/shm"):
        mounted = persistence(Path("/dev/shm/playground-bucket"), space=True)
        assert mounted.persistent and "kept across restarts" in mounted.page_note


def test_a_space_page_says_when_work_will_not_persist(tmp_path, monkeypatch):
    from playground.ui.app import build_app

    monkeypatch.setenv("SPACE_ID", "someone/playground")
    app = build_app(make_settings(tmp_path / "ws", device="cpu", app=True))
    header = next(b for b in app.blocks.values() if getattr(b, "elem_id", None) == "header")
    if mount_point(tmp_path) == Path("/"):
        assert "until it restarts" in header.value
    assert "temporary" in header.value  # an anonymous visitor's space is per browser


def test_a_signed_in_visitor_gets_the_space_of_their_hugging_face_name(tmp_path):
    """The load handler gets a real gr.OAuthProfile through its signature (as gradio injects it
    from the login's session cookie); every handler then resolves that visitor's `u-…` space."""
    from playground.ui.app import build_app
    from playground.ui.signin import identity

    app = build_app(make_settings(tmp_path / "ws", device="cpu", app=True))
    load = next(f for f in app.fns.values() if f.fn is identity)
    assert load.inputs and len(load.outputs) == 2  # [browser state] -> [browser state, user state]
    profile = gr.OAuthProfile({"preferred_username": "ada", "name": "Ada", "sub": "1", "picture": "",
                               "profile": "https://huggingface.co/ada"})
    token = "t" * 24
    kept, state = identity(token, profile)
    assert kept == token and state == "hf:ada"
    assert identity(token, None) == (token, token)  # signed out: the browser's own space again
    assert identity("../../etc", None)[1] != "../../etc"  # a forged token is replaced, never used

    from playground.ui.context import AppContext

    spaces = Spaces(tmp_path / "ws")
    ctx = AppContext.__new__(AppContext)
    ctx.spaces = spaces
    ada = ctx.space_for(state, None)
    assert ada.key == user_key(username="hf:ada") and ada.key.startswith("u-")
    assert ctx.space_for(token, None).key == user_key(browser_token=token)
    assert ctx.space_for("hf:ada", None).key == ctx.space_for("hf:ada", None).key  # the same in any browser


@pytest.mark.slow  # builds the app twice (about 3 s)
def test_the_sign_in_button_appears_only_where_the_space_provides_oauth(tmp_path, monkeypatch):
    from playground.ui.app import build_app

    def login_buttons():
        app = build_app(make_settings(tmp_path / "ws", device="cpu", app=True))
        return [b for b in app.blocks.values() if isinstance(b, gr.LoginButton)], app

    monkeypatch.delenv("OAUTH_CLIENT_ID", raising=False)
    assert login_buttons()[0] == []  # off a Space gradio would mock the login with this machine's HF token
    monkeypatch.setenv("SPACE_ID", "someone/playground")
    monkeypatch.setenv("SYSTEM", "spaces")
    assert login_buttons()[0] == []  # a Space without hf_oauth
    import gradio.oauth

    # What hf_oauth: true sets on the Space (gradio.oauth reads them once, when imported).
    monkeypatch.setenv("OAUTH_CLIENT_ID", "client-id")
    for name, value in (("OAUTH_CLIENT_ID", "client-id"), ("OAUTH_CLIENT_SECRET", "s"), ("OAUTH_SCOPES", "openid profile"),
                        ("OPENID_PROVIDER_URL", "https://huggingface.co")):
        monkeypatch.setattr(gradio.oauth, name, value)
    buttons, app = login_buttons()
    assert len(buttons) == 1 and app.expects_oauth
