"""Issue #13 item 2: gradio's frontend is served with an event's inputs no longer collecting
loading statuses (playground.ui.frontend_fix), on the installed gradio and through the real server."""
from __future__ import annotations

import asyncio
import gzip
import urllib.request
from pathlib import Path

import gradio
import pytest

from playground.ui.frontend_fix import FrontendFix, fix_blocks_js

# The completion branch as gradio 6.31 and 6.0.1 (the floor) minify it, with a little code around.
NEW_STYLE = ("a();s.original_msg===`process_starts`&&r.connection_type===`stream`&&(n=`open`);"
             "let{fn_index:o,...c}=s;if(s.stage===`complete`){n=`closed`,a.forEach(e=>{x(e)});b()}")
OLD_STYLE = ('a();d.original_msg==="process_starts"&&s.connection_type==="stream"&&(g="open");'
             'const{fn_index:E,...x}=d;if(d.stage==="complete"){g="closed",p.forEach(O=>{y(O)});b()}')
ASSETS = Path(gradio.__file__).parent / "templates" / "frontend" / "assets"


@pytest.mark.parametrize(("source", "before", "after"), [
    (NEW_STYLE, "{n=`closed`,", "{r.connection_type===`stream`&&(n=`closed`),"),
    (OLD_STYLE, '{g="closed",', '{s.connection_type==="stream"&&(g="closed"),'),
])
def test_only_a_streaming_event_closes_its_stream_on_completion(source, before, after):
    """The completion branch sets "closed" only for a streaming event (what gradio's error path
    does); nothing else in the asset changes."""
    assert fix_blocks_js(source) == source.replace(before, after)


def test_code_that_is_not_there_exactly_once_is_left_alone():
    assert fix_blocks_js("function f(){return 1}") is None
    assert fix_blocks_js(NEW_STYLE + ";" + NEW_STYLE) is None


def test_the_installed_gradio_gets_the_fix():
    blocks = sorted(ASSETS.glob("Blocks-*.js"))
    assert blocks, f"no Blocks asset in {ASSETS}"
    fixed = [p.name for p in blocks if fix_blocks_js(p.read_text(encoding="utf-8")) is not None]
    assert len(fixed) == 1, (gradio.__version__, [p.name for p in blocks])


def fetch(url: str, **headers: str) -> tuple[int, dict[str, str], bytes]:
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=30) as response:
        body = response.read()
        if response.headers.get("content-encoding") == "gzip":
            body = gzip.decompress(body)
        return response.status, dict(response.headers), body


def test_the_server_sends_the_fixed_asset_and_other_assets_as_they_are(app_server):
    name = next(p.name for p in ASSETS.glob("Blocks-*.js") if fix_blocks_js(p.read_text(encoding="utf-8")))
    on_disk = (ASSETS / name).read_text(encoding="utf-8")
    expected = fix_blocks_js(on_disk).encode("utf-8")
    url = f"{app_server.url}assets/{name}"
    for headers in ({}, {"Accept-Encoding": "gzip"}, {"If-None-Match": '"anything"', "Range": "bytes=0-99"}):
        status, got_headers, body = fetch(url, **headers)
        assert status == 200 and body == expected, headers
        assert "etag" not in {k.lower() for k in got_headers}  # a cached copy of the unfixed file is not revalidated
    other = next(p for p in sorted(ASSETS.glob("index-*.js")))
    assert fetch(f"{app_server.url}assets/{other.name}")[2] == other.read_bytes()


def test_an_asset_the_fix_does_not_match_passes_through_unchanged():
    body = b"export const nothing = 1;"
    sent: list[dict] = []

    async def asset(scope, receive, send):
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-length", str(len(body)).encode()), (b"etag", b'"x"')]})
        await send({"type": "http.response.body", "body": body})

    async def send(message):
        sent.append(message)

    async def receive():
        return {"type": "http.request", "body": b""}

    fix = FrontendFix(asset)
    scope = {"type": "http", "method": "GET", "path": "/assets/Blocks-abc123.js", "headers": []}
    for _ in range(2):  # the second time it is not even looked at
        sent.clear()
        asyncio.run(fix(scope, receive, send))
        assert b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body") == body
        assert (b"etag", b'"x"') in sent[0]["headers"]
    assert fix.unfixable == {"/assets/Blocks-abc123.js"}
