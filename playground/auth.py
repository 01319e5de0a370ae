"""Logins for a shared server: credentials from flags or a file, checked by a rate-limited guard.

Pure (no gradio): `LoginGuard` is the callable handed to `launch(auth=...)`; gradio calls it with
(username, password) for each POST to /login. A stored secret is a plain password or
`sha256:<64 hex digits>` (the SHA-256 of the password), so an auth file need not hold passwords
in the clear. Passwords never appear in messages or logs.
"""
from __future__ import annotations

import asyncio
import contextvars
import hashlib
import hmac
import ipaddress
import logging
import re
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

log = logging.getLogger("playground.auth")
_SHA256 = re.compile(r"sha256:([0-9a-fA-F]{64})")


class AuthConfigError(ValueError):
    """A malformed credential (the message names where, never the password)."""


def parse_credential(text: str, where: str = "--auth") -> tuple[str, str]:
    """`"alice:pw"` -> `("alice", "pw")`; `"bob:sha256:<hex>"` keeps `"sha256:<hex>"` as the secret."""
    user, sep, secret = text.partition(":")
    user = user.strip()
    if not sep or not user or not secret:
        raise AuthConfigError(f"{where}: expected USER:PASSWORD (or USER:sha256:<hex>), "
                              f"got {'no colon' if not sep else ('an empty user name' if not user else 'an empty password')}")
    if any(c.isspace() for c in user):
        raise AuthConfigError(f"{where}: the user name {user!r} contains white space")
    if secret.lower().startswith("sha256:") and not _SHA256.fullmatch(secret):
        raise AuthConfigError(f"{where}: a sha256: password must be 64 hex digits (the SHA-256 of the password)")
    return user, secret


def read_auth_file(path: str | Path) -> list[tuple[str, str]]:
    """Credentials from a file: one `user:password` per line; `#` comments and blank lines skipped."""
    path = Path(path).expanduser()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise AuthConfigError(f"--auth-file {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise AuthConfigError(f"--auth-file {path}: cannot read it ({exc.__class__.__name__})") from None
    pairs = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        pairs.append(parse_credential(line, f"{path}, line {number}"))
    if not pairs:
        raise AuthConfigError(f"--auth-file {path}: no user:password lines in it")
    return pairs


def merge_credentials(*sources: Iterable[tuple[str, str]]) -> dict[str, str]:
    """One user -> secret mapping; a user named twice is an error (which secret would win?)."""
    out: dict[str, str] = {}
    for pairs in sources:
        for user, secret in pairs:
            if user in out:
                raise AuthConfigError(f"the user {user!r} is given more than once (--auth and --auth-file together)")
            out[user] = secret
    return out


def hash_password(password: str) -> str:
    """The `sha256:<hex>` form of a password, for an auth file."""
    return "sha256:" + hashlib.sha256(password.encode("utf-8")).hexdigest()


def secret_matches(password: str, secret: str) -> bool:
    """Constant-time check of a typed password against a stored plain or `sha256:` secret."""
    match = _SHA256.fullmatch(secret)
    if match:
        typed = hashlib.sha256(password.encode("utf-8")).hexdigest()
        return hmac.compare_digest(typed, match.group(1).lower())
    return hmac.compare_digest(password.encode("utf-8"), secret.encode("utf-8"))


# Who is logging in: the client's address, set per /login request by `LoginClients` (gradio hands
# the auth callable only the user name and password).
CLIENT: contextvars.ContextVar[str] = contextvars.ContextVar("playground_login_client", default="local")
SLOW_S = 1.0  # each login waits this long while the whole server sees a flood of failures


class LoginGuard:
    """`guard(username, password) -> bool`, refusing tries from a client while that client is locked.

    Limits are keyed to the client (its address, `CLIENT`) so that one client cannot lock anyone out:
    - `max_failures` wrong passwords for one user name from one address within `window_s` lock that
      (address, name) pair for `cooldown_s`; while locked even the right password is refused there.
      The same name from another address is not affected.
    - More than `client_per_minute` failures from one address in 60 s (guessing across many names)
      refuse that address's tries until the minute has passed.
    - More than `global_per_minute` failures over all addresses in 60 s never refuse anyone: each
      login then waits `slow_s` first (`login`, the async form gradio awaits), which slows guessing
      from many addresses while every right password still gets in.
    - A success clears that pair's failures. Thread-safe; `clock` is injectable for tests.
    """

    def __init__(self, credentials: Mapping[str, str], *, max_failures: int = 5, window_s: float = 300.0,
                 cooldown_s: float = 300.0, client_per_minute: int = 30, global_per_minute: int = 100,
                 slow_s: float = SLOW_S, clock: Callable[[], float] = time.monotonic) -> None:
        if not credentials:
            raise AuthConfigError("no users given")
        if min(max_failures, client_per_minute, global_per_minute) < 1 or window_s <= 0 or cooldown_s < 0 or slow_s < 0:
            raise AuthConfigError("login limits must be positive")
        self._credentials = dict(credentials)
        self.max_failures = max_failures
        self.window_s = window_s
        self.cooldown_s = cooldown_s
        self.client_per_minute = client_per_minute
        self.global_per_minute = global_per_minute
        self.slow_s = slow_s
        self._clock = clock
        self._lock = threading.Lock()
        self._failures: dict[tuple[str, str], deque[float]] = {}
        self._locked_until: dict[tuple[str, str], float] = {}
        self._by_client: dict[str, deque[float]] = {}  # failure times per address, last 60 s
        self._recent: deque[float] = deque()  # failure times over all addresses, last 60 s

    def __call__(self, username: str, password: str) -> bool:
        """True to let this login in (from the address in `CLIENT`)."""
        client = CLIENT.get()
        with self._lock:
            now = self._clock()
            self._expire(now)
            if self.locked(username, client=client, _now=now):
                return False
            secret = self._credentials.get(username)
            # An unknown user costs the same comparison as a known one.
            ok = secret_matches(password or "", secret if secret is not None else "sha256:" + "0" * 64)
            if ok and secret is not None:
                self._failures.pop((client, username), None)
                return True
            self._fail(client, username, now)
            return False

    async def login(self, username: str, password: str) -> bool:
        """The callable for `launch(auth=...)`: under a server-wide flood it first waits `slow_s`
        (on the event loop, never blocking it), then checks as `__call__` does."""
        if self.slowing():
            await asyncio.sleep(self.slow_s)
        return self(username, password)

    def slowing(self) -> bool:
        """Whether the server has seen more than `global_per_minute` failures in the last minute."""
        with self._lock:
            now = self._clock()
            self._expire(now)
            return len(self._recent) >= self.global_per_minute

    def locked(self, username: str, *, client: str | None = None, _now: float | None = None) -> bool:
        """Whether a try for `username` from `client` (default: the current one) would be refused now."""
        client = CLIENT.get() if client is None else client
        now = self._clock() if _now is None else _now
        mine = self._by_client.get(client)
        if mine and len(mine) >= self.client_per_minute and now - mine[0] < 60.0:
            return True
        return self._locked_until.get((client, username), float("-inf")) > now

    def _fail(self, client: str, username: str, now: float) -> None:
        self._recent.append(now)
        if len(self._recent) == self.global_per_minute:
            log.warning("login: %d failed logins within a minute; slowing every login by %.1f s", len(self._recent),
                        self.slow_s)
        mine = self._by_client.setdefault(client, deque())
        mine.append(now)
        if len(mine) == self.client_per_minute:
            log.warning("login: %d failed logins from one address within a minute; refusing it for a minute", len(mine))
        times = self._failures.setdefault((client, username), deque())
        times.append(now)
        if len(times) >= self.max_failures:
            self._locked_until[(client, username)] = now + self.cooldown_s
            times.clear()
            log.warning("login: %d failed logins for user %r from one address; refusing it there for %.0f s",
                        self.max_failures, username, self.cooldown_s)

    def _expire(self, now: float) -> None:
        while self._recent and now - self._recent[0] >= 60.0:
            self._recent.popleft()
        for client, times in list(self._by_client.items()):
            while times and now - times[0] >= 60.0:
                times.popleft()
            if not times:
                del self._by_client[client]
        for key, times in list(self._failures.items()):
            while times and now - times[0] >= self.window_s:
                times.popleft()
            if not times:
                del self._failures[key]
        for key in [k for k, t in self._locked_until.items() if t <= now]:
            del self._locked_until[key]


def client_address(scope: Mapping[str, Any]) -> str:
    """The address a request comes from: the peer's, or behind a proxy on this machine or a private
    network (a Space's, a workshop's reverse proxy), the last address the proxy added to
    X-Forwarded-For."""
    peer = (scope.get("client") or ("unknown", 0))[0]
    forwarded = dict(scope.get("headers") or []).get(b"x-forwarded-for")
    if forwarded and _is_private(peer):
        hops = [h.strip() for h in forwarded.decode("latin-1").split(",") if h.strip()]
        if hops:
            return hops[-1][:64]
    return str(peer)


def _is_private(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_private
    except ValueError:
        return host in ("localhost", "testclient")


class LoginClients:
    """ASGI middleware: for each POST to a `/login` path, `CLIENT` holds the client's address while
    gradio checks the password (pure ASGI: the route runs in this task, so it sees the value)."""

    def __init__(self, app: Callable[..., Awaitable[None]]) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") != "http" or scope.get("method") != "POST" or not scope.get("path", "").endswith("/login"):
            await self.app(scope, receive, send)
            return
        token = CLIENT.set(client_address(scope))
        try:
            await self.app(scope, receive, send)
        finally:
            CLIENT.reset(token)


__all__ = ["CLIENT", "AuthConfigError", "LoginClients", "LoginGuard", "client_address", "hash_password", "merge_credentials",
           "parse_credential", "read_auth_file", "secret_matches"]
