"""Where a run also reports its curves: Trackio, TensorBoard or Weights & Biases, chosen by the
preset's `[log]` table (`tracker = "trackio" | "tensorboard" | "wandb" | "none"`, `project = ...`).

The playground's own curves (train_log.csv, metrics.csv) are always written; a tracker is a copy
for the dashboard a lab already uses. Each is an optional package, imported only by a run that
asks for it; a missing one, or one this server does not allow (a public server keeps runs in
their own folder: TensorBoard only), is refused before the run takes a slot, in one line.

- **TensorBoard**: event files written during the run into a temp folder and copied into the
  run's bundle (`<run>/tensorboard/`) at every checkpoint, so they are replaced atomically with it
  and follow the bundle when it is shared or downloaded; a resumed run continues the same files.
- **Trackio** (local-first, a Gradio dashboard: `trackio show --project NAME`): one run per run
  name in `project` (default "playground"); a workshop points everyone at one project. Its data
  go where Trackio keeps them (`TRACKIO_DIR`, default the Hugging Face cache).
- **Weights & Biases**: `wandb.init(project=..., name=...)` as configured on this machine
  (`wandb login`, or WANDB_MODE=offline to keep the run for a later `wandb sync`).
"""
from __future__ import annotations

import contextlib
import importlib.util
import json
import math
import re
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from playground.errors import ConfigError

TRACKERS = ("none", "tensorboard", "trackio", "wandb")
PACKAGES = {"tensorboard": "tensorboard", "trackio": "trackio", "wandb": "wandb"}
TB_FOLDER = "tensorboard"  # inside the run's bundle
PROJECT_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


@dataclass
class LogConfig:
    """The `[log]` table: which tracker the run also reports to, and its project there."""

    tracker: str = "none"
    project: str = "playground"

    def __post_init__(self) -> None:
        if self.tracker not in TRACKERS:
            raise ConfigError(f"log.tracker must be one of {', '.join(repr(t) for t in TRACKERS)}, got {self.tracker!r}.")
        if not PROJECT_PATTERN.fullmatch(self.project):
            raise ConfigError(f"log.project must be 1-64 letters, digits, '.', '_' or '-' (starting with a letter "
                              f"or digit), got {self.project!r}.")


def check_tracker(cfg: LogConfig, allowed: tuple[str, ...] = TRACKERS) -> None:
    """ConfigError unless this server allows `cfg.tracker` and its package is installed."""
    if cfg.tracker not in allowed:
        raise ConfigError(f'[log] tracker = "{cfg.tracker}" is not available on this server (it allows '
                          f'{", ".join(repr(t) for t in allowed)}); set tracker = "none" or "tensorboard".')
    package = PACKAGES.get(cfg.tracker)
    if package is not None and importlib.util.find_spec(package) is None:
        raise ConfigError(f'[log] tracker = "{cfg.tracker}" needs the {package} package, which is not installed here: '
                          f'pip install "transformer-playground[trackers]" (or pip install {package}), '
                          'or set tracker = "none".')


def scalars(values: Mapping[str, Any]) -> dict[str, float]:
    """The finite numbers among `values` (a tracker gets no None, NaN or text)."""
    return {k: float(v) for k, v in values.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)}


class Tracker(Protocol):
    """What the engine reports to; `folder()` is what the run's bundle keeps of it (or None)."""

    def log(self, step: int, values: Mapping[str, Any]) -> None: ...
    def folder(self) -> Path | None: ...
    def finish(self, summary: Mapping[str, Any]) -> None: ...


class NoTracker:
    """`tracker = "none"`: reports nowhere else."""

    def log(self, step: int, values: Mapping[str, Any]) -> None:
        return None

    def folder(self) -> Path | None:
        return None

    def finish(self, summary: Mapping[str, Any]) -> None:
        return None


class TensorBoardTracker:
    """Event files through torch's SummaryWriter, in a temp folder the checkpoints copy."""

    def __init__(self, run_name: str, config: Mapping[str, Any], previous: Path | None, resume_step: int) -> None:
        from torch.utils.tensorboard import SummaryWriter  # optional: the tensorboard package

        self._dir = Path(tempfile.mkdtemp(prefix="playground-tb-"))
        if previous is not None and previous.is_dir():  # a resumed run continues its own files
            shutil.copytree(previous, self._dir, dirs_exist_ok=True)
        # purge_step: readers drop what an older copy of the files logged after the resume step
        # (events at steps >= purge_step, from a run that went on past its last checkpoint)
        self._writer = SummaryWriter(log_dir=str(self._dir), purge_step=resume_step + 1 if resume_step else None)
        if not resume_step:
            self._writer.add_text("config", _json_block(config), 0)
        self._name = run_name

    def log(self, step: int, values: Mapping[str, Any]) -> None:
        for key, value in scalars(values).items():
            self._writer.add_scalar(key, value, step)

    def folder(self) -> Path | None:
        self._writer.flush()
        return self._dir

    def finish(self, summary: Mapping[str, Any]) -> None:
        self._writer.add_text("summary", _json_block(summary), int(summary.get("step") or 0))
        self._writer.close()
        shutil.rmtree(self._dir, ignore_errors=True)


class TrackioTracker:
    """A Trackio run named as the playground's run, in `project`."""

    def __init__(self, project: str, run_name: str, config: Mapping[str, Any], resume: bool) -> None:
        import trackio  # optional: the trackio package

        self._run = trackio.init(project=project, name=run_name, config=dict(config),
                                 resume="allow" if resume else "never", embed=False,
                                 auto_log_cpu=False, auto_log_gpu=False)

    def log(self, step: int, values: Mapping[str, Any]) -> None:
        self._run.log(scalars(values), step=step)

    def folder(self) -> Path | None:
        return None

    def finish(self, summary: Mapping[str, Any]) -> None:
        self._run.finish()


class WandbTracker:
    """A Weights & Biases run, as wandb is configured on this machine."""

    def __init__(self, project: str, run_name: str, config: Mapping[str, Any], resume: bool) -> None:
        import wandb  # optional: the wandb package

        try:
            self._run = wandb.init(project=project, name=run_name, config=dict(config),
                                   resume="allow" if resume else None)
        except Exception as exc:  # noqa: BLE001 - wandb's own errors (not logged in, offline): one line
            raise ConfigError(f"Weights & Biases did not start ({type(exc).__name__}: {exc}); run `wandb login`, "
                              'or set WANDB_MODE=offline, or [log] tracker = "none".') from None

    def log(self, step: int, values: Mapping[str, Any]) -> None:
        self._run.log(scalars(values), step=step)

    def folder(self) -> Path | None:
        return None

    def finish(self, summary: Mapping[str, Any]) -> None:
        self._run.summary.update(scalars(summary))
        self._run.finish()


def open_tracker(cfg: LogConfig, run_name: str, config: Mapping[str, Any], *, previous: Path | None = None,
                 resume_step: int = 0) -> Tracker:
    """The tracker `cfg` names, started for this run (`previous`: the bundle's TensorBoard folder
    of a resumed run; `resume_step`: the step it resumes at, 0 for a new run)."""
    if cfg.tracker == "tensorboard":
        return TensorBoardTracker(run_name, config, previous, resume_step)
    if cfg.tracker == "trackio":
        return TrackioTracker(cfg.project, run_name, config, resume_step > 0)
    if cfg.tracker == "wandb":
        return WandbTracker(cfg.project, run_name, config, resume_step > 0)
    return NoTracker()


def copy_folder(source: Path | None, bundle_tmp: Path) -> None:
    """Copy a tracker's folder into a bundle being written (its temp folder, before the atomic rename)."""
    if source is not None and source.is_dir():
        shutil.copytree(source, bundle_tmp / TB_FOLDER, dirs_exist_ok=True)


def finish_quietly(tracker: Tracker, summary: Mapping[str, Any]) -> None:
    """Finish `tracker`; a tracker failing at the end never hides how the run itself ended."""
    with contextlib.suppress(Exception):
        tracker.finish(summary)


def _json_block(values: Mapping[str, Any]) -> str:
    return "```json\n" + json.dumps(values, indent=2, default=str) + "\n```"


__all__ = ["LogConfig", "NoTracker", "TB_FOLDER", "TRACKERS", "Tracker", "check_tracker", "copy_folder",
           "finish_quietly", "open_tracker", "scalars"]
