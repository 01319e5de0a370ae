"""Checkpoints of a run: the bundle (playground.bundle.save_bundle) plus what resuming needs.

Besides model.safetensors / config.json / tokenizer.json / metrics.csv a training bundle holds

- `train_state.safetensors`: optimizer tensors (`optim.<param index>.<name>`, e.g. Adam's
  exp_avg, exp_avg_sq, step) and the states of the run's own generators (`rng.<stream>`:
  `rng.init`, `rng.dropout`; bundles from before #14 hold torch's global `rng.cpu` / `rng.cuda`
  instead) — tensors only, never pickled;
- `train_state.json`: the optimizer's param groups and non-tensor state, the scheduler's
  state_dict, the step and the preset sections the run was resolved from.

- `train_log.csv`: one row per step event (step, train_loss, lr, grad_norm, throughput), the
  curve the Train tab drew live, so a resumed run's chart continues it from its first step.

All are written inside the same atomic bundle write (temp dir + rename), so a crash mid-write
leaves the previous checkpoint whole. With train.save_optimizer = false they are left out
(smaller demo bundles); such a bundle cannot be resumed exactly and resume says so.
"""
from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file
from tokenizers import Tokenizer

from playground.bundle import read_metrics_csv, save_bundle, write_metrics_csv
from playground.errors import NotFoundError, PlaygroundError
from playground.training.trackers import copy_folder
from playground.workspace import Workspace, write_json

STATE_TENSORS = "train_state.safetensors"
STATE_JSON = "train_state.json"
TRAIN_LOG = "train_log.csv"
LOG_COLUMNS = ["step", "train_loss", "lr", "grad_norm", "throughput"]


def optimizer_state_to_files(optimizer: torch.optim.Optimizer) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """Split an optimizer state_dict into safetensors-ready tensors and JSON-ready scalars."""
    sd = optimizer.state_dict()
    tensors: dict[str, torch.Tensor] = {}
    scalars: dict[str, dict[str, Any]] = {}
    for idx, state in sd["state"].items():
        for key, value in state.items():
            if isinstance(value, torch.Tensor):
                tensors[f"optim.{idx}.{key}"] = value.detach().to("cpu").contiguous()
            else:
                scalars.setdefault(str(idx), {})[key] = value
    groups = [{k: (list(v) if isinstance(v, tuple) else v) for k, v in g.items()} for g in sd["param_groups"]]
    return tensors, {"param_groups": groups, "scalars": scalars}


def optimizer_state_from_files(optimizer: torch.optim.Optimizer, tensors: dict[str, torch.Tensor],
                               meta: dict[str, Any]) -> None:
    """Load what :func:`optimizer_state_to_files` wrote back into `optimizer`."""
    state: dict[int, dict[str, Any]] = {}
    for key, value in tensors.items():
        if not key.startswith("optim."):
            continue
        _, idx, name = key.split(".", 2)
        state.setdefault(int(idx), {})[name] = value
    for idx, values in meta.get("scalars", {}).items():
        state.setdefault(int(idx), {}).update(values)
    groups = []
    for g in meta["param_groups"]:
        g = dict(g)
        if "betas" in g:
            g["betas"] = tuple(g["betas"])
        groups.append(g)
    optimizer.load_state_dict({"state": state, "param_groups": groups})


class _WithExtraFiles:
    """A Workspace view whose `writing()` adds files to the temp folder before it is renamed."""

    def __init__(self, workspace: Workspace, write_extra: Callable[[Path], None]) -> None:
        self._ws = workspace
        self._write_extra = write_extra

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ws, name)

    @contextlib.contextmanager
    def writing(self, kind: str, name: str, overwrite: bool = False) -> Iterator[Path]:
        with self._ws.writing(kind, name, overwrite=overwrite) as tmp:
            yield tmp
            self._write_extra(tmp)


@dataclass
class ResumeState:
    """What a bundle holds to continue its run."""

    name: str
    path: Path
    sections: dict[str, Any]  # preset sections the run was resolved from
    preset_name: str
    step: int
    rows: list[dict[str, Any]]
    tokenizer: Tokenizer | None
    log: list[dict[str, Any]] = field(default_factory=list)  # train_log.csv (empty for older bundles)
    tensors: dict[str, torch.Tensor] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    elapsed_s: float = 0.0

    @property
    def has_optimizer(self) -> bool:
        return bool(self.meta.get("optimizer"))


def save_checkpoint(
    workspace: Workspace,
    name: str,
    *,
    model: torch.nn.Module,
    family: str,
    model_config: Any,
    sections: dict[str, Any],
    preset_name: str,
    train_config: dict[str, Any],
    data: dict[str, Any],
    step: int,
    rows: list[dict[str, Any]],
    summary: dict[str, Any],
    tokenizer: Tokenizer | None,
    class_names: list[str] | None,
    optimizer: torch.optim.Optimizer | None,
    scheduler: Any | None,
    run_info: dict[str, Any],
    generators: dict[str, torch.Generator] | None = None,
    log: list[dict[str, Any]] | None = None,
    tracker_folder: Path | None = None,
) -> Path:
    """Write the bundle `name` atomically (weights, config, tokenizer, metrics, train state).

    `generators`: the run's random streams, saved as `rng.<name>` (resumed by the engine);
    `log`: the run's step events as TRAIN_LOG rows; `tracker_folder`: a tracker's files the bundle
    keeps (TensorBoard's event files, as `tensorboard/`).
    """

    def write_extra(tmp: Path) -> None:
        copy_folder(tracker_folder, tmp)
        if log is not None:
            write_metrics_csv(tmp / TRAIN_LOG, [{k: row.get(k) for k in LOG_COLUMNS} for row in log])
        if optimizer is None:  # train.save_optimizer = false: a lighter, non-resumable bundle
            return
        meta: dict[str, Any] = {"step": step, "sections": sections, "preset": preset_name}
        tensors: dict[str, torch.Tensor] = {f"rng.{k}": g.get_state() for k, g in (generators or {}).items()}
        if optimizer is not None:
            opt_tensors, opt_meta = optimizer_state_to_files(optimizer)
            tensors.update(opt_tensors)
            meta["optimizer"] = opt_meta
        if scheduler is not None:
            meta["scheduler"] = scheduler.state_dict()
        save_file(tensors, str(tmp / STATE_TENSORS))
        write_json(tmp / STATE_JSON, meta)

    return save_bundle(
        # a duck-typed Workspace view: writing() is overridden, __getattr__ forwards the rest
        _WithExtraFiles(workspace, write_extra),  # type: ignore[arg-type]
        name, model, family, model_config,
        train_config=train_config, preset=preset_name, data=data, step=step, metrics=summary,
        metrics_rows=rows, tokenizer=tokenizer, class_names=class_names,
        extra={"run": run_info, "sections": sections}, overwrite=True,
    )


def load_resume_state(workspace: Workspace, name: str) -> ResumeState:
    """Read a run's bundle for resuming; NotFoundError / PlaygroundError say what is missing."""
    if not workspace.exists("models", name):
        have = ", ".join(workspace.names("models")) or "none yet"
        raise NotFoundError(f"No checkpoint named {name!r} to resume (have: {have}).")
    path = workspace.path("models", name)
    config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    sections = config.get("sections")
    if config.get("pretrained"):
        raise PlaygroundError(f"{name!r} is an imported pretrained model: it is read-only and has no run to resume. "
                              "Fine-tune from it instead (a new run with data.init_from).")
    if not sections:
        raise PlaygroundError(f"Checkpoint {name!r} was not written by the trainer (no preset sections); "
                              "start a new run from a preset instead.")
    tokenizer = None
    if (path / "tokenizer.json").is_file():
        tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
    tensors: dict[str, torch.Tensor] = {}
    meta: dict[str, Any] = {}
    if (path / STATE_TENSORS).is_file() and (path / STATE_JSON).is_file():
        tensors = load_file(str(path / STATE_TENSORS))
        meta = json.loads((path / STATE_JSON).read_text(encoding="utf-8"))
    return ResumeState(
        name=name, path=path, sections=sections, preset_name=config.get("preset") or name,
        step=int(config.get("step", 0)), rows=read_metrics_csv(path / "metrics.csv"), tokenizer=tokenizer,
        log=read_metrics_csv(path / TRAIN_LOG), tensors=tensors, meta=meta,
        elapsed_s=float((config.get("run") or {}).get("elapsed_s", 0.0)),
    )
