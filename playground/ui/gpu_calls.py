"""GPU work on a ZeroGPU Space: `spaces.GPU`-decorated calls made from the request handler's thread.

playground.zerogpu says what the `spaces` wrapper does. Here are the decorated calls the tabs make
when `Settings.zerogpu` is on (off ZeroGPU the tabs keep their child processes and batching):

- `train_events(job)`: a training, a decorated generator whose yields (TrainEvents) stream back;
  it stops itself and saves `SAVE_MARGIN_S` before its GPU time ends.
- `generate_events(...)`: one generation, per request (no batching thread: a GPU exists only
  inside the call).
- `analyze(...)`: one per-input analysis. (Experiments: playground.ui.experiments_view.)

Every argument and yield is picklable plain data (names, dicts, the user's space, events): the
wrapper pickles them into and out of its forked worker, so a model, a lock or a callback never
crosses; each call loads its bundle inside. Durations are callables given the call's arguments:
the job's estimated GPU seconds, within the visitor's daily quota (`planned_training`).
"""
from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from playground.analysis.explain.per_input import analyze_checkpoint
from playground.bundle import cached_bundle
from playground.config import Preset
from playground.errors import PlaygroundError
from playground.families import get_family
from playground.generation.api import stream
from playground.limits import config_from_values
from playground.settings import resolve_device
from playground.training.engine import train
from playground.training.spec import resolve_run
from playground.zerogpu import (
    ANALYSIS_S,
    SAVE_MARGIN_S,
    call_seconds,
    generate_seconds,
    gpu,
    quota_s,
    step_seconds,
    steps_within,
    training_seconds,
)

# Seconds per step measured by this server's finished runs on the GPU, per (family, parameters,
# batch, sequence): the next estimate of the same model uses it.
_MEASURED: dict[tuple[Any, ...], float] = {}
_MEASURED_LOCK = threading.Lock()


@dataclass(frozen=True)
class TrainingPlan:
    """What one ZeroGPU training asks for: steps, seconds per step, the GPU seconds, and how many
    of its steps fit in them (the rest waits for a Resume)."""
    steps: int
    step_s: float
    measured: bool
    seconds: int
    quota: int
    fits_steps: int

    def note(self) -> str:
        """The line the Train tab shows before Start."""
        basis = "measured on this Space" if self.measured else "estimated from the model's size"
        text = (f"ZeroGPU: this run asks for ~{self.seconds} s of GPU time ({self.steps:,} steps × "
                f"{self.step_s * 1000:,.0f} ms, {basis}); your daily quota is {self.quota} s"
                + (" (sign in with Hugging Face for 300 s)" if self.quota < 300 else "") + ".")
        if self.fits_steps < self.steps:
            text += (f" Only ~{self.fits_steps:,} steps fit in one call: the run saves there and Resume continues "
                     "it (tomorrow, once the quota is spent).")
        return text


def _flops_per_step(family: str, model_values: dict[str, Any], train: Any) -> tuple[float | None, tuple[Any, ...]]:
    """FLOPs of one optimizer step of the run, and the key its measured step time is kept under."""
    fam = get_family(family)
    config = config_from_values(family, model_values)
    batch = int(getattr(train, "batch_size", 1)) * int(getattr(train, "grad_accum", 1))
    if config is None:
        return None, (family, None, batch)
    params = fam.sizes.count_parameters(config)
    seq = fam.sizes.sequence_length(config)
    per_unit = fam.sizes.train_flops_per_unit(config) or 6 * params
    units = batch * (seq if fam.adapter.unit == "tokens" else 1)
    return float(per_unit) * units, (family, params, batch, seq)


def planned_training(preset: Preset | None, max_steps_cap: int | None, user_key: str | None,
                     resume_meta: dict[str, Any] | None = None) -> TrainingPlan:
    """The GPU time one training asks for: steps (capped by the server) × seconds per step (this
    server's measurement of the model, a resumed run's own, else the FLOPs estimate), plus start-up
    and the save, within the visitor's quota."""
    quota = quota_s(user_key)
    measured: float | None = None
    if preset is not None:
        spec = resolve_run(preset)
        steps = int(spec.train.max_steps)
        flops, key = _flops_per_step(spec.family, preset.model, spec.train)
        with _MEASURED_LOCK:
            measured = _MEASURED.get(key)
    else:  # Resume: the run's own checkpoint says how fast it went and where it stands
        meta = resume_meta or {}
        train = meta.get("train") or {}
        steps = max(0, int(train.get("max_steps", 0)) - int(meta.get("step", 0)))
        info = meta.get("run") or {}
        done = int(meta.get("step", 0))
        measured = float(info.get("elapsed_s", 0.0)) / done if done else None
        flops = None
    if max_steps_cap:
        steps = min(steps, int(max_steps_cap))
    step_s = step_seconds(flops, measured)
    seconds = call_seconds(training_seconds(steps, step_s), quota)
    return TrainingPlan(steps, step_s, measured is not None, seconds, quota, min(steps, steps_within(quota, step_s)))


def _plan_of(job: dict[str, Any]) -> TrainingPlan:
    workspace = job["workspace"]
    meta = None
    if job.get("preset") is None and workspace.exists("models", job["name"]):
        meta = workspace.get("models", job["name"]).meta
    return planned_training(job.get("preset"), job.get("max_steps_cap"), getattr(workspace, "key", None), meta)


def _train_gpu_s(job: dict[str, Any]) -> int:
    """The duration spaces asks the scheduler for (called with the decorated call's arguments)."""
    return _plan_of(job).seconds


@gpu(duration=_train_gpu_s)
def train_events(job: dict[str, Any]) -> Iterator[Any]:
    """Train with the GPU attached: the engine's events, stopping (and saving) SAVE_MARGIN_S before
    the GPU time asked for runs out. `job` is train_tab's keyword arguments for engine.train."""
    deadline = time.monotonic() + _plan_of(job).seconds - SAVE_MARGIN_S
    started = time.monotonic()
    last = None
    for event in train(**{**job, "device": _gpu_device()}, stop=lambda: time.monotonic() > deadline):
        last = event
        yield event
    if last is not None and last.step:
        record_step_time(job, (time.monotonic() - started) / max(1, last.step))


def record_step_time(job: dict[str, Any], step_s: float) -> None:
    """Keep a finished run's seconds per step for the next estimate of the same model."""
    preset = job.get("preset")
    if preset is None:
        return

    spec = resolve_run(preset)
    _, key = _flops_per_step(spec.family, preset.model, spec.train)
    with _MEASURED_LOCK:
        _MEASURED[key] = step_s


def _gpu_device() -> str:
    """cuda inside a ZeroGPU call (the GPU is attached there), else what this machine has."""
    return resolve_device("auto")


def _generate_gpu_s(workspace: Any, name: str, request: Any) -> int:
    rows = max(1, int(getattr(request, "num_samples", 1))) * max(1, int(getattr(request, "beam_width", 1)))
    return generate_seconds(int(getattr(request, "max_new_tokens", 1)), rows, quota_s(getattr(workspace, "key", None)))


@gpu(duration=_generate_gpu_s)
def generate_events(workspace: Any, name: str, request: Any) -> Iterator[Any]:
    """One generation with the GPU attached (per request: the batching thread cannot hold a ZeroGPU
    GPU): the events of playground.generation.api.stream."""
    yield from stream(cached_bundle(name, workspace, _gpu_device()), request)


def _analysis_gpu_s(workspace: Any, name: str, spec: Any, options: Any) -> int:
    return call_seconds(ANALYSIS_S, quota_s(getattr(workspace, "key", None)))


@gpu(duration=_analysis_gpu_s)
def analyze(workspace: Any, name: str, spec: Any, options: Any) -> Any:
    """One per-input analysis with the GPU attached (the InputAnalysis comes back pickled)."""
    device = _gpu_device()
    return analyze_checkpoint(cached_bundle(name, workspace, device), spec, options, device=device, private=True)


def check_plan(plan: TrainingPlan) -> None:
    """PlaygroundError when not one step fits in the visitor's quota."""
    if plan.fits_steps < 1:
        raise PlaygroundError(f"This model's steps take ~{plan.step_s:.1f} s each: none fits in a ZeroGPU call of "
                              f"{plan.quota} s. Make it smaller (model, batch, sequence).")


__all__ = ["TrainingPlan", "analyze", "check_plan", "generate_events", "planned_training", "record_step_time",
           "train_events"]
