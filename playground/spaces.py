"""Per-user spaces for the served app: each user's own entries, a shared area, read-only shelves.

Layout under the app's root (``--workspace``)::

    <root>/users/<key>/tokenizers|models/...   one user's own entries (a plain Workspace)
    <root>/shared/tokenizers|models/...        entries a user pressed "Share" on; each holds
                                               a `shared-by` file with the owner's key
    <root>/cache/                              downloaded corpora, one copy for the server

Library shelves (the shipped checkpoints, an instructor's ``--library`` folders) are
read-only Workspaces that every user sees. A user's view looks names up in their own space
first, then the shared area, then the shelves; it writes only into their own space and refuses
names that belong to a read-only entry. The CLI keeps its single Workspace and never comes here.

A user key is derived from who the user is — a login name, else a random per-browser token,
else the connection's session id — by hashing, so no string a user sends becomes a path.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer

from playground.errors import NotFoundError, PlaygroundError
from playground.scratch import SCRATCH_PREFIX, newest_mtime, scratch_base
from playground.workspace import KINDS, Entry, Workspace, validate_name

SHARED_BY_FILE = "shared-by"
_SHARE_LOCK = threading.Lock()  # one share at a time: the owner check and the copy are one step
IDLE_API_SPACE_S = 7 * 86400  # an API session's space, untouched this long, is removed
IDLE_BROWSER_SPACE_S = 30 * 86400  # an anonymous browser's space, untouched this long, is removed
IDLE_ANON_UPLOAD_S = 86400  # an anonymous space's uploaded file, untouched this long, is removed (sooner)
UPLOADS_FOLDER = "uploads"  # playground.data.policy's name for a space's uploads
TOKEN_PATTERN = re.compile(r"^[A-Za-z0-9_-]{16,128}$")


class ReadOnlyError(PlaygroundError):
    """A write was aimed at an entry the user may read but not change."""


def user_key(username: str | None = None, browser_token: str | None = None, session_hash: str | None = None) -> str:
    """A stable folder name for one user: `u-…` per login, `b-…` per browser, `s-…` per connection.

    Only hashes reach the file system; a browser token that is not a well-formed random token
    (as `new_browser_token` makes) is ignored.
    """
    if username:
        return "u-" + _digest(f"user:{username}")
    if isinstance(browser_token, str) and TOKEN_PATTERN.match(browser_token):
        return "b-" + _digest(f"browser:{browser_token}")
    if session_hash:
        return "s-" + _digest(f"session:{session_hash}")
    raise PlaygroundError("This request carries no session; reload the page.")


def new_browser_token() -> str:
    """A fresh random token that identifies one browser (kept in its localStorage)."""
    return secrets.token_urlsafe(24)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]


class UserSpace:
    """What one user of the app sees and may change (duck-types `Workspace`).

    Reads search the user's own space, then the shared area, then the library shelves;
    writes and deletes reach only the user's own space.
    """

    names_only = True  # checkpoints are looked up by name, never by a path the user typed

    def __init__(self, own: Workspace, shared: Workspace, shelves: Sequence[Workspace], key: str,
                 cache_dir: Path, scratch_root: Path | None = None, max_entries: int | None = None,
                 session: str | None = None) -> None:
        self.own = own
        self.session = session  # the connection asking (its jobs stop when it goes: LiveJobs.stop_session)
        self.max_entries = max_entries  # per kind; a public server keeps a user's disk use bounded
        self.shared = shared
        self.shelves = tuple(shelves)
        self.key = key
        self._cache_dir = cache_dir
        self._scratch_root = scratch_root

    # -- the Workspace surface ------------------------------------------------------------
    @property
    def root(self) -> Path:
        return self.own.root

    @property
    def cache_dir(self) -> Path:
        return self._cache_dir

    def dir(self, kind: str) -> Path:
        return self.own.dir(kind)

    def path(self, kind: str, name: str) -> Path:
        """Where entry `name` is: the visible entry's folder, else where the user's own would go."""
        found = self._find(kind, name)
        return found.path if found is not None else self.own.path(kind, name)

    def list(self, kind: str) -> list[Entry]:
        """Own entries, then shared ones, then the shelves'; a name shows once (the first found)."""
        seen: set[str] = set()
        out: list[Entry] = []
        for origin, ws in self._layers():
            for entry in ws.list(kind):
                if entry.name in seen:
                    continue
                if origin == "shared" and not _is_shared_entry(entry.path):
                    continue
                seen.add(entry.name)
                out.append(replace(entry, origin=origin))
        return out

    def names(self, kind: str) -> list[str]:
        return [e.name for e in self.list(kind)]

    def get(self, kind: str, name: str) -> Entry:
        found = self._find(kind, name)
        if found is None:
            have = ", ".join(self.names(kind)) or "none yet"
            raise NotFoundError(f"No {kind[:-1]} named {validate_name(name)!r} in your space (have: {have}).")
        return found

    def exists(self, kind: str, name: str) -> bool:
        return self._find(kind, name) is not None

    def origin(self, kind: str, name: str) -> str | None:
        """"own", "shared" or "library" for a visible entry, else None."""
        found = self._find(kind, name)
        return found.origin if found is not None else None

    @contextlib.contextmanager
    def writing(self, kind: str, name: str, overwrite: bool = False) -> Iterator[Path]:
        """Like `Workspace.writing`, into the user's own space; read-only names are refused."""
        self.check_writable(kind, name)
        with self.own.writing(kind, name, overwrite=overwrite) as tmp:
            yield tmp

    def check_writable(self, kind: str, name: str) -> None:
        """Raise ReadOnlyError when `name` is a visible entry the user does not own, or when a new
        entry would take the user's space past `max_entries` of that kind."""
        name = validate_name(name)
        if self.own.exists(kind, name):
            return
        if self.max_entries is not None and len(self.own.names(kind)) >= self.max_entries:
            raise PlaygroundError(f"Your space already holds {self.max_entries} {kind}, the most this server keeps "
                                  "per user; delete one in the My space tab (or overwrite one of yours).")
        origin = self.origin(kind, name)
        if origin == "library":
            raise ReadOnlyError(f"{name!r} is a read-only {kind[:-1]} of the library (shipped or the instructor's); "
                                "choose another name for yours.")
        if origin == "shared":
            raise ReadOnlyError(f"{name!r} is a {kind[:-1]} someone shared, read-only to you; choose another name for yours.")

    def save_tokenizer(self, name: str, tokenizer_json: str, meta: dict[str, Any], overwrite: bool = False) -> Entry:
        self.check_writable("tokenizers", name)
        self.own.save_tokenizer(name, tokenizer_json, meta, overwrite=overwrite)
        return self.get("tokenizers", name)

    def load_tokenizer(self, name: str) -> Tokenizer:
        return Tokenizer.from_file(str(self.get("tokenizers", name).path / "tokenizer.json"))

    def delete(self, kind: str, name: str) -> None:
        """Delete one of the user's own entries, or (when they have none of that name) a copy they
        shared; anything else is read-only to them."""
        if not self.own.exists(kind, name) and shared_owner(self.shared, kind, validate_name(name)) == self.key:
            with _SHARE_LOCK:
                self.shared.delete(kind, name)
            return
        self.check_writable(kind, name)
        self.own.delete(kind, name)

    def scratch_dir(self, prefix: str) -> Path:
        """A fresh temp folder for this session's downloads, removed when the session ends."""
        if self._scratch_root is None:
            return Path(tempfile.mkdtemp(prefix=prefix))
        self._scratch_root.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix=prefix, dir=self._scratch_root))

    # -- sharing --------------------------------------------------------------------------
    def share(self, kind: str, name: str, as_name: str | None = None) -> Entry:
        """Copy one of the user's own entries into the shared area (others can read, not change).

        Re-sharing under a name the user shared before replaces that copy; a name someone else
        shared, or a library name, is refused.
        """
        source = self.own.get(kind, name) if self.own.exists(kind, name) else None
        if source is None:
            raise NotFoundError(f"Only your own {kind} can be shared; {validate_name(name)!r} is not one of them.")
        target = validate_name(as_name or name)
        if any(ws.exists(kind, target) for ws in self.shelves):
            raise ReadOnlyError(f"{target!r} is a library name; share under another name.")
        with _SHARE_LOCK:
            owner = shared_owner(self.shared, kind, target)
            if owner is not None and owner != self.key:
                raise ReadOnlyError(f"Someone else already shared a {kind[:-1]} named {target!r}; "
                                    "share under another name.")
            if owner is None and self.max_entries is not None and len(self.my_shares(kind)) >= self.max_entries:
                raise PlaygroundError(f"You already shared {self.max_entries} {kind}, the most this server keeps per "
                                      "user; delete one of your shared copies in My space first.")
            with self.shared.writing(kind, target, overwrite=owner == self.key) as tmp:
                for item in source.path.iterdir():
                    if item.is_file() and not item.is_symlink():
                        shutil.copy2(item, tmp / item.name)
                (tmp / SHARED_BY_FILE).write_text(self.key, encoding="utf-8")
        return self.shared.get(kind, target)

    def my_shares(self, kind: str) -> list[str]:
        """Names of the shared entries this user shared."""
        return [e.name for e in self.shared.list(kind) if shared_owner(self.shared, kind, e.name) == self.key]

    # -- internals ------------------------------------------------------------------------
    def _layers(self) -> list[tuple[str, Workspace]]:
        return [("own", self.own), ("shared", self.shared), *(("library", ws) for ws in self.shelves)]

    def _find(self, kind: str, name: str) -> Entry | None:
        name = validate_name(name)
        for origin, ws in self._layers():
            if ws.exists(kind, name):
                if origin == "shared" and not _is_shared_entry(ws.path(kind, name)):
                    continue
                return replace(ws.get(kind, name), origin=origin)
        return None


def _is_shared_entry(path: Path) -> bool:
    return (path / SHARED_BY_FILE).is_file()


def shared_owner(shared: Workspace, kind: str, name: str) -> str | None:
    """The key of whoever shared entry `name`, or None when there is none."""
    marker = shared.path(kind, name) / SHARED_BY_FILE
    try:
        return marker.read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


class Spaces:
    """The app's root of user spaces: hands each request its `UserSpace`."""

    def __init__(self, root: str | Path, library: Sequence[str | Path] = (), scratch_dir_base: Path | None = None,
                 max_entries: int | None = None) -> None:
        self.root = Path(root)
        self.max_entries = max_entries
        self._last_sweep = 0.0
        self._sweep_lock = threading.Lock()
        # A shelf that is the app's root itself (the default: checkpoints/ holds both the shipped
        # entries and users/) is fine: users/ and shared/ are not entry folders of it.
        self.shelves = tuple(Workspace(p) for p in library)
        self.shared = Workspace(self.root / "shared")
        self.users_dir = self.root / "users"
        self.cache_dir = self.root / "cache"
        self.scratch_base = scratch_dir_base or scratch_base()

    def space(self, key: str, session_hash: str | None = None) -> UserSpace:
        """The space of user `key`; temp files of this session go under its own scratch folder."""
        if not re.fullmatch(r"[usb]-[0-9a-f]{24}", key):
            raise PlaygroundError("Internal: malformed user key.")
        scratch = self.scratch_base / _digest(f"scratch:{session_hash}") if session_hash else None
        return UserSpace(Workspace(self.users_dir / key), self.shared, self.shelves, key, self.cache_dir, scratch,
                         self.max_entries, session_hash)

    def end_session(self, session_hash: str) -> None:
        """Remove the temp files one browser session made (called on unload)."""
        shutil.rmtree(self.scratch_base / _digest(f"scratch:{session_hash}"), ignore_errors=True)

    def sweep_idle_spaces(self, every_s: float = 3600.0) -> int:
        """While serving: remove idle anonymous spaces (see `remove_idle_spaces`), at most once per `every_s`."""
        with self._sweep_lock:
            if time.time() - self._last_sweep < every_s:
                return 0
            self._last_sweep = time.time()
        return self.remove_idle_spaces()

    def remove_idle_spaces(self, api_after_s: float = IDLE_API_SPACE_S, browser_after_s: float = IDLE_BROWSER_SPACE_S,
                           uploads_after_s: float = IDLE_ANON_UPLOAD_S) -> int:
        """Remove anonymous spaces nobody touched for a while: per-connection ones (`s-…`, API
        clients) after `api_after_s`, per-browser ones (`b-…`) after `browser_after_s`; sooner,
        their uploaded files untouched for `uploads_after_s`. Spaces of logins (`u-…`) stay.
        Returns how many spaces were removed."""
        if not self.users_dir.is_dir():
            return 0
        now, removed = time.time(), 0
        for prefix, limit in (("s-", api_after_s), ("b-", browser_after_s)):
            for folder in self.users_dir.glob(f"{prefix}*"):
                if now - newest_mtime(folder) > limit:
                    shutil.rmtree(folder, ignore_errors=True)
                    removed += 1
                    continue
                for upload in (folder / UPLOADS_FOLDER).glob("*"):
                    with contextlib.suppress(OSError):
                        if upload.is_file() and not upload.is_symlink() and now - upload.stat().st_mtime > uploads_after_s:
                            upload.unlink()
        return removed

    def clean_on_start(self) -> dict[str, int]:
        """Start-up housekeeping; returns counts of what was removed or restored.

        - hidden `.tmp-*` / `.trash-*` folders left by killed saves are removed, and a `.old-*`
          folder whose entry is missing (killed between the two renames of a replace) is put back;
        - scratch folders of server processes that are no longer running are removed;
        - anonymous spaces idle for long are removed (`remove_idle_spaces`).
        """
        counts = {"temp": 0, "restored": 0, "scratch": 0, "stale_spaces": 0}
        roots = [self.shared]
        if self.users_dir.is_dir():
            roots += [Workspace(p) for p in self.users_dir.iterdir() if p.is_dir()]
        for ws in roots:
            for kind in KINDS:
                removed, restored = ws.recover(kind)
                counts["temp"] += removed
                counts["restored"] += restored
        parent = self.scratch_base.parent
        for folder in parent.glob(f"{SCRATCH_PREFIX}*"):
            pid = folder.name[len(SCRATCH_PREFIX):]
            if pid.isdigit() and int(pid) != os.getpid() and not _pid_alive(int(pid)):
                shutil.rmtree(folder, ignore_errors=True)
                counts["scratch"] += 1
        counts["stale_spaces"] = self.remove_idle_spaces()
        self._last_sweep = time.time()
        return counts


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class LiveJobs:
    """Process-wide register of live jobs: per-user limits and run names reserved while live.

    `claim(user, lane, name)` is a context manager: it refuses a user's second live job of a
    lane beyond `limit`, and a second live job under the same (user, name). It gives the job
    an Event that `request_stop(user, lane, name)` sets: a user's Stop reaches their own run
    directly, whatever became of the request that started it.
    """

    def __init__(self, on_release: Callable[[], Any] | None = None) -> None:
        self._lock = threading.Lock()
        self._live: dict[tuple[str, str], set[str]] = {}
        self._stops: dict[tuple[str, str, str], threading.Event] = {}
        self._sessions: dict[tuple[str, str, str], str] = {}  # job -> the connection that started it
        self._on_release = on_release  # e.g. give freed memory back to the OS after a job

    @contextlib.contextmanager
    def claim(self, user: str, lane: str, name: str, limit: int, what: str = "job",
              session: str | None = None) -> Iterator[threading.Event]:
        """Reserve (user, lane, name) while the block runs; yields the job's stop request, which
        `stop_session(session)` also sets (its owner has gone)."""
        token = f"{lane}:{name}"
        with self._lock:
            mine = self._live.setdefault((user, lane), set())
            if token in mine:
                raise PlaygroundError(f"A {what} named {name!r} is already running in your space; stop it first "
                                      "or choose another name.")
            if limit and len(mine) >= limit:
                running = ", ".join(sorted(t.split(":", 1)[1] for t in mine))
                raise PlaygroundError(f"You already have {len(mine)} {what}(s) running ({running}); this server allows "
                                      f"{limit} per user at once. Stop it or wait for it to finish.")
            mine.add(token)
            stop = self._stops[(user, lane, name)] = threading.Event()
            if session:
                self._sessions[(user, lane, name)] = session
        try:
            yield stop
        finally:
            with self._lock:
                mine = self._live.get((user, lane), set())
                mine.discard(token)
                if not mine:
                    self._live.pop((user, lane), None)
                self._stops.pop((user, lane, name), None)
                self._sessions.pop((user, lane, name), None)
            if self._on_release is not None:
                self._on_release()

    def request_stop(self, user: str, lane: str, name: str) -> bool:
        """Ask the user's live job (lane, name) to stop; False when none is live."""
        with self._lock:
            stop = self._stops.get((user, lane, name))
        if stop is None:
            return False
        stop.set()
        return True

    def stop_session(self, session: str) -> int:
        """Ask every live job that connection `session` started to stop (it closed: the reaper of
        jobs whose owner is gone); returns how many were asked."""
        with self._lock:
            stops = [self._stops[job] for job, owner in self._sessions.items() if owner == session and job in self._stops]
        for stop in stops:
            stop.set()
        return len(stops)

    def count(self, lane: str | None = None) -> int:
        """How many jobs are live (in one lane, or all)."""
        with self._lock:
            return sum(len(v) for (u, ln), v in self._live.items() if lane is None or ln == lane)


def space_rows(space: UserSpace) -> list[dict[str, Any]]:
    """One row per entry the user can see: kind, name, where it comes from, what it is."""
    rows = []
    for kind in KINDS:
        for entry in space.list(kind):
            meta = entry.meta
            what = meta.get("family") or (f"vocab {meta['vocab_size']:,}" if isinstance(meta.get("vocab_size"), int) else "")
            rows.append({"kind": kind[:-1], "name": entry.name, "origin": entry.origin, "what": what,
                         "step": meta.get("step", "")})
    return rows
