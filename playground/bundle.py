"""Checkpoint bundles: a self-describing folder that rebuilds model + tokenizer + config.

`models/<name>/` holds `model.safetensors`, `config.json`, `tokenizer.json` (text models) and
`metrics.csv`. Saving goes through `Workspace.writing` (temp dir + rename); loading never
unpickles. A process-wide, lock-guarded cache keyed by (path, mtime) serves the app's users.
"""
from __future__ import annotations

import copy
import csv
import json
import threading
from dataclasses import asdict, dataclass, is_dataclass
from pathlib import Path
from typing import Any

from safetensors.torch import load_model, save_model
from tokenizers import Tokenizer
from torch import nn

from playground.errors import NotFoundError, PlaygroundError
from playground.families import get_family
from playground.models.base import ModelConfig
from playground.models.unwrap import unwrap_model
from playground.workspace import Workspace, write_json

BUNDLE_FORMAT = 1


@dataclass
class Bundle:
    """A loaded checkpoint: the model in eval mode plus everything needed to use it."""

    name: str
    path: Path
    family: str
    model: nn.Module
    model_config: ModelConfig
    config: dict[str, Any]
    tokenizer: Tokenizer | None

    @property
    def class_names(self) -> list[str] | None:
        """Class names of image models (stored in config.json), else None."""
        return self.config.get("class_names")

    @property
    def metrics_path(self) -> Path:
        return self.path / "metrics.csv"


def _config_dict(cfg: ModelConfig | dict[str, Any]) -> dict[str, Any]:
    if hasattr(cfg, "to_dict"):
        return cfg.to_dict()
    if is_dataclass(cfg):
        return asdict(cfg)
    return dict(cfg)


def save_bundle(
    workspace: Workspace,
    name: str,
    model: nn.Module,
    family: str,
    model_config: ModelConfig,
    *,
    train_config: dict[str, Any] | None = None,
    preset: str | None = None,
    data: dict[str, Any] | None = None,
    step: int = 0,
    metrics: dict[str, Any] | None = None,
    metrics_rows: list[dict[str, Any]] | None = None,
    tokenizer: Tokenizer | None = None,
    class_names: list[str] | None = None,
    extra: dict[str, Any] | None = None,
    overwrite: bool = True,
) -> Path:
    """Write a bundle atomically and return its folder. State-dict keys are saved clean."""
    plain = unwrap_model(model)
    config = {
        "format": BUNDLE_FORMAT,
        "family": family,
        "model": _config_dict(model_config),
        "train": train_config or {},
        "preset": preset,
        "data": data or {},
        "step": int(step),
        "metrics": metrics or {},
        "class_names": class_names,
        **(extra or {}),
    }
    with workspace.writing("models", name, overwrite=overwrite) as tmp:
        state_device = next(plain.parameters()).device
        if state_device.type != "cpu":
            plain = _cpu_copy(plain)
        save_model(plain, str(tmp / "model.safetensors"), metadata={"family": family})
        write_json(tmp / "config.json", config)
        if tokenizer is not None:
            (tmp / "tokenizer.json").write_text(tokenizer.to_str(), encoding="utf-8")
        write_metrics_csv(tmp / "metrics.csv", metrics_rows or [])
    return workspace.path("models", name)


def _cpu_copy(model: nn.Module) -> nn.Module:
    return copy.deepcopy(model).to("cpu")


def write_metrics_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    """One row per evaluation; columns are the union of the rows' keys in first-seen order."""
    columns: list[str] = []
    for row in rows:
        columns.extend(k for k in row if k not in columns)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns or ["step"])
        writer.writeheader()
        writer.writerows(rows)


def read_metrics_csv(path: Path) -> list[dict[str, Any]]:
    """Rows of metrics.csv with numbers parsed (empty list when absent)."""
    if not Path(path).is_file():
        return []
    with open(path, newline="", encoding="utf-8") as fh:
        return [{k: _number(v) for k, v in row.items()} for row in csv.DictReader(fh)]


def _number(value: str) -> Any:
    if value is None or value == "":
        return None
    try:
        f = float(value)
    except ValueError:
        return value
    return int(f) if f.is_integer() and "." not in value and "e" not in value.lower() else f


def resolve_bundle_path(checkpoint: str | Path, workspace: Workspace | None = None) -> Path:
    """A bundle folder from a path or a model name in the workspace.

    A user's space in the app (`names_only`) accepts names only: no typed path reaches the disk.
    """
    if getattr(workspace, "names_only", False):
        return workspace.get("models", str(checkpoint)).path
    path = Path(checkpoint)
    if (path / "config.json").is_file():
        return path
    if workspace is not None and "/" not in str(checkpoint) and "\\" not in str(checkpoint):
        return workspace.get("models", str(checkpoint)).path
    raise NotFoundError(
        f"No checkpoint at {str(checkpoint)!r}: give a model name from the workspace "
        "(`python -m playground list`) or a folder holding config.json and model.safetensors."
    )


def load_bundle(checkpoint: str | Path, workspace: Workspace | None = None, device: str = "cpu") -> Bundle:
    """Rebuild model, tokenizer and config from a bundle folder (or a workspace model name)."""
    path = resolve_bundle_path(checkpoint, workspace)
    try:
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise PlaygroundError(f"Checkpoint {path.name!r} has an unreadable config.json ({exc}); retrain or re-export it.") from exc
    family = get_family(config.get("family", ""))
    model_config = family.config_cls.from_dict(config["model"])
    model = family.model_cls(model_config)
    weights = path / "model.safetensors"
    if not weights.is_file():
        raise NotFoundError(f"Checkpoint {path.name!r} has no model.safetensors.")
    try:
        load_model(model, str(weights), strict=True, device="cpu")
    except (RuntimeError, ValueError, KeyError) as exc:
        raise PlaygroundError(f"Weights of {path.name!r} do not match its config ({str(exc)[:200]}).") from exc
    model.to(device).eval()
    tokenizer = None
    if (path / "tokenizer.json").is_file():
        tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
    return Bundle(path.name, path, family.name, model, model_config, config, tokenizer)


_cache: dict[tuple[str, str], tuple[float, Bundle]] = {}
_cache_lock = threading.Lock()
CACHE_SIZE = 8


def cached_bundle(checkpoint: str | Path, workspace: Workspace | None = None, device: str = "cpu") -> Bundle:
    """A shared, read-only bundle keyed by (path, device) and the weights' mtime.

    Callers must not train or mutate the returned model; attention recording/overriding is
    per-thread (context variables), so concurrent users can share it safely.
    """
    path = resolve_bundle_path(checkpoint, workspace).resolve()
    mtime = (path / "model.safetensors").stat().st_mtime
    key = (str(path), device)
    with _cache_lock:
        hit = _cache.get(key)
        if hit is not None and hit[0] == mtime:
            return hit[1]
        bundle = load_bundle(path, device=device)
        for param in bundle.model.parameters():
            param.requires_grad_(False)
        _cache[key] = (mtime, bundle)
        while len(_cache) > CACHE_SIZE:
            _cache.pop(next(iter(_cache)))
        return bundle
