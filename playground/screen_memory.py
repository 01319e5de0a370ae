"""What a user last had on screen, kept in their own space so that a reload brings it back.

A reload starts a new page: gradio's states begin empty, so without this the finished run's
curves and status, Generate's output and Analyze's choices were gone although the work itself
was saved. Each tab remembers the few inputs that reproduce its last result (the run's name and
TOML; the prompt, knobs and the seed actually drawn; the analysis' choices) — never the rendered
result, which the tab rebuilds from saved checkpoints or by re-running with the same seed.

The record is one small JSON file in the user's space (`last-screen.json`), written atomically,
with only plain values (strings, numbers, booleans, lists of them) and bounded sizes: it is
written from what a visitor typed, so nothing in it may grow without limit or be anything but data.
"""
from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

log = logging.getLogger("playground.screen_memory")

MEMORY_FILE = "last-screen.json"
TABS = ("train", "generate", "analyze")
MAX_STRING_CHARS = 60_000  # above the app's largest text field (a TOML or a capped prompt)
MAX_LIST_ITEMS = 64
MAX_FILE_BYTES = 512 * 1024
_LOCK = threading.Lock()  # one read-modify-write at a time (two tabs of one user may both save)

Plain = str | int | float | bool | None | list[Any]


class NotPlain(ValueError):
    """A value that the memory does not keep (not plain data, or too big)."""


def _plain(value: Any) -> Plain:
    """`value` as plain JSON data within the caps, else NotPlain."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise NotPlain("a number that is not finite")
        return value
    if isinstance(value, str):
        if len(value) > MAX_STRING_CHARS:
            raise NotPlain(f"a text of {len(value):,} characters")
        return value
    if isinstance(value, (list, tuple)):
        if len(value) > MAX_LIST_ITEMS:
            raise NotPlain(f"a list of {len(value)} items")
        if any(isinstance(v, (list, tuple)) for v in value):
            raise NotPlain("a list of lists")
        return [_plain(v) for v in value]
    raise NotPlain(f"a {type(value).__name__}")


def _path(root: Path) -> Path:
    return Path(root) / MEMORY_FILE


def _read(path: Path) -> dict[str, Any]:
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return {}
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def remember(root: Path, tab: str, record: Mapping[str, Any]) -> bool:
    """Keep `record` as what `tab` last showed in the space at `root`; False when it was not kept
    (a value that is not plain data or is over the caps, or a disk that refuses the write: the
    user's action itself never fails because of its memory)."""
    if tab not in TABS:
        raise ValueError(f"unknown tab {tab!r}")
    try:
        clean = {str(k): _plain(v) for k, v in record.items()}
    except NotPlain as exc:
        log.info("not remembering the %s tab's state: %s", tab, exc)
        return False
    path = _path(root)
    with _LOCK:
        data = _read(path)
        data[tab] = clean
        text = json.dumps(data, ensure_ascii=False)
        if len(text.encode("utf-8")) > MAX_FILE_BYTES:
            log.info("not remembering the %s tab's state: the record is too large", tab)
            return False
        tmp = path.with_name(f".{MEMORY_FILE}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, path)
        except OSError as exc:
            log.warning("could not keep the %s tab's state in %s: %s", tab, path.parent, exc)
            with contextlib.suppress(OSError):
                tmp.unlink()
            return False
    return True


def recall(root: Path, tab: str) -> dict[str, Any]:
    """What `tab` last showed in the space at `root` ({} when nothing was kept or the file is unreadable)."""
    found = _read(_path(root)).get(tab)
    return dict(found) if isinstance(found, dict) else {}


def text_field(record: Mapping[str, Any], key: str, default: str = "") -> str:
    """`record[key]` when it is a string, else `default` (a record from disk is checked, not trusted)."""
    value = record.get(key)
    return value if isinstance(value, str) else default


def number_field(record: Mapping[str, Any], key: str) -> float | int | None:
    """`record[key]` when it is a finite number (not a boolean), else None."""
    value = record.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value if math.isfinite(value) else None
