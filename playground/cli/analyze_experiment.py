"""`python -m playground analyze experiment NAME CHECKPOINT [--n N] [--seed S] [--out FILE] ...`

Runs one dataset-level experiment over N held-out examples of a checkpoint and prints its
plain-language summary and numbers; ``--out`` writes CSV (one row per example) or JSON.

    python -m playground analyze experiment permutation my-gpt --n 200 --out perm.csv
    python -m playground analyze experiment adversarial my-vit --n 50 --epsilon 0.01 --out adv.json
    python -m playground analyze experiment seeds my-rnn --seeds 1,2 --retrain-steps 500
    python -m playground analyze experiment retrain-uniform my-rnn   # needs a uniform-attention switch
    python -m playground analyze experiment sanity my-textclf --n 10 --label-randomisation
    python -m playground analyze experiment bench                   # speed of the permutation test
    python -m playground analyze experiment permutation my-gpt --second distilgpt2 --n 20

``--second MODEL`` runs the experiment on a second model too (e.g. an imported pretrained one):
the same held-out examples of CHECKPOINT, each model reading them through its own tokenizer,
printed one model after the other; ``--out`` then holds both (CSV: a ``model`` column).
Ctrl-C stops the run and keeps (prints and writes) the finished examples.
``playground.cli.analyze`` routes ``analyze experiment ...`` here through :func:`configure`.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd

from playground.analysis.experiments import jain_wallace as jw
from playground.analysis.experiments.core import ExperimentResult
from playground.analysis.experiments.pair import PairResult, iter_pair, pair_note
from playground.analysis.experiments.record import record_if_own
from playground.analysis.experiments.runner import (
    EXPERIMENTS,
    ExperimentOptions,
    iter_experiment,
    iter_retrain_uniform,
    parse_heads,
    parse_ints,
)
from playground.analysis.experiments.summary import summarize
from playground.bench.experiments import run_bench
from playground.bundle import load_bundle
from playground.cli import workspace_from
from playground.errors import PlaygroundError
from playground.settings import resolve_device

ACTIONS = ("retrain-uniform", "bench")


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the experiment arguments to ``parser`` (the `analyze experiment` parser)."""
    names = [*EXPERIMENTS, *ACTIONS]
    parser.description = "Dataset-level attention experiments: " + "; ".join(f"{k}: {v}" for k, v in EXPERIMENTS.items())
    parser.add_argument("name", choices=names, metavar="NAME", help=f"one of {', '.join(names)}")
    parser.add_argument("checkpoint", nargs="?", default=None, help="a model name in the workspace or a bundle folder")
    parser.add_argument("--n", type=int, default=None, help="held-out examples (default 50; bench: 200)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the example draw and every random choice (default 0)")
    parser.add_argument("--out", default=None, help="write FILE.csv (one row per example) or FILE.json (everything)")
    parser.add_argument("--module", default=None, help="attention module to intervene on, e.g. blocks.2.attn (default: last layer)")
    parser.add_argument("--heads", default=None, help="heads, e.g. 0,2 (default: all)")
    parser.add_argument("--epsilon", type=float, default=None, help="adversarial TVD bound (default 0.01 classifiers, 0.05 otherwise)")
    parser.add_argument("--n-perm", type=int, default=100, help="permutations per example (default 100)")
    parser.add_argument("--steps", type=int, default=500, help="adversarial Adam steps (default 500; seeds: 0 skips the adversaries)")
    parser.add_argument("--k", type=int, default=5, help="adversaries per example (default 5)")
    parser.add_argument("--views", default=None, help="agreement: attention views (default attention,attention_mean,rollout,norm)")
    parser.add_argument("--references", default=None, help="agreement: references (default jw_grad,loo_delete: J&W's gradient with "
                        "attention detached and leave-one-out by deletion; the app's earlier saliency,loo also work)")
    parser.add_argument("--methods", default=None, help="erasure / aopc / pointing / sanity: rankings or maps (default: the experiment's)")
    parser.add_argument("--level", default="attention", choices=["attention", "input"], help="erasure level (default attention)")
    parser.add_argument("--seeds", default="1,2", help="seed variance: extra training seeds (default 1,2)")
    parser.add_argument("--retrain-steps", type=int, default=None, help="steps of each retraining (default: the preset's)")
    parser.add_argument("--threads", type=int, default=2, help="bench: torch threads (default 2)")
    parser.add_argument("--peer-n", type=int, default=None, help="bench: examples for the peer (default: --n)")
    parser.add_argument("--device", default="cpu", help="auto|cpu|cuda|mps (default cpu)")
    parser.add_argument("--float64", action="store_true",
                        help="run on a float64 copy of the model (saturated outputs; cheap for small models)")
    parser.add_argument("--label-randomisation", action="store_true",
                        help="sanity: also retrain the checkpoint's preset on shuffled training labels (or reuse "
                             "CHECKPOINT-shuffled) and compare each method's maps with the trained model's "
                             "(Adebayo et al.'s data test; classifiers only; --retrain-steps caps it)")
    parser.add_argument("--second", default=None, metavar="MODEL",
                        help="also run the experiment on MODEL (e.g. an imported pretrained model of the same task) "
                             "over the same held-out examples, each model through its own tokenizer")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    parser.set_defaults(func=run)


def register_experiment(subparsers: argparse._SubParsersAction) -> None:
    """Mount as a subcommand ``experiment`` of an `analyze` subparsers object."""
    parser = subparsers.add_parser("experiment", help="dataset-level attention experiments (J&W, W&P, S&S)")
    configure(parser)


def _split(text: str | None) -> tuple[str, ...] | None:
    if text is None:
        return None
    return tuple(t.strip() for t in text.split(",") if t.strip())


def options_from(args: argparse.Namespace) -> ExperimentOptions:
    return ExperimentOptions(
        n=args.n or 50, seed=args.seed, module=args.module, heads=parse_heads(args.heads), n_perm=args.n_perm, k=args.k,
        epsilon=args.epsilon, steps=args.steps, views=_split(args.views) or jw.DEFAULT_VIEWS,
        references=_split(args.references) or jw.DEFAULT_REFERENCES, methods=_split(args.methods), level=args.level,
        seeds=parse_ints(args.seeds), retrain_steps=args.retrain_steps, device=resolve_device(args.device),
        float64=getattr(args, "float64", False), label_randomisation=getattr(args, "label_randomisation", False))


class _Printer:
    """Progress lines on stderr, at most every 2 s (and the last one)."""

    def __init__(self, quiet: bool) -> None:
        self.quiet, self.last = quiet, 0.0

    def __call__(self, event: Any, force: bool = False) -> None:
        now = time.perf_counter()
        if self.quiet or (not force and now - self.last < 2.0):
            return
        self.last = now
        print(f"[{event.done}/{event.total}] {event.message}", file=sys.stderr, flush=True)


def _drive(gen: Any, printer: _Printer) -> Any:
    """Run a progress generator; Ctrl-C keeps the partial result (marked stopped)."""
    partial = None
    try:
        while True:
            try:
                event = next(gen)
            except StopIteration as done:
                return done.value
            if getattr(event, "partial", None) is not None:
                partial = event.partial
            printer(event)
    except KeyboardInterrupt:
        gen.close()
        if partial is None:
            raise
        partial.stopped = True
        print("interrupted: keeping the finished examples", file=sys.stderr)
        return partial


def format_result(result: ExperimentResult) -> str:
    """What the CLI prints: the plain-language summary and the aggregate numbers."""
    lines = [summarize(result).to_text(), ""]
    st = result.stats()
    table = None
    for key in ("pairs", "methods"):
        if key in st:
            table = pd.DataFrame(st[key])
    if result.experiment == "uniform":
        table = result.table()
    elif result.experiment == "diagnostic":
        table = result.to_frame()
    if table is not None and not table.empty:
        pd.set_option("display.width", 200)
        lines.append(table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    lines.append(f"({result.examples_done} of {result.n_requested} done, {result.n_done} rows, {result.elapsed_s:.1f} s"
                 f"{', stopped early' if result.stopped else ''})")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    printer = _Printer(args.quiet)
    if args.name == "bench":
        return run_bench(args)
    if not args.checkpoint:
        raise PlaygroundError(f"`analyze experiment {args.name}` needs a CHECKPOINT (a model name or bundle folder).")
    if args.out and Path(args.out).suffix.lower() not in (".csv", ".json"):
        raise PlaygroundError(f"--out must end in .csv or .json, got {Path(args.out).name!r}.")
    workspace = workspace_from(args)
    options = options_from(args)
    bundle = load_bundle(args.checkpoint, workspace, device=options.device)
    if args.name == "retrain-uniform":
        name = _drive(iter_retrain_uniform(bundle, workspace, options), printer)
        print(f"saved {name}")
        return 0
    if args.second:
        return _run_pair(args, bundle, options, workspace, printer)
    result = _drive(iter_experiment(args.name, bundle, options, workspace), printer)
    print(format_result(result))
    kept = record_if_own(workspace, bundle.name, bundle.path, result)
    if kept is not None:
        print(f"kept with the model for its card: {kept}")
    if args.out:
        path = Path(args.out)
        path.parent.mkdir(parents=True, exist_ok=True)
        result.save(path)
        print(f"wrote {path}")
    return 0


def format_pair(pair: PairResult) -> str:
    """Both models' summaries and numbers, one after the other, under their names."""
    lines = [pair_note(pair)]
    for name, result in zip(pair.models, pair.results):
        lines += ["", f"== {name} ==", format_result(result) if result is not None else "(not run: stopped before it)"]
    return "\n".join(lines)


def _run_pair(args: argparse.Namespace, bundle: Any, options: ExperimentOptions, workspace: Any,
              printer: _Printer) -> int:
    """`--second MODEL`: the experiment on both models; --out holds both."""
    if args.name in ACTIONS:
        raise PlaygroundError(f"`analyze experiment {args.name}` takes no --second model.")
    second = load_bundle(args.second, workspace, device=options.device)
    pair = _drive(iter_pair(args.name, [bundle, second], options, workspace), printer)
    for result in pair.results:  # Ctrl-C: the interrupted model's result covers its finished examples
        if pair.stopped and result is not None and result.examples_done < result.n_requested:
            result.stopped = True
    print(format_pair(pair))
    if args.out:
        path = Path(args.out)
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix.lower() == ".csv":
            pair.to_frame().to_csv(path, index=False)
        else:
            path.write_text(json.dumps(pair.to_dict(), indent=1), encoding="utf-8")
        print(f"wrote {path}")
    return 0
