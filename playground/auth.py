"""Logins for a shared server: credentials from flags or a file, checked by a rate-limited guard.

Pure (no gradio): `LoginGuard` is the callable handed to `launch(auth=...)`; gradio calls it with
(username, password) for each POST to /login. A stored secret is a plain password or
`sha256:<64 hex digits>` (the SHA-256 of the password), so an auth file need not hold passwords
in the clear. Passwords never appear in messages or logs.
"""
from __future__ import annotations

import hashlib
import hmac
import logging
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

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


class LoginGuard:
    """`guard(username, password) -> bool`, refusing tries while a user (or the server) is locked.

    - `max_failures` wrong passwords for one user name within `window_s` lock that name for
      `cooldown_s`; while locked even the right password is refused (a guesser learns nothing).
    - More than `global_per_minute` failures over all names in 60 s refuse every login until
      the minute has passed (guessing across many user names).
    - A success clears that user's failures. Thread-safe; `clock` is injectable for tests.
    """

    def __init__(self, credentials: Mapping[str, str], *, max_failures: int = 5, window_s: float = 300.0,
                 cooldown_s: float = 300.0, global_per_minute: int = 30,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if not credentials:
            raise AuthConfigError("no users given")
        if max_failures < 1 or global_per_minute < 1 or window_s <= 0 or cooldown_s < 0:
            raise AuthConfigError("login limits must be positive")
        self._credentials = dict(credentials)
        self.max_failures = max_failures
        self.window_s = window_s
        self.cooldown_s = cooldown_s
        self.global_per_minute = global_per_minute
        self._clock = clock
        self._lock = threading.Lock()
        self._failures: dict[str, deque[float]] = {}
        self._locked_until: dict[str, float] = {}
        self._recent: deque[float] = deque()  # failure times over all user names, last 60 s

    def __call__(self, username: str, password: str) -> bool:
        """True to let this login in (gradio's auth callable)."""
        with self._lock:
            now = self._clock()
            self._expire(now)
            if self.locked(username, _now=now):
                return False
            secret = self._credentials.get(username)
            # An unknown user costs the same comparison as a known one.
            ok = secret_matches(password or "", secret if secret is not None else "sha256:" + "0" * 64)
            if ok and secret is not None:
                self._failures.pop(username, None)
                return True
            self._fail(username, now)
            return False

    def locked(self, username: str, *, _now: float | None = None) -> bool:
        """Whether a try for `username` would be refused now without checking the password."""
        now = self._clock() if _now is None else _now
        if len(self._recent) >= self.global_per_minute and now - self._recent[0] < 60.0:
            return True
        return self._locked_until.get(username, float("-inf")) > now

    def _fail(self, username: str, now: float) -> None:
        self._recent.append(now)
        if len(self._recent) == self.global_per_minute:
            log.warning("login: %d failed logins within a minute; refusing all logins for a minute", len(self._recent))
        times = self._failures.setdefault(username, deque())
        times.append(now)
        if len(times) >= self.max_failures:
            self._locked_until[username] = now + self.cooldown_s
            times.clear()
            log.warning("login: %d failed logins for user %r; refusing it for %.0f s",
                        self.max_failures, username, self.cooldown_s)

    def _expire(self, now: float) -> None:
        while self._recent and now - self._recent[0] >= 60.0:
            self._recent.popleft()
        for user, times in list(self._failures.items()):
            while times and now - times[0] >= self.window_s:
                times.popleft()
            if not times:
                del self._failures[user]
        for user in [u for u, t in self._locked_until.items() if t <= now]:
            del self._locked_until[user]


__all__ = ["AuthConfigError", "LoginGuard", "hash_password", "merge_credentials", "parse_credential",
           "read_auth_file", "secret_matches"]
