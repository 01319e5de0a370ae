"""Shared fixtures: a temp workspace and (session-wide) the real app on a free loopback port."""
from __future__ import annotations

import contextlib
import dataclasses
import os
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# Every chart the app sends during the tests is checked against the Vega-Lite schema (the
# server skips that check on each update: playground.ui.components.Chart).
os.environ.setdefault("PLAYGROUND_VALIDATE_CHARTS", "1")


@pytest.fixture
def workspace(tmp_path: Path):
    """An empty workspace in a temp folder."""
    from playground.workspace import Workspace

    return Workspace(tmp_path / "ws")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class RunningApp:
    """A served app: its URL, the root of its user spaces, and an instructor's library folder."""

    url: str
    workspace_root: Path
    library_root: Path

    @property
    def library(self):
        """The read-only library every user sees (tests put prepared entries here)."""
        from playground.workspace import Workspace

        return Workspace(self.library_root)

    def space_of(self, client):
        """The own space of a gradio_client session (where what it saves lands)."""
        from playground.spaces import user_key
        from playground.workspace import Workspace

        return Workspace(self.workspace_root / "users" / user_key(session_hash=client.session_hash))


@contextlib.contextmanager
def serve_app(tmp_path_factory: pytest.TempPathFactory, name: str, demo: bool = False,
              prepare_library: Callable[[Any], None] | None = None, **caps: Any) -> Iterator[RunningApp]:
    """The real app (as launch.py serves it), in this process on a free loopback port, over a
    temp root and library; `prepare_library(workspace)` fills the library first, `caps` override
    the settings' caps (e.g. heavy_slots=2)."""
    from playground.settings import make_settings
    from playground.ui.app import build_app, launch_options, prepare_server

    root, library = tmp_path_factory.mktemp(f"{name}-ws"), tmp_path_factory.mktemp(f"{name}-library")
    settings = make_settings(root, device="cpu", demo=demo, app=True, library=[library])
    if caps:
        settings = dataclasses.replace(settings, caps=dataclasses.replace(settings.caps, **caps))
    running = RunningApp("", root, library)
    if prepare_library is not None:
        prepare_library(running.library)
    prepare_server(settings)
    app = build_app(settings)
    port = free_port()
    # launch_options() skips gradio's one-HEAD reachability probe, as launch.py does (ui/app.py)
    app.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, **launch_options())
    try:
        yield dataclasses.replace(running, url=f"http://127.0.0.1:{port}/")
    finally:
        app.close()


@pytest.fixture(scope="session")
def app_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningApp]:
    """The real app, launched in this process on a free loopback port, over a temp workspace."""
    with serve_app(tmp_path_factory, "app") as running:
        yield running
