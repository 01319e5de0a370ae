"""Examples from a checkpoint's validation split, rebuilt from the data description in its
config.json (the trainer stores the `[data]` section plus split facts there).

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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from playground.errors import PlaygroundError


@dataclass(frozen=True)
class Sample:
    """One validation example: a label for the picker, the input, and the reference output."""

    label: str
    input: Any  # str (GPT prompt / seq2seq source) or a numpy image [H,W,C] uint8 (ViT)
    reference: str | None = None  # seq2seq target / ViT class name


_lock = threading.Lock()


def validation_samples(bundle: Any, workspace: Any = None, n: int = 20) -> list[Sample]:
    """Up to `n` validation examples of the bundle's data, or [] when not cheaply available.

    Data comes from the built-in sets, or from uploads in `workspace`'s upload folder when the
    bundle is one of the workspace's own checkpoints; a file path recorded in the bundle is never read.
    """
    from playground.data.policy import uploads_dir

    path = Path(bundle.path)
    try:
        mtime = (path / "model.safetensors").stat().st_mtime
    except OSError:
        mtime = 0.0
    root = str(getattr(workspace, "root", "")) if workspace is not None else ""
    uploads = uploads_dir(workspace) if root and _inside(path, Path(root)) else None
    with _lock:
        return list(_cached(str(path), mtime, root, str(uploads or ""), n, bundle.family,
                            _freeze(bundle.config.get("data") or {}),
                            _freeze({"block_size": getattr(bundle.model_config, "block_size", 64)})))


def _inside(path: Path, root: Path) -> bool:
    try:
        return path.resolve().is_relative_to(root.resolve())
    except OSError:
        return False


def _freeze(d: dict[str, Any]) -> tuple:
    return tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in d.items()
                        if isinstance(v, (str, int, float, bool, list, type(None)))))


@functools.lru_cache(maxsize=16)
def _cached(path: str, mtime: float, root: str, uploads: str, n: int, family: str, data: tuple,
            extra: tuple) -> tuple[Sample, ...]:
    from playground.data.policy import DataPolicy
    from playground.workspace import Workspace

    cfg = {k: list(v) if isinstance(v, tuple) else v for k, v in data}
    workspace = Workspace(root) if root else None
    policy = DataPolicy(allow_paths=False, uploads=Path(uploads) if uploads else None)
    try:
        if family == "gpt":
            return tuple(_text_samples(cfg, workspace, n, dict(extra)["block_size"], policy))
        if family == "vit":
            return tuple(_image_samples(cfg, n, policy))
        return tuple(_pair_samples(cfg, n, policy))
    except (PlaygroundError, OSError, ValueError, KeyError, TypeError, ImportError):
        return ()


def _pair_samples(cfg: dict[str, Any], n: int, policy: Any) -> list[Sample]:
    from playground.data.pairs import load_pair_set
    from playground.data.splits import split_indices

    name = cfg.get("pairs")
    if not name or name == "tsv" and not cfg.get("path"):
        return []
    opts: dict[str, Any] = {}
    if name == "tsv":
        opts["path"] = policy.resolve(cfg["path"], "data.path")  # uploads only
    else:
        for key in ("min_len", "max_len"):
            if cfg.get(key):
                opts[key] = cfg[key]
    examples = load_pair_set(name, cfg.get("n") or None, int(cfg.get("seed", 0)), **opts)
    _, val = split_indices(len(examples), float(cfg.get("val_fraction", 0.1)), int(cfg.get("seed", 0)))
    return [Sample(f"{examples[i].src} → {examples[i].tgt}", examples[i].src, examples[i].tgt) for i in val[:n]]


def _image_samples(cfg: dict[str, Any], n: int, policy: Any) -> list[Sample]:
    from playground.data.images import load_image_set
    from playground.data.splits import split_indices

    name = cfg.get("dataset")
    if not name:
        return []
    opts: dict[str, Any] = {}
    if name == "shapes":
        opts = {"image_size": cfg.get("image_size", 32), "classes": list(cfg.get("classes") or [])} if cfg.get("classes") else {"image_size": cfg.get("image_size", 32)}
    elif name == "zip":
        if not cfg.get("path"):
            return []
        opts = {"path": policy.resolve(cfg["path"], "data.path"), "image_size": cfg.get("image_size", 32)}  # uploads only
    seed = int(cfg.get("seed", 0))
    images = load_image_set(name, cfg.get("n") or None, seed, **opts)
    _, val = split_indices(images.n, float(cfg.get("val_fraction", 0.2)), seed)
    out = []
    for i in val[:n]:
        img = images.images[i]  # [C,H,W] in [0,1]
        label = images.class_names[int(images.labels[i])]
        out.append(Sample(f"#{i} ({label})", display_image(img.numpy()), label))
    return out


def display_image(chw: np.ndarray, min_size: int = 128) -> np.ndarray:
    """[C,H,W] floats in [0,1] -> [H',W',C] uint8, upscaled by an integer factor (nearest) so a
    small image is visible; resizing it back (antialiased) gives the original pixels."""
    arr = np.transpose(chw, (1, 2, 0))
    factor = max(1, min_size // max(arr.shape[0], 1))
    arr = np.repeat(np.repeat(arr, factor, axis=0), factor, axis=1)
    if arr.shape[2] == 1:
        arr = np.repeat(arr, 3, axis=2)
    return (np.clip(arr, 0, 1) * 255).round().astype(np.uint8)


def _no_fetch(url: str) -> bytes:
    from playground.errors import OfflineError

    raise OfflineError("not downloading for validation samples")


def _text_samples(cfg: dict[str, Any], workspace: Any, n: int, block_size: int, policy: Any) -> list[Sample]:
    from playground.data.corpora import load_corpus

    corpus = cfg.get("corpus")
    if not corpus or not isinstance(corpus, str):
        return []
    text = load_corpus(corpus, workspace=workspace, fetch=_no_fetch, policy=policy).text  # built in or uploads only
    if cfg.get("max_chars"):
        text = text[: int(cfg["max_chars"])]
    val = text[int(len(text) * (1 - float(cfg.get("val_fraction", 0.1)))) :]
    length = max(8, min(120, block_size))
    starts = [i + 1 for i, c in enumerate(val[:-length]) if c == "\n" and val[i + 1 : i + 2].strip()]
    if not starts:
        starts = list(range(0, max(1, len(val) - length), max(1, len(val) // (n + 1))))
    step = max(1, len(starts) // n)
    out = []
    for s in starts[::step][:n]:
        piece = val[s : s + length]
        piece = piece[: piece.rfind("\n")] if "\n" in piece[length // 3 :] else piece
        first = piece.strip().splitlines()[0] if piece.strip() else piece
        out.append(Sample(first[:60], piece))
    return out
