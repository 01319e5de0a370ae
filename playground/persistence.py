"""Where the served app keeps work, and whether it outlives a restart.

A Hugging Face Space runs `launch.py` with no arguments and wipes its disk on every restart;
work persists only on storage mounted into the container (a Storage Bucket, persistent
storage at /data). `PLAYGROUND_WORKSPACE` points the app there. On start the app checks the
workspace is writable (`check_writable`) and says, in the log and on the page, whether work
will persist (`persistence`).
"""
from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from playground.errors import PlaygroundError

WORKSPACE_ENV = "PLAYGROUND_WORKSPACE"


def on_space() -> bool:
    """Whether this process runs as a Hugging Face Space (SPACE_ID is set there)."""
    return bool(os.environ.get("SPACE_ID"))


def workspace_setting(flag: str | None) -> str | None:
    """The workspace asked for: the --workspace flag, else $PLAYGROUND_WORKSPACE, else None (the default)."""
    return flag or os.environ.get(WORKSPACE_ENV) or None


def check_writable(root: Path) -> None:
    """PlaygroundError unless a file can be written, renamed and removed under `root` (made if missing)."""
    probe = root / f".write-check-{secrets.token_hex(4)}"
    try:
        root.mkdir(parents=True, exist_ok=True)
        probe.write_text("ok", encoding="utf-8")
        probe.replace(probe.with_suffix(".done"))
        probe.with_suffix(".done").unlink()
    except OSError as exc:
        raise PlaygroundError(f"The workspace {root} is not writable ({exc.strerror or type(exc).__name__}); point "
                              f"--workspace or {WORKSPACE_ENV} at a folder this server may write to.") from None


def mount_point(path: Path) -> Path:
    """The mount point of the file system that holds `path` (the nearest existing ancestor's)."""
    path = path.resolve()
    while not path.exists() and path != path.parent:
        path = path.parent
    while not os.path.ismount(path):
        path = path.parent
    return path


@dataclass(frozen=True)
class Persistence:
    """Whether work written under the workspace outlives a restart, and a line that says so."""

    persistent: bool
    page_note: str  # for the page: no server paths
    log_line: str  # for the server's log


def persistence(root: Path, space: bool | None = None) -> Persistence:
    """Off a Space a workspace on disk persists; on a Space only one on a mounted volume does."""
    space = on_space() if space is None else space
    if not space:
        return Persistence(True, "", f"Workspace {root}: work is kept on this machine's disk.")
    mount = mount_point(root)
    if mount != Path("/"):
        return Persistence(True, "Work saved here is kept across restarts of this Space.",
                           f"Workspace {root} is on the volume mounted at {mount}: work persists across restarts.")
    return Persistence(False, "⚠ This Space keeps work only until it restarts (no persistent storage is mounted).",
                       f"Workspace {root} is on the Space's own disk, wiped on restart: work will NOT persist. "
                       f"Mount a Storage Bucket and set {WORKSPACE_ENV} to its path.")


__all__ = ["WORKSPACE_ENV", "Persistence", "check_writable", "mount_point", "on_space", "persistence",
           "workspace_setting"]
