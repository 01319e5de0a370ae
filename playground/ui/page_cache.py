"""Answer repeated page loads from memory: an ASGI middleware for the app's static-per-visitor pages.

The page (`/`, ~570 KB of HTML with the whole app's config in it) and `/config` (~380 KB of
JSON) are rebuilt by gradio on every request: a deep copy of the config, serialising it, and
(with GZip inside this middleware) compressing it. Twenty students opening the share link in
the same minute pay that twenty times over on a 2-core server. The answer depends only on the
request's path, host/forwarding headers, gradio's login cookie (`access-token…`: the page names
the user) and accepted encoding, so those form the key: every other cookie a browser carries (a
Space's proxy, analytics, a sign-in session) is left out, or each visitor would get a page of
their own, rebuilt. Query strings are left out too (the playground's `?tab=…` deep links and
`?__theme=` are read by the browser), except gradio's own `page` and `deep_link`, whose requests
pass through: a flood of made-up values can neither fill the cache nor push the plain page out.
Twenty simultaneous first loads build the page once; the others wait for it. Pure ASGI.
"""
from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

CACHED_PATHS = frozenset({"/", "/config"})
# Request headers an answer may depend on (gradio derives the root URL from the forwarding ones).
KEY_HEADERS = frozenset({b"host", b"cookie", b"accept-encoding", b"x-forwarded-host", b"x-forwarded-proto",
                         b"x-forwarded-prefix", b"x-forwarded-port", b"forwarded", b"authorization"})
MAX_BODY_BYTES = 4 * 2**20  # never keep a surprisingly large answer
LOGIN_COOKIE = "access-token"  # gradio's login cookies: access-token-<id>, access-token-unsecure-<id>
SERVER_QUERY_KEYS = frozenset({b"page", b"deep_link"})  # the query parameters gradio's page reads


class PageCache:
    """Keep up to `max_entries` successful GET answers of `paths`, least recently used first out."""

    def __init__(self, app: ASGIApp, paths: frozenset[str] = CACHED_PATHS, max_entries: int = 64) -> None:
        self.app, self.paths, self.max_entries = app, paths, max_entries
        self.entries: OrderedDict[tuple, tuple[Message, bytes]] = OrderedDict()
        self.building: dict[tuple, asyncio.Event] = {}
        self.hits = self.misses = 0

    @staticmethod
    def key(scope: Scope) -> tuple:
        """What an answer depends on: the path and the headers in KEY_HEADERS."""
        headers = tuple(sorted((k.lower(), login_cookies(v) if k.lower() == b"cookie" else v)
                               for k, v in scope.get("headers", []) if k.lower() in KEY_HEADERS))
        return scope.get("root_path", ""), scope["path"], headers

    def cacheable(self, scope: Scope) -> bool:
        return (scope["type"] == "http" and scope.get("method") == "GET" and scope["path"] in self.paths
                and not _server_query(scope.get("query_string") or b""))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self.cacheable(scope):
            await self.app(scope, receive, send)
            return
        key = self.key(scope)
        if key not in self.entries and key in self.building:  # the same page is being built: wait for it
            await self.building[key].wait()
        cached = self.entries.get(key)
        if cached is not None:
            self.entries.move_to_end(key)
            self.hits += 1
            start, body = cached
            await send(dict(start))
            await send({"type": "http.response.body", "body": body, "more_body": False})
            return
        self.misses += 1
        owner = key not in self.building  # the others asking meanwhile wait for this build
        if owner:
            self.building[key] = asyncio.Event()
        try:
            await self._build(key, scope, receive, send)
        finally:
            if owner:
                self.building.pop(key).set()

    async def _build(self, key: tuple, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer through the app, keeping a successful, visitor-neutral answer."""
        start: Message | None = None
        chunks: list[bytes] = []
        keep = True

        async def capture(message: Message) -> None:
            nonlocal start, keep
            if message["type"] == "http.response.start":
                start = message
                keep = message.get("status") == 200
            elif message["type"] == "http.response.body" and keep:
                chunks.append(message.get("body", b""))
                keep = sum(map(len, chunks)) <= MAX_BODY_BYTES
            await send(message)

        await self.app(scope, receive, capture)
        if start is not None and keep and not _sets_cookie(start):
            self.entries[key] = (start, b"".join(chunks))
            while len(self.entries) > self.max_entries:
                self.entries.popitem(last=False)


def _sets_cookie(start: Message) -> bool:
    """An answer that sets a cookie belongs to one visitor: never replay it to another."""
    return any(k.lower() == b"set-cookie" for k, _ in start.get("headers", []))


def login_cookies(header: bytes) -> bytes:
    """The part of a Cookie header the page depends on: gradio's login cookies, sorted."""
    parts = [p.strip() for p in header.split(b";")]
    return b"; ".join(sorted(p for p in parts if p.startswith(LOGIN_COOKIE.encode())))


def _server_query(query: bytes) -> bool:
    """Whether the query names a parameter gradio's page reads itself (`page`, `deep_link`)."""
    return any(part.split(b"=", 1)[0] in SERVER_QUERY_KEYS for part in query.split(b"&") if part)
