"""The workspace on disk: `tokenizers/<name>/` and `models/<name>/`, saved atomically.

Layout::

    <root>/tokenizers/<name>/tokenizer.json   HF tokenizers format
    <root>/tokenizers/<name>/meta.json        corpus, options, vocab size, compression
    <root>/models/<name>/model.safetensors    weights (never pickled)
    <root>/models/<name>/config.json          family, model/train config, step, metrics summary
    <root>/models/<name>/tokenizer.json       absent for image models
    <root>/models/<name>/metrics.csv          one row per evaluation
    <root>/cache/                             downloaded corpora

Every entry is written into a hidden temp directory next to its final place and renamed into
place, so a crash never leaves a half-written entry that lists as valid. Replacing an entry
moves the old one aside to `.old-<name>-<id>` first; a reader that finds the name missing in
that instant (or after a kill there) reads the `.old-` folder instead, and `recover` puts it
back on the next start, so a reader always finds the old or the new entry.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tempfile
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer

from playground.errors import InvalidNameError, NotFoundError, PlaygroundError

NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
MAX_NAME_LENGTH = 64
KINDS = ("tokenizers", "models")
REQUIRED_FILES = {"tokenizers": ("tokenizer.json",), "models": ("model.safetensors", "config.json")}
META_FILES = {"tokenizers": "meta.json", "models": "config.json"}


def validate_name(name: str) -> str:
    """Return `name` if it is a safe entry name, else raise InvalidNameError saying why."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidNameError("Give a name: letters, digits, '-', '_' or '.', up to 64 characters.")
    name = name.strip()
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidNameError(f"Name is {len(name)} characters long; use at most {MAX_NAME_LENGTH}.")
    if "/" in name or "\\" in name or ".." in name:
        raise InvalidNameError(f"Name {name!r} may not contain '/', '\\' or '..'; use letters, digits, '-', '_', '.'.")
    if not NAME_PATTERN.match(name):
        raise InvalidNameError(
            f"Name {name!r} has characters we do not accept; use letters, digits, '-', '_' or '.', "
            "starting with a letter or digit."
        )
    return name


@dataclass(frozen=True)
class Entry:
    """One saved tokenizer or model: its name, folder and metadata."""

    kind: str
    name: str
    path: Path
    meta: dict[str, Any]
    origin: str = "own"  # "own", "shared" or "library" in a user's view of the app


class Workspace:
    """Lists, saves and loads workspace entries under one root directory.

    `shelves` are read-only workspaces (the shipped checkpoints, an instructor's library) whose
    entries are listed and loaded after this one's own, the way the app's per-user view shows
    them; writes and deletes reach only this workspace's own root.
    """

    def __init__(self, root: str | Path, shelves: Sequence[Workspace] = ()) -> None:
        self.root = Path(root)
        own = self.root.resolve()
        self.shelves = tuple(ws for ws in shelves if ws.root.resolve() != own)

    # -- paths ---------------------------------------------------------------------------
    def dir(self, kind: str) -> Path:
        """The folder of one kind of entry ("tokenizers" or "models")."""
        if kind not in KINDS:
            raise PlaygroundError(f"Unknown workspace kind {kind!r}; use one of {KINDS}.")
        return self.root / kind

    @property
    def cache_dir(self) -> Path:
        """Where downloaded corpora are kept."""
        return self.root / "cache"

    def path(self, kind: str, name: str) -> Path:
        """Folder of entry `name` (validated), whether or not it exists."""
        return self.dir(kind) / validate_name(name)

    def _complete(self, kind: str, path: Path) -> bool:
        return all((path / f).is_file() for f in REQUIRED_FILES[kind])

    def _resolve(self, kind: str, name: str) -> Path | None:
        """The folder that holds entry `name` now: its own, or the `.old-` one mid-replace."""
        path = self.path(kind, name)
        if self._complete(kind, path):
            return path
        for old in sorted(path.parent.glob(f".old-{path.name}-*")):
            if _old_name(old.name) == path.name and self._complete(kind, old):
                return old
        return path if self._complete(kind, path) else None  # the replace may have finished meanwhile

    # -- listing -------------------------------------------------------------------------
    def list(self, kind: str) -> list[Entry]:
        """Complete entries of a kind: own ones sorted by name, then each shelf's not shadowed by
        an own name (origin "library"); temp dirs and broken entries are skipped."""
        entries = self._own_list(kind)
        seen = {e.name for e in entries}
        for shelf in self.shelves:
            for entry in shelf.list(kind):
                if entry.name not in seen:
                    seen.add(entry.name)
                    entries.append(replace(entry, origin="library"))
        return entries

    def _own_list(self, kind: str) -> list[Entry]:
        folder = self.dir(kind)
        if not folder.is_dir():
            return []
        entries = {}
        for child in sorted(folder.iterdir()):
            if not child.is_dir():
                continue
            name = _old_name(child.name) if child.name.startswith(".old-") else child.name
            if name is None or name.startswith(".") or name in entries:
                continue
            path = self._resolve(kind, name) if child.name != name else child
            if path is None or not self._complete(kind, path):
                continue
            entries[name] = Entry(kind, name, path, _read_json_or_empty(path / META_FILES[kind]))
        return [entries[n] for n in sorted(entries)]

    def names(self, kind: str) -> list[str]:
        """Names of the complete entries of a kind."""
        return [e.name for e in self.list(kind)]

    def get(self, kind: str, name: str) -> Entry:
        """One entry (own first, then the shelves'), or NotFoundError listing what there is."""
        path = self._resolve(kind, name)
        if path is not None:
            return Entry(kind, validate_name(name), path, _read_json_or_empty(path / META_FILES[kind]))
        for shelf in self.shelves:
            if shelf.exists(kind, name):
                return replace(shelf.get(kind, name), origin="library")
        have = ", ".join(self.names(kind)) or "none yet"
        raise NotFoundError(f"No {kind[:-1]} named {name!r} in {self.dir(kind).name}/ (have: {have}).")

    def exists(self, kind: str, name: str) -> bool:
        """Whether a complete entry of that name exists (own or on a shelf)."""
        return self._resolve(kind, name) is not None or any(s.exists(kind, name) for s in self.shelves)

    def recover(self, kind: str) -> tuple[int, int]:
        """Clean up after killed saves: drop `.tmp-*`/`.trash-*` folders, put back an orphaned
        `.old-*` whose entry is missing (drop it when the entry is there). Returns (removed, restored)."""
        folder = self.dir(kind)
        if not folder.is_dir():
            return 0, 0
        removed = restored = 0
        for child in sorted(folder.iterdir()):
            if child.name.startswith((".tmp-", ".trash-")) and child.is_dir():
                shutil.rmtree(child, ignore_errors=True)
                removed += 1
            elif child.name.startswith(".old-") and child.is_dir():
                name = _old_name(child.name)
                target = folder / name if name else None
                if target is not None and not target.exists() and self._complete(kind, child):
                    os.replace(child, target)
                    restored += 1
                else:
                    shutil.rmtree(child, ignore_errors=True)
                    removed += 1
        return removed, restored

    def check_writable(self, kind: str, name: str) -> None:
        """Raise unless `name` may be written: any valid name in a plain workspace (a user's space
        in the app also refuses library and shared names)."""
        validate_name(name)

    def scratch_dir(self, prefix: str) -> Path:
        """A fresh temp folder for files offered as downloads (the system's temp folder)."""
        return Path(tempfile.mkdtemp(prefix=prefix))

    # -- writing -------------------------------------------------------------------------
    @contextlib.contextmanager
    def writing(self, kind: str, name: str, overwrite: bool = False) -> Iterator[Path]:
        """Yield a temp folder to fill; on normal exit it atomically becomes entry `name`.

        On error the temp folder is removed and any previous entry is left untouched.
        """
        final = self.path(kind, name)
        if final.exists() and not overwrite:
            raise PlaygroundError(f"A {kind[:-1]} named {final.name!r} already exists; choose another name or overwrite it.")
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{final.name}-", dir=final.parent))
        os.chmod(tmp, 0o777 & ~_UMASK)  # mkdtemp makes 0700; entries get the usual folder mode
        try:
            yield tmp
            missing = [f for f in REQUIRED_FILES[kind] if not (tmp / f).is_file()]
            if missing:
                raise PlaygroundError(f"Internal: entry {final.name!r} is missing {missing}; nothing was saved.")
            _fsync_dir_files(tmp)
            _replace_dir(tmp, final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise

    def save_tokenizer(self, name: str, tokenizer_json: str, meta: dict[str, Any], overwrite: bool = False) -> Entry:
        """Save a tokenizer (its tokenizer.json text) and its metadata."""
        with self.writing("tokenizers", name, overwrite=overwrite) as tmp:
            (tmp / "tokenizer.json").write_text(tokenizer_json, encoding="utf-8")
            write_json(tmp / "meta.json", {"name": validate_name(name), **meta})
        return self.get("tokenizers", name)

    def load_tokenizer(self, name: str) -> Tokenizer:
        """The saved `tokenizers.Tokenizer` of that name (JSON, never pickled)."""
        entry = self.get("tokenizers", name)
        return Tokenizer.from_file(str(entry.path / "tokenizer.json"))

    def delete(self, kind: str, name: str) -> None:
        """Remove an own entry (renamed away first, so a crash never leaves half an entry);
        a shelf's entry is read-only."""
        if self._resolve(kind, name) is None and self.exists(kind, name):
            raise PlaygroundError(f"{name!r} is a read-only {kind[:-1]} of the library (shipped or the instructor's); "
                                  "it cannot be deleted from here.")
        path = self.get(kind, name).path
        if path.name != validate_name(name):  # mid-replace: wait for the replace to land
            raise PlaygroundError(f"{name!r} is being replaced right now; try again in a moment.")
        trash = path.with_name(f".trash-{path.name}-{uuid.uuid4().hex[:8]}")
        os.replace(path, trash)
        shutil.rmtree(trash, ignore_errors=True)


def _old_name(folder_name: str) -> str | None:
    """`.old-<name>-<8 hex>` -> `<name>` (None for anything else)."""
    m = re.fullmatch(r"\.old-(.+)-[0-9a-f]{8}", folder_name)
    return m.group(1) if m and NAME_PATTERN.match(m.group(1)) else None


def write_json(path: Path, data: Any) -> None:
    """Write JSON with a stable layout (sorted keys are not used: order is meaningful)."""
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False, default=_json_default) + "\n", encoding="utf-8")


def _json_default(obj: Any) -> Any:
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "item"):
        return obj.item()
    if isinstance(obj, (set, tuple)):
        return list(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def _read_json_or_empty(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# Read once, at import: os.umask can only be read by setting it, and setting it process-wide
# while other threads create files would hand them a world-writable mode.
_UMASK = _umask()


def _fsync_dir_files(folder: Path) -> None:
    for f in folder.iterdir():
        if f.is_file():
            with open(f, "rb") as fh:
                os.fsync(fh.fileno())


def _replace_dir(src: Path, dst: Path) -> None:
    """Move `src` to `dst`; an existing `dst` is swapped out first and then deleted."""
    if dst.exists():
        old = dst.with_name(f".old-{dst.name}-{uuid.uuid4().hex[:8]}")
        os.replace(dst, old)
        try:
            os.replace(src, dst)
        except BaseException:
            os.replace(old, dst)
            raise
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(src, dst)
