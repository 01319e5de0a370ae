"""Temp files the app offers for download, reclaimed by age.

Gradio copies a file a handler returns into its own cache (swept by `delete_cache`), so our
copy is needed only for a short while: every folder made here is removed once it is older than
`MAX_AGE_S`, by a sweep that runs at most once a minute, and the whole base folder of a server
process that is no longer running is removed at the next start (`Spaces.clean_on_start`).
"""
from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from pathlib import Path

SCRATCH_PREFIX = "playground-sessions-"
MAX_AGE_S = 15 * 60
_SWEEP_EVERY_S = 60.0
_last_sweep = 0.0
_lock = threading.Lock()


def scratch_base() -> Path:
    """This server process's temp folder (per-session folders and downloads live under it)."""
    return Path(tempfile.gettempdir()) / f"{SCRATCH_PREFIX}{os.getpid()}"


def download_dir(prefix: str) -> Path:
    """A fresh folder for files handed to gradio as downloads; swept after `MAX_AGE_S`."""
    base = scratch_base() / "downloads"
    base.mkdir(parents=True, exist_ok=True)
    sweep_downloads(base)
    return Path(tempfile.mkdtemp(prefix=prefix, dir=base))


def newest_mtime(folder: Path) -> float:
    """The latest change in `folder` or anything under it (a job may still be rewriting its files,
    which does not touch the folder's own time)."""
    newest = folder.stat().st_mtime
    for path in folder.rglob("*"):
        try:
            newest = max(newest, path.stat().st_mtime)
        except OSError:
            continue
    return newest


def sweep_downloads(base: Path | None = None, max_age_s: float = MAX_AGE_S, force: bool = False) -> int:
    """Remove download folders older than `max_age_s`; returns how many were removed."""
    global _last_sweep
    now = time.time()
    with _lock:
        if not force and now - _last_sweep < _SWEEP_EVERY_S:
            return 0
        _last_sweep = now
    base = base or scratch_base() / "downloads"
    removed = 0
    if base.is_dir():
        for folder in base.iterdir():
            try:
                if now - newest_mtime(folder) > max_age_s:
                    shutil.rmtree(folder, ignore_errors=True)
                    removed += 1
            except OSError:
                continue
    return removed
