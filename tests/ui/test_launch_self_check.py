"""A slow first answer (a loaded machine) must not kill the server at launch."""
from __future__ import annotations

import asyncio

import gradio as gr
import httpx
from starlette.middleware import Middleware

from playground.ui.app import launch_options


class SlowHead:
    """ASGI middleware: every HEAD waits 4 s, as a first page answer does on a busy machine."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http" and scope["method"] == "HEAD":
            await asyncio.sleep(4)
        await self.app(scope, receive, send)


def test_the_app_serves_although_its_first_answer_is_slow():
    with gr.Blocks() as app:
        gr.Markdown("hello")
    options = launch_options()
    options["app_kwargs"] = {"middleware": [Middleware(SlowHead)]}
    try:
        app.launch(server_name="127.0.0.1", prevent_thread_lock=True, quiet=True, **options)  # gradio's own check would raise
        assert httpx.get(f"{app.local_url}config", timeout=30).status_code == 200
    finally:
        app.close()
