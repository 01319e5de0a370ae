"""Serve gradio's frontend with two fixes to how it hands loading statuses to components.

Gradio's frontend keeps a loading status for every component an event names, and on every
status change of every event (pending, each progress message, done) it hands each of them back
to its component. Each hand-over searches the whole component tree (depth first, through
reactive proxies) for that component, so a click costs (status changes) x (statuses kept) x
(their positions in the tree), and it grew with everything the tab had done:

1. **Inputs kept for good** (`close_streams_only`). The statuses meant are an event's progress
   targets, plus its inputs while a *streaming* event (a webcam, a microphone) is open. But when
   any event completes, gradio marks its stream "closed" whether or not it streams, and from
   then on every input of that event is kept too, for the life of the page. Start reads the
   Train form's 40 fields, so one training added 48 statuses; a tokenizer Save made 2,600
   hand-overs in a fresh tab and 5,200 in one that had done a round of everything. Gradio's own
   error path sets "closed" only for streaming events; the success path now does the same.
2. **Unchanged statuses handed over again** (`hand_over_changes_only`). Each status change
   rebuilds every kept status, so nearly all of the hand-overs carried what the component
   already had. A status now goes to its component only when it differs, field by field, from
   the last one that component received.

Measured in headless Chromium (`python -m playground bench browser`, docs/serving-a-workshop.md "A tab kept open
for hours"): with both, a Save in a long-lived tab takes what it takes in a fresh tab.

`FrontendFix` is a pure ASGI middleware (no gradio import) that applies the fixes to the one
asset that holds this code (`Blocks-<hash>.js`) as it is served. If a gradio release minifies
the code differently, a fix whose pattern does not match is left out (the app works as before,
only slower in a long-lived tab); `tests/ui/test_frontend_fix.py` checks that both apply to the
installed release (6.31 and the 6.0.1 floor both match) and that the result still parses.
"""
from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

ASSET_RE = re.compile(r"/assets/Blocks-[\w-]+\.js$")
# The submit loop's completion branch, as minified by gradio 6.0.1 (double quotes, `const`) and
# 6.31 (backticks, `let`): the "open" line names the dependency and the stream-state variable.
#   <dep>.connection_type==="stream"&&(<st>="open");const{fn_index:<a>,...<b>}=<msg>;
#   if(<msg>.stage==="complete"){<st>="closed",
COMPLETE_RE = re.compile(
    r"(?P<dep>[\w$]+)\.connection_type===(?P<q>[\"`])stream(?P=q)&&\((?P<st>[\w$]+)=(?P=q)open(?P=q)\);"
    r"(?:const|let)\{fn_index:[\w$]+,\.\.\.[\w$]+\}=(?P<msg>[\w$]+);"
    r"if\((?P=msg)\.stage===(?P=q)complete(?P=q)\)\{(?P<closed>(?P=st)=(?P=q)closed(?P=q)),"
)
# The hand-over loop: every kept status to its component, on every status change of every event.
HANDOVER_START = "async update_loading_stati_state(){"
HANDOVER_END = "dispatch_state_change_events("  # the next method, in 6.0.1 and 6.31
HANDOVER_CALL_RE = re.compile(r"this\.update_state_cb\(Number\((?P<id>[\w$]+)\),\{loading_status:(?P<status>[\w$]+)\},!1\)")
# A method for the class: hand a status over unless it equals (field by field) the last one this
# component was handed; `update` rebuilds every kept status on each change, so most are equal.
# The first call wraps `update_state_cb`, so that a status set on any other path (gradio clears
# validation messages on an event's inputs directly) makes the next hand-over go through.
HANDOVER_METHOD = (
    "__playground_handover(e,t){let s=this.__playground_sent;if(!s){s=this.__playground_sent=new Map;"
    "const f=this.update_state_cb;this.update_state_cb=(i,u,n)=>{if(!s.inside&&u&&`loading_status`in u)s.delete(i);"
    "return f.call(this,i,u,n)}}const p=s.get(e);"
    "if(p&&Object.keys(p).length===Object.keys(t).length&&Object.keys(t).every(k=>t[k]===p[k]))return;"
    "s.set(e,t);s.inside=!0;try{return this.update_state_cb(e,{loading_status:t},!1)}finally{s.inside=!1}}"
)
DROPPED_HEADERS = frozenset({b"content-length", b"etag", b"last-modified", b"accept-ranges"})
# Conditional and range requests would let a cached or partial copy of the unfixed file through.
STRIPPED_REQUEST_HEADERS = frozenset({b"if-none-match", b"if-modified-since", b"range", b"if-range"})
MAX_BODY_BYTES = 8 * 2**20


def close_streams_only(source: str) -> str | None:
    """The completion branch setting "closed" for streaming events only, or None when the code
    is not there exactly once."""
    found = list(COMPLETE_RE.finditer(source))
    if len(found) != 1:
        return None
    m = found[0]
    q = m["q"]
    guarded = f"{m['dep']}.connection_type==={q}stream{q}&&({m['closed']})"
    return source[: m.start("closed")] + guarded + source[m.end("closed") :]


def hand_over_changes_only(source: str) -> str | None:
    """The hand-over loop skipping a status equal to the one its component last received, or
    None when the loop is not there exactly once."""
    if source.count(HANDOVER_START) != 1:
        return None
    start = source.index(HANDOVER_START)
    end = source.find(HANDOVER_END, start)
    calls = list(HANDOVER_CALL_RE.finditer(source, start, end if end >= 0 else start))
    if len(calls) != 1:
        return None
    call = calls[0]
    handover = f"this.__playground_handover(Number({call['id']}),{call['status']})"
    return source[:start] + HANDOVER_METHOD + source[start : call.start()] + handover + source[call.end() :]


def fix_blocks_js(source: str) -> str | None:
    """The asset with every fix that matches applied, or None when none does (another gradio
    release: serve it unchanged)."""
    fixed = source
    for fix in (close_streams_only, hand_over_changes_only):
        fixed = fix(fixed) or fixed
    return None if fixed == source else fixed


class FrontendFix:
    """ASGI middleware: GET of gradio's Blocks asset is answered with `fix_blocks_js` applied."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.fixed: dict[str, bytes] = {}  # path -> fixed body (the asset never changes while serving)
        self.unfixable: set[str] = set()

    def matches(self, scope: Scope) -> bool:
        return (scope["type"] == "http" and scope.get("method") == "GET" and bool(ASSET_RE.search(scope["path"]))
                and scope["path"] not in self.unfixable)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self.matches(scope):
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        scope = dict(scope)
        scope["headers"] = [(k, v) for k, v in scope.get("headers", []) if k.lower() not in STRIPPED_REQUEST_HEADERS]
        start: Message | None = None
        chunks: list[bytes] = []
        size = 0

        async def keep(message: Message) -> None:
            nonlocal start, size
            if message["type"] == "http.response.start":
                start = message
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))
                size += len(chunks[-1])
                if size > MAX_BODY_BYTES:
                    raise ValueError("asset larger than expected")

        await self.app(scope, receive, keep)
        assert start is not None
        body = b"".join(chunks)
        headers = list(start.get("headers", []))
        if start["status"] == 200 and not any(k.lower() == b"content-encoding" for k, _ in headers):
            fixed = self.fixed.get(path)
            if fixed is None:
                try:
                    text = fix_blocks_js(body.decode("utf-8"))
                except UnicodeDecodeError:
                    text = None
                if text is None:
                    self.unfixable.add(path)
                else:
                    fixed = self.fixed[path] = text.encode("utf-8")
            if fixed is not None:
                body = fixed
                headers = [(k, v) for k, v in headers if k.lower() not in DROPPED_HEADERS]
                headers.append((b"content-length", str(len(body)).encode()))
        await send({**start, "headers": headers})
        await send({"type": "http.response.body", "body": body})
