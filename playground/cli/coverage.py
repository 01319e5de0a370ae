"""`python -m playground coverage CHECKPOINT [CHECKPOINT ...] [--examples N] [--json]`.

Repeated and dropped source words of seq2seq checkpoints on their own validation pairs (the
Analyze tab's "Repeated and dropped source words" view), side by side, e.g. a model trained
with coverage and the same preset without it:

    python -m playground coverage seq2seq-toytranslation-coverage toy-nocoverage
"""
from __future__ import annotations

import argparse
import json

import torch

from playground.analysis.coverage import (
    MAX_EXAMPLES,
    checkpoint_coverage,
    comparison_text,
)
from playground.bundle import load_bundle
from playground.cli import workspace_from
from playground.errors import PlaygroundError
from playground.settings import resolve_device


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "coverage", help="repeated/dropped source words of seq2seq checkpoints (with and without coverage)",
        description="Decode validation pairs greedily and count source tokens whose total attention is >= 1.5 "
                    "(repeated) or <= 0.5 (dropped), output tokens repeated back to back, and reference tokens "
                    "missing from the output; one row per checkpoint.",
    )
    parser.add_argument("checkpoints", nargs="+", help="seq2seq model names in the workspace or bundle folders")
    parser.add_argument("--examples", type=int, default=200,
                        help=f"validation pairs per checkpoint (1 to {MAX_EXAMPLES}; default 200)")
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0 = torch's default)")
    parser.add_argument("--device", default="cpu", help="auto|cpu|cuda|mps (default: cpu)")
    parser.add_argument("--json", action="store_true", help="print the counts as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if not 1 <= args.examples <= MAX_EXAMPLES:
        raise PlaygroundError(f"--examples must be from 1 to {MAX_EXAMPLES}.")
    if args.threads:
        torch.set_num_threads(args.threads)
    device = resolve_device(args.device)
    workspace = workspace_from(args)
    reports = {}
    for name in args.checkpoints:
        bundle = load_bundle(name, workspace, device=device)
        reports[name] = checkpoint_coverage(bundle, args.examples, workspace)
    if args.json:
        print(json.dumps({name: c.to_dict() for name, c in reports.items()}, indent=1))
    else:
        print(comparison_text(reports))
    return 0
