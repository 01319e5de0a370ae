"""The training loop: a generator of :class:`TrainEvent`s, the same for every family and device.

    for event in train("nanogpt-cpu-tiny", workspace, "my-run", stop=stop_event):
        print(event.step, event.train_loss, event.val_loss)

Per-family work goes through playground.training.adapters; per-device choices through
playground.training.device. Stopping is per run: pass a threading.Event or a callable; closing
the generator (a UI's Stop) also stops it. Either way the run's bundle is written at the step it
stopped, and every checkpoint is written atomically, so the last good one is always loadable.
Under `torchrun` (any number of processes, one included) the model is wrapped in
DistributedDataParallel; each process takes its slice of the same global batch, so the loss
curve matches a single process. On a known GPU, step and eval events carry the run's model
FLOPs utilisation (playground.training.flops).

A run owns its randomness and never seeds torch's process-global RNG nor keeps a value drawn
from it (the app trains several users' runs in threads of one process): the weights are redrawn
from the run's "init" generator after the model is built, dropout masks come from its "dropout"
generator (on the run's device), batches from per-step generators
(playground.training.data.step_generator), the GPT preview's sample from its own generator.
Checkpoints keep the generators' states, so Resume continues the same masks without touching
any other run.
"""
from __future__ import annotations

import contextlib
import math
import os
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any, NamedTuple, cast

import torch
from safetensors.torch import load_model
from torch import nn

from playground.config import Preset
from playground.errors import ConfigError, PlaygroundError, TrainingError
from playground.families import build_model, get_family
from playground.limits import check_model_size, is_out_of_memory, too_big_on_oom
from playground.models.dropout import drawing_from, set_dropout_generator
from playground.models.init import init_weights
from playground.settings import resolve_device
from playground.stopping import StopFlag, is_stopped
from playground.training.adapters import FamilyAdapter, Prepared, Preview
from playground.training.checkpoint import (
    ResumeState,
    load_resume_state,
    optimizer_state_from_files,
    save_checkpoint,
)
from playground.training.config import TrainConfig, preset_from_sections
from playground.training.device import DeviceCaps, device_caps
from playground.training.flops import device_peak, mfu
from playground.training.optim import MuonAdamW, muon_param_groups
from playground.training.schedules import make_scheduler
from playground.training.spec import RunSpec, check_run_sizes, resolve_run
from playground.training.trackers import TB_FOLDER, NoTracker, Tracker, finish_quietly, open_tracker
from playground.workspace import Workspace, validate_name


@dataclass
class TrainEvent:
    """One report from a run.

    kind: "start" | "step" (every log_interval) | "eval" (metrics, preview, checkpoint written)
    | "stopped" (checkpoint written at `step`) | "done".
    """

    kind: str
    step: int
    max_steps: int
    train_loss: float | None = None
    val_loss: float | None = None
    lr: float | None = None
    grad_norm: float | None = None
    throughput: float | None = None  # `unit` per second, all processes together
    mfu: float | None = None  # model FLOPs utilisation of the GPU(s), where the GPU and family are known
    unit: str = "tokens"
    elapsed_s: float = 0.0  # training time of the run (resumed runs include earlier time)
    eta_s: float | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    preview: Preview | None = None
    checkpoint: str | None = None  # bundle name when one was written
    message: str = ""

    @property
    def progress(self) -> float:
        return self.step / max(1, self.max_steps)


@dataclass(frozen=True)
class DistInfo:
    """This process's place in a distributed run (torchrun sets RANK / WORLD_SIZE / LOCAL_RANK).

    ``launched``: started by torchrun, so the run is distributed (a process group, DDP) even with
    one process, which is how the DDP path is exercised on a single GPU.
    """

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    launched: bool = False

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        """Whether the run uses a process group (all-reduces, DDP)."""
        return self.launched or self.world_size > 1

    @classmethod
    def from_env(cls) -> DistInfo:
        return cls(int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1")),
                   int(os.environ.get("LOCAL_RANK", "0")), launched="TORCHELASTIC_RUN_ID" in os.environ)


class RandomStream(NamedTuple):
    """One of a run's generators: its seed is mixed from train.seed and ``salt``."""

    salt: int
    on_device: bool  # False: on the host


# "init" draws the weights on the host (models are built there), "dropout" the masks on the device.
RNG_STREAMS: dict[str, RandomStream] = {"init": RandomStream(0, False), "dropout": RandomStream(1, True)}
# Checkpoints written before runs had generators kept torch's global states, which dropout drew from.
LEGACY_RNG_KEYS: dict[tuple[str, str], str] = {("dropout", "cpu"): "rng.cpu", ("dropout", "cuda"): "rng.cuda"}


def _stream_seed(seed: int, salt: int, step: int = 0) -> int:
    """A generator seed from (train.seed, stream, step); stream 0 at step 0 is the seed itself."""
    return (seed + salt * 1_000_003 + step * 7919) % (2**63 - 1)


def run_generators(seed: int, device: str | torch.device) -> dict[str, torch.Generator]:
    """The run's generators (RNG_STREAMS), seeded from ``train.seed``."""
    out = {}
    for name, stream in RNG_STREAMS.items():
        g = torch.Generator(device=torch.device(device) if stream.on_device else "cpu")
        g.manual_seed(_stream_seed(seed, stream.salt))
        out[name] = g
    return out


def restore_generators(generators: dict[str, torch.Generator], tensors: dict[str, torch.Tensor],
                       seed: int, step: int) -> list[str]:
    """Set each generator to its saved state ``rng.<name>`` (notes say what could not be).

    A checkpoint from before runs had generators: the dropout stream continues from the saved
    global state of its device type (what dropout drew from then). A state of another device
    type (saved on a GPU, resumed on the CPU) cannot be loaded: the stream is reseeded from
    (seed, step) instead, so the resumed run is reproducible but not the uninterrupted one.
    """
    notes = []
    for name, g in generators.items():
        state = tensors.get(f"rng.{name}")
        if state is None:
            state = tensors.get(LEGACY_RNG_KEYS.get((name, g.device.type), ""))
        if state is None:
            continue
        try:
            g.set_state(state)
        except (RuntimeError, ValueError):
            g.manual_seed(_stream_seed(seed, RNG_STREAMS[name].salt, step))
            notes.append(f"the {name} random stream was saved on another device type and restarts from "
                         f"(seed, step {step}).")
    return notes


def make_optimizer(model: nn.Module, cfg: TrainConfig, caps: DeviceCaps) -> torch.optim.Optimizer:
    """AdamW / Adam / SGD; weight decay on matrices and embeddings only (nanoGPT's grouping).
    muon: torch.optim.Muon (train.muon_*) on the hidden matrices, AdamW on the rest (see
    playground.training.optim)."""
    if cfg.optimizer == "muon":
        hidden, rest = muon_param_groups(model)
        adamw_groups = [{"params": [p for p in rest if p.dim() >= 2], "weight_decay": cfg.weight_decay},
                        {"params": [p for p in rest if p.dim() < 2], "weight_decay": 0.0}]
        return MuonAdamW(adamw_groups, [{"params": hidden, "weight_decay": cfg.muon_weight_decay}], lr=cfg.lr,
                         betas=(cfg.beta1, cfg.beta2), eps=cfg.eps, muon_lr=cfg.muon_lr,
                         muon_momentum=cfg.muon_momentum, muon_weight_decay=cfg.muon_weight_decay,
                         ns_steps=cfg.muon_ns_steps, **caps.optimizer_kwargs("adamw"))
    params = [p for p in model.parameters() if p.requires_grad]
    decay = [p for p in params if p.dim() >= 2]
    no_decay = [p for p in params if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    extra = caps.optimizer_kwargs(cfg.optimizer)
    if cfg.optimizer == "adamw":
        return torch.optim.AdamW(groups, lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), eps=cfg.eps, **extra)
    if cfg.optimizer == "adam":
        for g in groups:
            g["weight_decay"] = 0.0
        return torch.optim.Adam(groups, lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), eps=cfg.eps, **extra)
    return torch.optim.SGD(groups, lr=cfg.lr, momentum=cfg.beta1)


def scoped_dropout(caps: DeviceCaps) -> bool:
    """Whether a run's dropout draws from the default generator scoped to the run (models/dropout.py):
    on a GPU (attention dropout inside the fused kernel) and under torch.compile (no graph breaks)."""
    return caps.device_type == "cuda" or caps.compile


@dataclass
class _Run:
    """Everything one run holds (kept together so checkpointing has one place to look)."""

    spec: RunSpec
    adapter: FamilyAdapter
    prep: Prepared
    model: nn.Module  # the plain module
    train_model: nn.Module  # possibly compiled / DDP-wrapped
    optimizer: torch.optim.Optimizer
    scheduler: Any
    caps: DeviceCaps
    dist: DistInfo
    workspace: Workspace
    name: str
    rows: list[dict[str, Any]]
    generators: dict[str, torch.Generator]  # the run's random streams (RNG_STREAMS)
    log: list[dict[str, Any]] = field(default_factory=list)  # one row per step event (checkpoint.TRAIN_LOG)
    step: int = 0
    elapsed_s: float = 0.0
    seen: int = 0  # tokens or samples trained on
    saved_step: int = -1
    saved_status: str = ""  # the status written with the checkpoint of saved_step
    tracker: Tracker = field(default_factory=NoTracker)  # where the run also reports ([log]; main process only)


def _summary(run: _Run, status: str) -> dict[str, Any]:
    last = run.rows[-1] if run.rows else {}
    out = {k: v for k, v in last.items() if k in ("val_loss", "train_loss", "accuracy", "exact_match", "token_accuracy")}
    rate = last.get(f"{run.adapter.unit}_per_s")
    if rate is not None:
        out[f"{run.adapter.unit}_per_s"] = rate
    buckets = [{"bucket": k.split("@", 1)[1], "exact_match": v, "token_accuracy": last.get(f"token_accuracy@{k.split('@', 1)[1]}"),
                "n": last.get(f"n@{k.split('@', 1)[1]}")} for k, v in last.items() if k.startswith("exact_match@")]
    if buckets:
        out["buckets"] = buckets
    out["status"] = status
    return out


def _save(run: _Run, status: str) -> str:
    cfg = run.spec.train
    save_checkpoint(
        run.workspace, run.name, model=run.model, family=run.spec.family, model_config=run.prep.model_config,
        sections=run.spec.sections(), preset_name=run.spec.name, train_config=cfg.to_dict(),
        data={**asdict(run.spec.data), **run.prep.info}, step=run.step, rows=run.rows,
        summary=_summary(run, status), tokenizer=run.prep.tokenizer, class_names=run.prep.class_names,
        optimizer=run.optimizer if cfg.save_optimizer else None,
        scheduler=run.scheduler if cfg.save_optimizer else None, generators=run.generators, log=run.log,
        tracker_folder=run.tracker.folder(),
        run_info={"status": status, "saved_at": round(time.time(), 3), "elapsed_s": round(run.elapsed_s, 3), "seen": run.seen,
                  "unit": run.adapter.unit,
                  "device": run.caps.describe(), "world_size": run.dist.world_size,
                  "parameters": sum(p.numel() for p in run.model.parameters())},
    )
    run.saved_step, run.saved_status = run.step, status
    return run.name


def _unsaved_stop(run: _Run) -> bool:
    """Whether a stop at this step must write a checkpoint: steps since the last one, or the last
    one is of this very step but says "running" (an evaluation's, just before the stop)."""
    return run.step > 0 and (run.step > run.saved_step or run.saved_status == "running")


def _setup(
    preset: Preset | str | None,
    workspace: Workspace,
    name: str,
    overrides: dict[str, Any] | list[str] | None,
    device: str,
    resume: bool,
    max_steps_cap: int | None,
    dist: DistInfo,
    limits: Any | None = None,
    policy: Any | None = None,
) -> tuple[_Run, list[str]]:
    notes: list[str] = []
    name = validate_name(name)
    state: ResumeState | None = None
    if resume:
        state = load_resume_state(workspace, name)
        if not state.has_optimizer:
            raise PlaygroundError(f"Checkpoint {name!r} was saved without optimizer state "
                                  "(train.save_optimizer = false), so it cannot be resumed exactly; "
                                  "start a new run instead.")
        stored = preset_from_sections(state.sections, state.preset_name)
        spec = resolve_run(stored, overrides, limits, check_steps=False)  # this server's caps, in its messages
        if spec.preset.model != stored.model or spec.preset.data != stored.data:
            raise ConfigError("A resumed run keeps its model and data; only [train] keys can change "
                              "(e.g. train.max_steps to train longer).")
    else:
        if preset is None:
            raise ConfigError("Give a preset to train (e.g. nanogpt-cpu-tiny).")
        spec = resolve_run(preset, overrides, limits, check_steps=False)
    cfg = spec.train
    if max_steps_cap is not None and cfg.max_steps > max_steps_cap:
        notes.append(f"max_steps capped at {max_steps_cap} (was {cfg.max_steps}) on this server.")
        cfg.max_steps = max_steps_cap
    check_run_sizes(spec, limits)  # this server's caps (resolve_run checked FULL_CAPS), before any data
    if state is not None and state.step >= cfg.max_steps:
        raise ConfigError(f"{name!r} is already at step {state.step} of train.max_steps = {cfg.max_steps}; "
                          f"raise it to continue (e.g. --set train.max_steps={cfg.max_steps * 2}).")
    if cfg.batch_size % dist.world_size:
        raise ConfigError(f"train.batch_size = {cfg.batch_size} must be a multiple of the {dist.world_size} processes.")

    family = get_family(spec.family)
    adapter = family.adapter
    dev = resolve_device(device)
    if dev == "cuda" and dist.distributed:
        dev = f"cuda:{dist.local_rank}"
        torch.cuda.set_device(dist.local_rank)
    caps = device_caps(dev, cfg.precision, cfg.compile)
    caps.apply_backend_flags()
    prep = adapter.prepare(spec.data, spec.preset.model, workspace, tokenizer=state.tokenizer if state else None,
                           limits=limits, policy=policy)

    check_model_size(spec.family, prep.model_config, cfg, limits, seq_len=family.sizes.longest_sequence(prep.payload))
    generators = run_generators(cfg.seed, dev)
    with too_big_on_oom("This model", "lower model.d_model, model.n_layer or train.batch_size"):
        model = build_model(spec.family, prep.model_config)  # torch's init: global RNG, redrawn below
    if state is not None:
        load_model(model, str(state.path / "model.safetensors"), strict=True, device="cpu")
    else:
        init_weights(model, generators["init"])  # every weight from the run's own generator
        adapter.init_model(model, prep)  # a family's start from pre-trained weights (BERT fine-tuning), else nothing
    model.to(dev)
    # scoped dropout where per-module draws cost speed: the fused attention kernels on a GPU and
    # torch.compile (a Generator argument breaks its graph); the CPU's eager masks stay as they were
    set_dropout_generator(model, generators["dropout"], scoped=scoped_dropout(caps))
    optimizer = make_optimizer(model, cfg, caps)
    scheduler = make_scheduler(optimizer, cfg, adapter.d_model(prep.model_config))
    rows: list[dict[str, Any]] = []
    log: list[dict[str, Any]] = []
    step = 0
    if state is not None:
        optimizer_state_from_files(optimizer, {k: v.to(dev) if k.startswith("optim.") else v
                                               for k, v in state.tensors.items()}, state.meta["optimizer"])
        for group in optimizer.param_groups:  # [train] changes (lr, schedule) win over the stored groups
            group["initial_lr"] = cfg.muon_lr if group.get("muon") else cfg.lr
        scheduler = make_scheduler(optimizer, cfg, adapter.d_model(prep.model_config))
        scheduler.last_epoch = state.step - 1
        with warnings.catch_warnings():  # "scheduler.step() before optimizer.step()": intended here
            warnings.simplefilter("ignore", UserWarning)
            scheduler.step()  # sets the lr of update `state.step`
        notes += restore_generators(generators, state.tensors, cfg.seed, state.step)
        rows = [r for r in state.rows if (r.get("step") or 0) <= state.step]
        log = [r for r in state.log if (r.get("step") or 0) <= state.step]
        step = state.step
        notes.append(f"resumed {name!r} at step {step}.")

    train_model: nn.Module = model
    if caps.compile:
        train_model = cast(nn.Module, torch.compile(model))  # compiling a module gives an OptimizedModule
    if dist.distributed:
        ids = [dist.local_rank] if caps.device_type == "cuda" else None
        train_model = nn.parallel.DistributedDataParallel(train_model, device_ids=ids)
    run = _Run(spec, adapter, prep, model, train_model, optimizer, scheduler, caps, dist, workspace, name, rows,
               generators, log, step=step, elapsed_s=state.elapsed_s if state else 0.0)
    run.saved_step = step if state is not None else -1
    if dist.is_main:  # last: nothing above may fail with a tracker run left open
        previous = workspace.path("models", name) / TB_FOLDER if state is not None else None
        run.tracker = open_tracker(spec.log, name, spec.sections(), previous=previous, resume_step=step)
    return run, notes


def train(
    preset: Preset | str | None,
    workspace: Workspace,
    name: str,
    *,
    overrides: dict[str, Any] | list[str] | None = None,
    device: str = "auto",
    resume: bool = False,
    stop: StopFlag = None,
    max_steps_cap: int | None = None,
    dist: DistInfo | None = None,
    limits: Any | None = None,
    policy: Any | None = None,
) -> Iterator[TrainEvent]:
    """Train `preset` (or resume the bundle `name`) and yield events; checkpoints go to `name`.

    Raises PlaygroundError subclasses for bad presets / data, TrainingError when the loss turns
    NaN or the device runs out of memory (the last written checkpoint stays as it was).
    `max_steps_cap` and `limits` (a playground.settings.DemoCaps) are a shared server's caps;
    `policy` (playground.data.policy.DataPolicy) which files the data may come from (None: any path).
    """
    dist = dist or DistInfo.from_env()
    run, notes = _setup(preset, workspace, name, overrides, device, resume, max_steps_cap, dist, limits, policy)
    try:
        yield from _loop(run, notes, stop)
    finally:
        finish_quietly(run.tracker, {"step": run.step, **(run.rows[-1] if run.rows else {})})


def _eval(run: _Run, train_losses: list[float], rate: float | None, lr: float) -> tuple[dict[str, Any], Preview | None]:
    cfg = run.spec.train
    run.model.eval()
    with torch.no_grad():
        metrics = run.adapter.evaluate(run.model, run.prep, cfg, run.caps)
        preview = run.adapter.preview(run.model, run.prep, cfg, run.caps) if cfg.preview else None
    run.model.train()
    row: dict[str, Any] = {"step": run.step}
    row["train_loss"] = sum(train_losses) / len(train_losses) if train_losses else None
    row.update(metrics)
    row["lr"] = lr  # the lr of the last update
    row[f"{run.adapter.unit}_per_s"] = rate
    row["elapsed_s"] = round(run.elapsed_s, 3)
    return row, preview


def _loop(run: _Run, notes: list[str], stop: StopFlag) -> Iterator[TrainEvent]:
    cfg = run.spec.train
    adapter, prep, caps, dist = run.adapter, run.prep, run.caps, run.dist
    world = dist.world_size
    micro = cfg.batch_size // world
    global_size = cfg.batch_size * cfg.grad_accum
    unit = adapter.unit
    # distributed runs always wrap the model in DistributedDataParallel (see _setup)
    ddp = cast(nn.parallel.DistributedDataParallel, run.train_model) if dist.distributed else None
    # model FLOPs utilisation: per-unit FLOPs from the family, the peak of every process's GPU
    flops_per_unit = get_family(run.spec.family).sizes.train_flops_per_unit(prep.model_config)
    peak = device_peak(caps.device, caps.autocast_dtype, caps.tf32)
    peak_all = peak * world if peak else None

    def event(kind: str, **kw: Any) -> TrainEvent:
        return TrainEvent(kind, run.step, cfg.max_steps, unit=unit, elapsed_s=run.elapsed_s, **kw)

    n_params = sum(p.numel() for p in run.model.parameters())
    size_notes = get_family(run.spec.family).sizes.notes(prep.model_config)  # e.g. GQA's smaller KV cache
    yield event("start", message=" ".join(
        [f"{run.spec.family} · {n_params / 1e6:.2f}M parameters · {caps.describe()}"
         + (f" · {world} processes" if world > 1 else "")] + size_notes + notes))

    step_time: float | None = None  # EMA of seconds per update
    eval_time = 0.0
    window_losses: list[float] = []
    since_eval: list[float] = []
    rate: float | None = None
    grad_norm: float | None = None
    # Loss and grad norm stay on the device until read back: every step on CPU (free), only at
    # log / eval / last steps on accelerators, where reading a value waits for the queued work.
    pending: list[tuple[int, float, torch.Tensor, torch.Tensor]] = []  # (step, lr, loss [], grad norm [])
    window = [0, 0, 0.0]  # since the last read-back: steps, tokens or samples, seconds

    def fetch() -> list[float]:
        """The pending losses and grad norms as floats: one read-back (a device sync)."""
        if not pending:
            return []
        return torch.stack([t.float() for _, _, loss, norm in pending for t in (loss, norm)]).tolist()

    def record(values: list[float]) -> None:
        """Check and record fetched values; a NaN or inf ends the run before anything is saved."""
        nonlocal grad_norm, rate, step_time
        for i, (step, lr, _, _) in enumerate(pending):
            loss_value, norm_value = values[2 * i], values[2 * i + 1]
            if not (math.isfinite(loss_value) and math.isfinite(norm_value)):
                pending.clear()
                run.optimizer.zero_grad(set_to_none=True)
                kept = (f"the checkpoint of step {run.saved_step} is kept" if run.saved_step >= 0
                        else "nothing was saved")
                raise TrainingError(
                    f"The loss became {'NaN' if math.isnan(loss_value) or math.isnan(norm_value) else 'infinite'} "
                    f"at step {step} (lr {lr:.3g}); {kept}. Lower train.lr, keep train.grad_clip on "
                    "(e.g. 1.0) or use train.precision=fp32."
                )
            window_losses.append(loss_value)
            since_eval.append(loss_value)
            grad_norm = norm_value
        pending.clear()
        steps, seen, seconds = window
        window[:] = [0, 0, 0.0]
        if steps:
            step_time = seconds / steps if step_time is None else 0.9 * step_time + 0.1 * seconds / steps
            rate = seen / seconds if seconds > 0 else None

    stopped = False
    try:
        while run.step < cfg.max_steps:
            flag = is_stopped(stop)
            if dist.distributed and pending:
                flag = False  # ranks agree on stopping only at read-back points (no extra syncs)
            elif dist.distributed:
                t = torch.tensor([1.0 if flag else 0.0], device=caps.device)
                torch.distributed.all_reduce(t, op=torch.distributed.ReduceOp.MAX)
                flag = bool(t.item())
            if flag:
                stopped = True
                break
            t0 = time.perf_counter()
            lr = run.scheduler.get_last_lr()[0]
            loss_sum = torch.zeros((), device=caps.device)
            count = 0
            for m in range(cfg.grad_accum):
                start = (m * world + dist.rank) * micro
                batch = adapter.batch(prep, cfg.seed, run.step, start, micro, global_size)
                count += adapter.count(prep, batch)
                batch = {k: caps.to_device(v) for k, v in batch.items()}
                sync = ddp.no_sync() if ddp is not None and m < cfg.grad_accum - 1 else contextlib.nullcontext()
                with sync, drawing_from(run.generators["dropout"] if scoped_dropout(caps) else None):
                    with caps.autocast():
                        loss = adapter.loss(run.train_model, batch, cfg.label_smoothing)
                    (loss / cfg.grad_accum).backward()
                loss_sum += loss.detach().float()
            clip = cfg.grad_clip if cfg.grad_clip > 0 else math.inf
            norm = torch.nn.utils.clip_grad_norm_(run.model.parameters(), clip)  # [] on the device
            loss_mean = loss_sum / cfg.grad_accum
            if dist.distributed:
                torch.distributed.all_reduce(loss_mean)
                loss_mean = loss_mean / world
            pending.append((run.step + 1, lr, loss_mean, norm))
            run.optimizer.step()
            run.scheduler.step()
            run.optimizer.zero_grad(set_to_none=True)
            run.step += 1
            is_log = run.step % cfg.log_interval == 0 or run.step == 1
            is_eval = run.step % cfg.eval_interval == 0 or run.step == cfg.max_steps
            values = fetch() if not caps.defer_readback or is_log or is_eval else None
            dt = time.perf_counter() - t0  # with a read-back, the wait for the device counts too
            run.elapsed_s += dt
            run.seen += count * world
            window[:] = [window[0] + 1, window[1] + count * world, window[2] + dt]
            if values is not None:
                record(values)  # raises on a NaN before anything of this step is saved

            remaining = cfg.max_steps - run.step
            evals_left = remaining // cfg.eval_interval + 1
            if is_log:  # log and eval steps always follow a read-back: step_time and rate are fresh
                assert step_time is not None  # record() just ran on a window of >= 1 step
                logged = sum(window_losses) / len(window_losses)
                run.log.append({"step": run.step, "train_loss": logged, "lr": lr, "grad_norm": grad_norm,
                                "throughput": rate})
                run.tracker.log(run.step, {"train_loss": logged, "lr": lr, "grad_norm": grad_norm, "throughput": rate})
                yield event("step", train_loss=logged, lr=lr, grad_norm=grad_norm,
                            throughput=rate, mfu=mfu(rate, flops_per_unit, peak_all),
                            eta_s=remaining * step_time + evals_left * eval_time)
                window_losses = []
            if is_eval and dist.is_main:
                te = time.perf_counter()
                assert step_time is not None  # as for is_log: record() just ran
                row, preview = _eval(run, since_eval, rate, lr)
                since_eval = []
                run.rows.append(row)
                run.tracker.log(run.step, {k: v for k, v in row.items() if k not in ("step", "train_loss", "lr")})
                ckpt = _save(run, "finished" if run.step == cfg.max_steps else "running")
                eval_time = time.perf_counter() - te
                metrics = {k: v for k, v in row.items() if k not in ("step", "train_loss", "val_loss", "lr", "elapsed_s")}
                yield event("eval", train_loss=row["train_loss"], val_loss=row["val_loss"], lr=row["lr"],
                            throughput=rate, mfu=mfu(rate, flops_per_unit, peak_all),
                            eta_s=remaining * step_time + (evals_left - 1) * eval_time,
                            metrics=metrics, preview=preview, checkpoint=ckpt)
    except GeneratorExit:
        # the consumer closed us (a UI Stop): keep the work done since the last checkpoint,
        # unless a loss not yet read back went NaN
        try:
            record(fetch())
            finite = True
        except TrainingError:
            finite = False
        if finite and dist.is_main and _unsaved_stop(run):
            _save(run, "stopped")
        raise
    except (torch.cuda.OutOfMemoryError, MemoryError, RuntimeError) as exc:
        if not is_out_of_memory(exc):
            raise
        raise TrainingError("This run is too big for this server (it ran out of memory); try a lower "
                            "train.batch_size (raise train.grad_accum to keep the effective batch) or a "
                            "smaller model.") from None
    if stopped:
        record(fetch())  # what is saved must be finite
        saved: str | None = None
        if dist.is_main and _unsaved_stop(run):
            saved = _save(run, "stopped")
        yield event("stopped", checkpoint=saved or (run.name if run.saved_step >= 0 else None),
                    message=f"stopped at step {run.step}; resume to continue.")
        return
    last = run.rows[-1] if run.rows else {}
    yield event("done", train_loss=last.get("train_loss"), val_loss=last.get("val_loss"), lr=last.get("lr"),
                throughput=last.get(f"{unit}_per_s"), eta_s=0.0,
                metrics={k: v for k, v in last.items() if k not in ("step", "train_loss", "val_loss", "lr", "elapsed_s")},
                checkpoint=run.name if dist.is_main else None)


@dataclass
class TrainResult:
    """The end of a run consumed to completion (CLI, tests, scripts)."""

    name: str
    step: int
    status: str  # "done" | "stopped"
    val_loss: float | None
    metrics: dict[str, float]
    events: list[TrainEvent]


def run_training(preset: Preset | str | None, workspace: Workspace, name: str, *,
                 on_event: Callable[[TrainEvent], None] | None = None, **kwargs: Any) -> TrainResult:
    """Consume :func:`train` and return the final state (events kept for inspection)."""
    events = []
    for ev in train(preset, workspace, name, **kwargs):
        events.append(ev)
        if on_event is not None:
            on_event(ev)
    last = events[-1]
    return TrainResult(name, last.step, last.kind, last.val_loss, last.metrics, events)
