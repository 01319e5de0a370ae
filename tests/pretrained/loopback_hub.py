"""A Hugging Face Hub on 127.0.0.1 that answers what ``hf_hub_download`` asks, from local folders.

``HEAD`` and ``GET /{repo_id}/resolve/{revision}/{filename}`` with the headers huggingface_hub
reads (``X-Repo-Commit``, ``ETag``, ``Content-Length``; ``X-Error-Code`` on a 404), ``Range``
requests answered with 206 (a resumed download), the body sent in small pieces. ``hold`` makes
a GET of that file stop after that many bytes until ``release`` is set, so a test can stop a
download half-way without timing anything.
"""
from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

COMMIT = "0123456789abcdef0123456789abcdef01234567"
PIECE = 4096
ROUTE = re.compile(r"^/(?P<repo>[^/]+(?:/[^/]+)?)/resolve/(?P<revision>[^/]+)/(?P<filename>.+)$")


@dataclass
class LoopbackHub:
    """Repos served (id -> folder), what was asked, and the hold on one file's body."""

    repos: dict[str, Path]
    url: str = ""
    requests: list[tuple[str, str, str | None]] = field(default_factory=list)  # (method, path, Range header)
    hold: dict[str, int] = field(default_factory=dict)  # filename -> bytes sent before waiting for `release`
    release: threading.Event = field(default_factory=threading.Event)


def _handler(hub: LoopbackHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
            pass

        def _file(self) -> Path | None:
            hub.requests.append((self.command, self.path, self.headers.get("Range")))
            match = ROUTE.match(self.path.split("?")[0])
            if match is None or match["repo"] not in hub.repos:
                self._missing("RepoNotFound")
                return None
            path = hub.repos[match["repo"]] / match["filename"]
            if not path.is_file():
                self._missing("EntryNotFound")
                return None
            return path

        def _missing(self, code: str) -> None:
            self.send_response(404)
            self.send_header("X-Error-Code", code)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def _headers(self, path: Path, status: int, length: int, start: int = 0) -> None:
            size = path.stat().st_size
            self.send_response(status)
            self.send_header("X-Repo-Commit", COMMIT)
            self.send_header("ETag", '"' + hashlib.sha256(path.read_bytes()).hexdigest() + '"')
            self.send_header("Content-Length", str(length))
            self.send_header("Accept-Ranges", "bytes")
            if status == 206:
                self.send_header("Content-Range", f"bytes {start}-{size - 1}/{size}")
            self.end_headers()

        def do_HEAD(self) -> None:  # noqa: N802 - http.server's name
            path = self._file()
            if path is not None:
                self._headers(path, 200, path.stat().st_size)

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            path = self._file()
            if path is None:
                return
            data = path.read_bytes()
            start = 0
            ranged = re.match(r"bytes=(\d+)-$", self.headers.get("Range") or "")
            if ranged:
                start = int(ranged[1])
                self._headers(path, 206, len(data) - start, start)
            else:
                self._headers(path, 200, len(data))
            hold = hub.hold.get(path.name)
            sent = start
            try:
                while sent < len(data):
                    if hold is not None and sent >= hold and not ranged:
                        hub.release.wait()
                        hold = None
                    end = min(len(data), sent + PIECE, hold if hold is not None and sent < hold else len(data))
                    self.wfile.write(data[sent:end])
                    self.wfile.flush()
                    sent = end
            except OSError:  # the client stopped reading: a cut-off download
                pass

    return Handler


@contextmanager
def serve_hub(repos: dict[str, Path]) -> Iterator[LoopbackHub]:
    """A LoopbackHub serving ``repos`` on a free loopback port for the duration of the block."""
    hub = LoopbackHub(dict(repos))
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(hub))
    server.daemon_threads = True
    hub.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield hub
    finally:
        hub.release.set()
        server.shutdown()
        server.server_close()
        thread.join()
