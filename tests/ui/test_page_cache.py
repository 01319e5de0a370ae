"""PageCache: a repeated page load is answered from memory, keyed by what the answer depends on."""
from __future__ import annotations

import asyncio

from playground.ui.page_cache import PageCache


class CountingApp:
    """An ASGI app answering `<path> for <cookie>` and counting its calls."""

    def __init__(self, status: int = 200, set_cookie: bool = False) -> None:
        self.calls, self.status, self.set_cookie = 0, status, set_cookie

    async def __call__(self, scope, receive, send):
        self.calls += 1
        cookie = dict(scope["headers"]).get(b"cookie", b"-")
        headers = [(b"content-type", b"text/html")] + ([(b"set-cookie", b"x=1")] if self.set_cookie else [])
        await send({"type": "http.response.start", "status": self.status, "headers": headers})
        await send({"type": "http.response.body", "body": scope["path"].encode() + b" for " + cookie, "more_body": True})
        await send({"type": "http.response.body", "body": b"!", "more_body": False})


def get(app, path: str = "/", method: str = "GET", query: bytes = b"", **headers: str) -> tuple[int, bytes]:
    sent = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": method, "path": path, "query_string": query, "root_path": "",
             "headers": [(k.replace("_", "-").encode(), v.encode()) for k, v in headers.items()]}
    asyncio.run(app(scope, receive, send))
    return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:])


def test_the_same_page_request_is_built_once():
    inner = CountingApp()
    cache = PageCache(inner)
    first, again = get(cache, host="a"), get(cache, host="a")
    assert first == again == (200, b"/ for -!") and inner.calls == 1 and cache.hits == 1


def test_what_the_answer_depends_on_is_in_the_key():
    inner = CountingApp()
    cache = PageCache(inner)
    assert get(cache, cookie="access-token-1=alice")[1] == b"/ for access-token-1=alice!"
    assert get(cache, cookie="access-token-1=bob")[1] == b"/ for access-token-1=bob!"  # a login never sees another's page
    get(cache, accept_encoding="gzip")
    get(cache, host="b")
    assert inner.calls == 4 and cache.hits == 0


def test_every_anonymous_visitor_shares_the_cached_page():
    """Cookies gradio does not read (a Space proxy's, a sign-in session) and the app's own deep-link
    queries leave the answer as it is: the first visitor's build serves them all."""
    inner = CountingApp()
    cache = PageCache(inner)
    for i in range(20):
        get(cache, cookie=f"spaces-jwt={i}; session={i}", query=b"tab=train&preset=x" if i % 2 else b"")
    get(cache, cookie="session=9; access-token-1=alice")
    get(cache, cookie="access-token-1=alice; other=2")
    assert inner.calls == 2 and cache.hits == 20


def test_other_paths_methods_queries_errors_and_cookies_pass_through():
    inner = CountingApp()
    cache = PageCache(inner)
    for _ in range(2):
        get(cache, "/gradio_api/queue/join")
        get(cache, method="POST")
        get(cache, query=b"deep_link=abc")  # made-up queries neither fill the cache nor evict the page
    assert inner.calls == 6 and not cache.entries
    failing, setting = CountingApp(status=500), CountingApp(set_cookie=True)
    for app in (PageCache(failing), PageCache(setting)):
        get(app), get(app)
    assert failing.calls == 2 and setting.calls == 2  # an error or a per-visitor cookie is never replayed


def test_the_cache_is_bounded():
    inner = CountingApp()
    cache = PageCache(inner, max_entries=2)
    for host in ("a", "b", "c", "a"):
        get(cache, host=host)
    assert len(cache.entries) == 2 and inner.calls == 4  # "a" was evicted by "c"


def test_simultaneous_first_loads_build_the_page_once():
    class SlowApp(CountingApp):
        async def __call__(self, scope, receive, send):
            await asyncio.sleep(0.05)  # the first build is still running when the others arrive
            await super().__call__(scope, receive, send)

    inner = SlowApp()
    cache = PageCache(inner)

    async def twenty():
        async def one():
            sent = []

            async def send(message):
                sent.append(message)

            scope = {"type": "http", "method": "GET", "path": "/", "query_string": b"", "root_path": "", "headers": []}
            await cache(scope, None, send)
            return b"".join(m.get("body", b"") for m in sent[1:])

        return await asyncio.gather(*(one() for _ in range(20)))

    bodies = asyncio.run(twenty())
    assert set(bodies) == {b"/ for -!"} and inner.calls == 1 and cache.hits == 19
