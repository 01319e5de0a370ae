"""`python -m playground positions CHECKPOINT [--factor 4] [--windows 32] [--json] [--csv PATH] [--chart HTML]`.

Loss at each position of a GPT checkpoint on its own validation text, out to `factor` times the
context it was trained on (sinusoidal, RoPE, ALiBi or no positions; learned positions stop at
factor 1 with the reason):

    python -m playground positions nanogpt-cpu-fast --factor 4
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from playground.analysis.length import (
    DEFAULT_FACTOR,
    DEFAULT_WINDOWS,
    checkpoint_position_loss,
)
from playground.bundle import load_bundle
from playground.charts.positions import position_loss_chart
from playground.cli import workspace_from
from playground.settings import resolve_device


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "positions", help="loss at each position of a GPT checkpoint, out to several times its training length",
        description="Mean next-token loss at each position of validation windows read from position 0, "
                    "past block_size for positions that allow it (sinusoidal, RoPE, ALiBi, none).",
    )
    parser.add_argument("checkpoint", help="a model name in the workspace or a bundle folder")
    parser.add_argument("--factor", type=int, default=DEFAULT_FACTOR,
                        help=f"evaluate out to FACTOR x block_size positions (default {DEFAULT_FACTOR}; 1 for learned positions)")
    parser.add_argument("--windows", type=int, default=DEFAULT_WINDOWS,
                        help=f"validation windows averaged per position (default {DEFAULT_WINDOWS})")
    parser.add_argument("--device", default="cpu", help="auto|cpu|cuda|mps (default: cpu)")
    parser.add_argument("--json", action="store_true", help="print the losses and the summary numbers as JSON")
    parser.add_argument("--csv", default=None, metavar="PATH", help="write position,loss,trained rows")
    parser.add_argument("--chart", default=None, metavar="HTML", help="write the chart (altair) to an HTML file")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    bundle = load_bundle(args.checkpoint, workspace_from(args), device=resolve_device(args.device))
    result = checkpoint_position_loss(bundle, args.factor, args.windows, workspace_from(args))
    if args.csv:
        result.table().to_csv(Path(args.csv), index=False)
    if args.chart:
        position_loss_chart(result).save(str(args.chart))
    if args.json:
        print(json.dumps({"checkpoint": result.checkpoint, "trained": result.trained, "positions": result.positions,
                          **result.numbers(), "loss": result.loss}, indent=2))
        return 0
    print(result.summary())
    step = max(1, result.positions // 16)
    for p in range(0, result.positions, step):  # a coarse profile: means over `step` positions
        chunk = result.loss[p:p + step]
        mark = "" if p < result.trained else "  (past the trained context)"
        print(f"  positions {p:>5}..{p + len(chunk) - 1:<5} loss {sum(chunk) / len(chunk):.3f}{mark}")
    return 0
