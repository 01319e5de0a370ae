"""The Generate tab's examples from a checkpoint's validation split, rebuilt by its family's
``examples`` from the data description in its config.json (the trainer stores the `[data]`
section plus split facts there).

Only where it is cheap: generated pair sets and image sets are rebuilt from their seed; a text
corpus is read only when it is built in (tinyshakespeare included: it ships with the package; an
install without that file gives no samples rather than downloading it) or the user's own upload.
No path recorded in a bundle is opened: only ``upload:<name>`` files of the user's upload folder,
and only for the user's own checkpoints (playground.data.policy). Results are cached per
(bundle path, weights mtime, upload folder) — read-only derived data, shared by users.
"""
from __future__ import annotations

import functools
import threading
from pathlib import Path
from typing import Any

from playground.bundle import Bundle
from playground.data.examples import Example
from playground.data.policy import DataPolicy, uploads_dir
from playground.errors import PlaygroundError
from playground.families import get_family
from playground.workspace import Workspace

_lock = threading.Lock()


def validation_samples(bundle: Bundle, workspace: Workspace | None = None, n: int = 20) -> list[Example]:
    """Up to `n` validation examples of the bundle's data (its family's `examples`), or [] when
    not cheaply available.

    Data comes from the built-in sets, or from uploads in `workspace`'s upload folder when the
    bundle is one of the workspace's own checkpoints; a file path recorded in the bundle is never read.
    """
    path = Path(bundle.path)
    try:
        mtime = (path / "model.safetensors").stat().st_mtime
    except OSError:
        mtime = 0.0
    root = str(getattr(workspace, "root", "")) if workspace is not None else ""
    uploads = uploads_dir(workspace) if root and _inside(path, Path(root)) else None
    with _lock:
        return list(_cached(str(path), mtime, root, str(uploads or ""), n, bundle.family,
                            _freeze(bundle.config.get("data") or {}), _freeze(bundle.model_config.to_dict())))


def _inside(path: Path, root: Path) -> bool:
    try:
        return path.resolve().is_relative_to(root.resolve())
    except OSError:
        return False


def _freeze(d: dict[str, Any]) -> tuple:
    return tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in d.items()
                        if isinstance(v, (str, int, float, bool, list, type(None)))))


def _thaw(items: tuple) -> dict[str, Any]:
    return {k: list(v) if isinstance(v, tuple) else v for k, v in items}


@functools.lru_cache(maxsize=16)
def _cached(path: str, mtime: float, root: str, uploads: str, n: int, family: str, data: tuple,
            model: tuple) -> tuple[Example, ...]:
    workspace = Workspace(root) if root else None
    policy = DataPolicy(allow_paths=False, uploads=Path(uploads) if uploads else None)
    try:
        return tuple(get_family(family).examples.for_generate(_thaw(data), n, _thaw(model), workspace, policy))
    except (PlaygroundError, OSError, ValueError, KeyError, TypeError, ImportError):
        return ()
