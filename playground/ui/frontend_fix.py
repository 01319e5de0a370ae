"""Serve gradio's frontend with one fix: an event's inputs stop collecting loading statuses.

Gradio's frontend keeps a loading status for every component an event names, and on every
status change of every event (pending, each progress message, done) it hands each of them back
to its component. Each hand-over searches the whole component tree (depth first, through
reactive proxies) for that component, so a click costs (status changes) x (sum of those
components' positions in the tree).

The components meant are an event's progress targets, plus its inputs while a *streaming*
event (a webcam, a microphone) is open. But when any event completes, gradio marks the stream
state "closed" whether or not the event streams, and from then on every input of that event is
kept too, for the life of the page. In this app, Start reads the Train form's 40 fields, so one
training added 48 entries; after an hour of training, generating and analysing, a tokenizer
Save in that tab handed back 120 statuses 16 times (408,000 tree steps, 0.5-0.7 s) where a
fresh tab handed back 57 (167,000 steps). Gradio's own error path already sets "closed" only
for streaming events; `fix_blocks_js` makes the success path do the same. Measured in headless
Chromium (`python -m playground bench browser`): 6-10 statuses kept instead of 57-120.

`FrontendFix` is a pure ASGI middleware (no gradio import) that applies the fix to the one
asset that holds this code (`Blocks-<hash>.js`) as it is served. If a gradio release minifies
the code differently the pattern does not match and the asset is served unchanged (the app
works as before, only slower in a long-lived tab); `tests/ui/test_frontend_fix.py` checks the
fix applies to the installed release.
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
DROPPED_HEADERS = frozenset({b"content-length", b"etag", b"last-modified", b"accept-ranges"})
# Conditional and range requests would let a cached or partial copy of the unfixed file through.
STRIPPED_REQUEST_HEADERS = frozenset({b"if-none-match", b"if-modified-since", b"range", b"if-range"})
MAX_BODY_BYTES = 8 * 2**20


def fix_blocks_js(source: str) -> str | None:
    """The asset with the completion branch setting "closed" for streaming events only, or None
    when the code is not there exactly once (another gradio release: serve it unchanged)."""
    found = list(COMPLETE_RE.finditer(source))
    if len(found) != 1:
        return None
    m = found[0]
    q = m["q"]
    guarded = f"{m['dep']}.connection_type==={q}stream{q}&&({m['closed']})"
    return source[: m.start("closed")] + guarded + source[m.end("closed") :]


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
