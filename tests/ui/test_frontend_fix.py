"""Issue #13 item 2: gradio's frontend is served with an event's inputs no longer collecting
loading statuses, and a status handed over only when it changed (playground.ui.frontend_fix),
on the installed gradio and through the real server."""
from __future__ import annotations

import asyncio
import gzip
import json
import shutil
import subprocess
import urllib.request
from pathlib import Path

import gradio
import pytest

from playground.ui.frontend_fix import (
    HANDOVER_METHOD,
    FrontendFix,
    close_streams_only,
    fix_blocks_js,
    hand_over_changes_only,
)

# The completion branch as gradio 6.31 and 6.0.1 (the floor) minify it, with a little code around.
NEW_STYLE = ("a();s.original_msg===`process_starts`&&r.connection_type===`stream`&&(n=`open`);"
             "let{fn_index:o,...c}=s;if(s.stage===`complete`){n=`closed`,a.forEach(e=>{x(e)});b()}")
OLD_STYLE = ('a();d.original_msg==="process_starts"&&s.connection_type==="stream"&&(g="open");'
             'const{fn_index:E,...x}=d;if(d.stage==="complete"){g="closed",p.forEach(O=>{y(O)});b()}')
# The hand-over loop, likewise.
NEW_LOOP = ("f(){}async update_loading_stati_state(){await Promise.all(Object.entries(this.loading_stati.current)"
            ".map(([e,t])=>this.update_state_cb(Number(e),{loading_status:t},!1)))}dispatch_state_change_events(e){}")
OLD_LOOP = ("f(){}async update_loading_stati_state(){for(const[t,a]of Object.entries(this.loading_stati.current))"
            "this.update_state_cb(Number(t),{loading_status:a},!1)}dispatch_state_change_events(t){}")
ASSETS = Path(gradio.__file__).parent / "templates" / "frontend" / "assets"
NODE = shutil.which("node")


@pytest.mark.parametrize(("source", "before", "after"), [
    (NEW_STYLE, "{n=`closed`,", "{r.connection_type===`stream`&&(n=`closed`),"),
    (OLD_STYLE, '{g="closed",', '{s.connection_type==="stream"&&(g="closed"),'),
])
def test_only_a_streaming_event_closes_its_stream_on_completion(source, before, after):
    """The completion branch sets "closed" only for a streaming event (what gradio's error path
    does); nothing else in the asset changes."""
    assert close_streams_only(source) == source.replace(before, after)


@pytest.mark.parametrize(("source", "before", "after"), [
    (NEW_LOOP, "this.update_state_cb(Number(e),{loading_status:t},!1)", "this.__playground_handover(Number(e),t)"),
    (OLD_LOOP, "this.update_state_cb(Number(t),{loading_status:a},!1)", "this.__playground_handover(Number(t),a)"),
])
def test_the_hand_over_loop_goes_through_the_changes_only_method(source, before, after):
    expected = source.replace(before, after).replace("async update_loading_stati_state",
                                                      HANDOVER_METHOD + "async update_loading_stati_state")
    assert hand_over_changes_only(source) == expected


@pytest.mark.skipif(NODE is None, reason="needs node to run the method")
def test_a_status_is_handed_over_only_when_it_changed(tmp_path):
    script = tmp_path / "handover.mjs"
    script.write_text(
        "class Blocks{constructor(){this.sent=[]}update_state_cb(id,update,flag){this.sent.push([id,update.loading_status])}"
        + HANDOVER_METHOD + "}\n"
        "const b=new Blocks();const s={status:'pending',eta:null,fn_index:3};\n"
        "b.__playground_handover(7,s);b.__playground_handover(7,{...s});"  # equal: not again
        "b.__playground_handover(8,{...s});"  # another component: handed over
        "b.__playground_handover(7,{...s,status:'complete'});b.__playground_handover(7,{});"  # changes: handed over
        "b.__playground_handover(7,{status:'complete'});"  # differs from the last one ({}): handed over
        "b.update_state_cb(7,{loading_status:{validation_error:null}},!1);"  # set elsewhere (gradio, directly)
        "b.__playground_handover(7,{status:'complete'});"  # the component no longer has it: handed over
        "b.__playground_handover(7,{status:'complete'});"  # now it has: not again
        "b.update_state_cb(8,{value:1},!1);b.__playground_handover(8,{...s});"  # a value, not a status: not again
        "console.log(JSON.stringify(b.sent.map(([id,st])=>[id,st?.status??null])));", encoding="utf-8")
    out = subprocess.run([NODE, str(script)], capture_output=True, text=True, timeout=60, check=True).stdout
    assert json.loads(out) == [[7, "pending"], [8, "pending"], [7, "complete"], [7, None], [7, "complete"],
                               [7, None], [7, "complete"], [8, None]]


def test_code_that_is_not_there_exactly_once_is_left_alone():
    assert fix_blocks_js("function f(){return 1}") is None
    assert fix_blocks_js(NEW_STYLE + ";" + NEW_STYLE) is None


def test_the_installed_gradio_gets_both_fixes(tmp_path):
    blocks = sorted(ASSETS.glob("Blocks-*.js"))
    assert blocks, f"no Blocks asset in {ASSETS}"
    sources = [p.read_text(encoding="utf-8") for p in blocks]
    assert sum(close_streams_only(s) is not None for s in sources) == 1, (gradio.__version__, blocks)
    assert sum(hand_over_changes_only(s) is not None for s in sources) == 1, (gradio.__version__, blocks)
    if NODE is not None:  # and the fixed asset still parses as a module
        fixed = next(f for f in map(fix_blocks_js, sources) if f is not None)
        (tmp_path / "blocks.mjs").write_text(fixed, encoding="utf-8")
        subprocess.run([NODE, "--check", str(tmp_path / "blocks.mjs")], check=True, timeout=60)


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
