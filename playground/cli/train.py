"""`python -m playground train PRESET [--set key=value]... [--name NAME] [--device D] [--resume NAME]`.

Prints one line per log interval and evaluation, and ends with one line of final metrics, e.g.
`val_loss=1.874 step=2000 tokens_per_s=21450`. Under `torchrun --nproc_per_node N -m playground
train ...` it trains with DistributedDataParallel (gloo on CPU, nccl on CUDA); rank 0 prints and
writes checkpoints.
"""
from __future__ import annotations

import argparse
import signal
import sys
import threading

import torch
import torch.distributed as tdist

from playground.cli import workspace_from
from playground.config import list_presets, load_preset
from playground.errors import ConfigError
from playground.settings import DEVICE_CHOICES
from playground.training.engine import DistInfo, train
from playground.training.trackers import TRACKERS


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "train", help="train a model from a preset",
        description="Train a model from a preset (presets/*.toml or a .toml path). "
                    f"Presets: {', '.join(list_presets())}.",
    )
    parser.add_argument("preset", nargs="?", help="preset name or .toml path (optional with --resume)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override a preset value, e.g. --set model.pos_encoding=rope (repeatable)")
    parser.add_argument("--name", help="checkpoint name in the workspace (default: the preset's name)")
    parser.add_argument("--device", default="auto", choices=DEVICE_CHOICES, help="auto = cuda, then mps, then cpu")
    parser.add_argument("--resume", metavar="NAME", help="continue the run saved as NAME (its optimizer state too)")
    parser.add_argument("--quiet", action="store_true", help="print only evaluations and the final line")
    parser.add_argument("--tracker", choices=TRACKERS, help="also report to this tracker (the preset's [log] tracker): "
                        "tensorboard writes event files into the run's folder; trackio and wandb need their package")
    parser.add_argument("--project", help="the tracker's project (the preset's [log] project; default 'playground')")
    parser.set_defaults(func=run)


def _fmt_time(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    seconds = int(round(seconds))
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"


def format_event(ev) -> str | None:
    """One progress line for a TrainEvent (None for events not worth a line)."""
    if ev.kind == "start":
        return ev.message
    if ev.kind == "step":
        rate = f"{ev.throughput:,.0f} {ev.unit}/s" if ev.throughput else "-"
        mfu = f" | mfu {100 * ev.mfu:.1f}%" if ev.mfu is not None else ""
        return (f"step {ev.step:>6}/{ev.max_steps} | loss {ev.train_loss:.4f} | lr {ev.lr:.2e} | "
                f"grad {ev.grad_norm:.2f} | {rate}{mfu} | eta {_fmt_time(ev.eta_s)}")
    if ev.kind == "eval":
        extra = " ".join(f"{k}={v:.4f}" for k, v in ev.metrics.items()
                         if k in ("accuracy", "exact_match", "token_accuracy"))
        train = f"train {ev.train_loss:.4f} | " if ev.train_loss is not None else ""
        line = f"eval {ev.step:>6}/{ev.max_steps} | {train}val {ev.val_loss:.4f} {extra} | saved {ev.checkpoint}"
        if ev.preview is not None and ev.preview.kind == "text":
            line += "\n  sample: " + ev.preview.text.replace("\n", "\n          ")[:400]
        elif ev.preview is not None and ev.preview.kind == "translations":
            line += "".join(f"\n  {'ok ' if r['correct'] else 'ERR'} {r['source']!r} -> {r['prediction']!r}"
                            for r in ev.preview.rows or [])
        return line
    if ev.kind == "stopped":
        return ev.message
    return None


def final_line(ev) -> str:
    """`val_loss=1.874 step=2000 tokens_per_s=...` (plus accuracy / exact match where the family has them)."""
    parts = []
    if ev.val_loss is not None:
        parts.append(f"val_loss={ev.val_loss:.4f}")
    for key in ("accuracy", "exact_match", "token_accuracy"):
        if key in ev.metrics:
            parts.append(f"{key}={ev.metrics[key]:.4f}")
    parts.append(f"step={ev.step}")
    if ev.throughput:
        parts.append(f"{ev.unit}_per_s={ev.throughput:.0f}")
    parts.append(f"elapsed_s={ev.elapsed_s:.1f}")
    return " ".join(parts)


def _stop_on_sigint(stop: threading.Event):
    """First Ctrl-C: stop at the next step and save; a second one interrupts at once."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = signal.getsignal(signal.SIGINT)

    def handler(signum, frame):  # noqa: ARG001 - signal.signal's handler signature
        if stop.is_set():
            signal.signal(signal.SIGINT, previous)
            raise KeyboardInterrupt
        stop.set()
        print("stopping after this step (Ctrl-C again to abort without saving)", file=sys.stderr, flush=True)

    signal.signal(signal.SIGINT, handler)
    return lambda: signal.signal(signal.SIGINT, previous)


def run(args: argparse.Namespace) -> int:
    if not args.preset and not args.resume:
        raise ConfigError("Give a preset to train (e.g. `python -m playground train nanogpt-cpu-tiny`) or --resume NAME.")
    workspace = workspace_from(args)
    dist = DistInfo.from_env()
    if dist.distributed:  # torchrun, one process or several
        backend = "nccl" if torch.cuda.is_available() and args.device in ("auto", "cuda") else "gloo"
        tdist.init_process_group(backend=backend)
    try:
        preset = None
        if args.resume:
            name = args.name or args.resume
            if args.name and args.name != args.resume:
                raise ConfigError("--resume continues the run in place; leave out --name or give the same name.")
        else:
            preset = load_preset(args.preset)
            name = args.name or preset.name
        stop = threading.Event()
        restore = _stop_on_sigint(stop)
        last = None
        overrides = [*args.overrides, *(f"log.{key}={value}" for key, value in
                                         (("tracker", args.tracker), ("project", args.project)) if value)]
        for ev in train(preset, workspace, name, overrides=overrides, device=args.device,
                        resume=bool(args.resume), stop=stop, dist=dist):
            last = ev
            if not dist.is_main:
                continue
            if args.quiet and ev.kind == "step":
                continue
            line = format_event(ev)
            if line:
                print(line, flush=True)
        if dist.is_main and last is not None:
            print(final_line(last), flush=True)
        return 0 if last is not None and last.kind in ("done", "stopped") else 1
    finally:
        if "restore" in locals():
            restore()
        if dist.distributed:
            if tdist.is_initialized():
                tdist.destroy_process_group()
        sys.stdout.flush()
