"""`python -m playground heads CHECKPOINT [--json] [--examples N] [options]`.

Head analysis of a checkpoint on its own validation data: the loss with each head ablated
(zero and mean), Michel et al.'s gradient importance, the pruning curve (heads removed least
important first), and the previous-token, first-token and induction scores (GPT):

    python -m playground heads gpt-python-docs-char --examples 64
    python -m playground heads vit-digits --json > heads.json
"""
from __future__ import annotations

import argparse
import json

import torch

from playground.analysis.heads.report import HeadReport, analyse_heads
from playground.bundle import load_bundle
from playground.charts.heads import head_heatmaps_chart, pruning_chart
from playground.cli import workspace_from
from playground.errors import PlaygroundError
from playground.settings import resolve_device

FRACTIONS = (0.25, 0.5, 0.75, 1.0)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "heads", help="head analysis: ablation, importance, pruning curve, previous-token/induction scores",
        description="Ablate each attention head (zero or mean output before out_proj), rank the heads by the "
                    "loss increase and by Michel et al.'s |dL/dxi|, remove them least important first "
                    "(pruning curve), and score previous-token, first-token and induction heads.",
    )
    parser.add_argument("checkpoint", help="a model name in the workspace or a bundle folder")
    parser.add_argument("--examples", type=int, default=64,
                        help="validation examples (GPT: windows of block_size tokens; also the number of "
                             "repeated random sequences for the induction scores); default 64")
    parser.add_argument("--mode", choices=("zero", "mean"), default="zero",
                        help="ablation used by the pruning curve (default zero: Michel et al.'s mask)")
    parser.add_argument("--seed", type=int, default=0, help="draws the windows and the random sequences")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--top", type=int, default=3, help="heads listed per score (default 3)")
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0 = torch's default)")
    parser.add_argument("--device", default="cpu", help="auto|cpu|cuda|mps (default: cpu)")
    parser.add_argument("--json", action="store_true", help="print the whole report as JSON")
    parser.add_argument("--charts", default=None, metavar="PREFIX",
                        help="write PREFIX.heatmaps.html and PREFIX.pruning.html (altair)")
    parser.set_defaults(func=run)


def summary(report: HeadReport, top: int = 3) -> str:
    """The report as text: losses, top heads by each score, induction, the pruning curve."""
    lines = [(f"{report.checkpoint} ({report.family}): {report.total_heads} heads in {len(report.modules)} "
             f"attention modules, {report.n_examples} validation examples"),
             f"loss with every head: {report.clean_loss:.4f}"]
    for score, table in report.score_tables().items():
        if not any(v for vs in table.values() for v in vs):
            lines.append(f"{score}: 0 for every head" + (" (causal attention)" if score == "next" else ""))
            continue
        heads = ", ".join(f"{m}#{h} {v:+.4f}" if score.startswith("ablation") else f"{m}#{h} {v:.4f}"
                          for m, h, v in report.top(score, top))
        base = f" (uniform attention: {report.uniform[score]:.4f})" if score in report.uniform else ""
        lines.append(f"top {score}: {heads}{base}")
    if report.in_context:
        c = report.in_context
        lines.append(f"repeated random tokens (L={report.induction_length}): loss on the first copy {c['first']:.4f}, "
                     f"on the second {c['second']:.4f} (drop {c['drop']:.4f})")
    for order in report.pruning:
        points = ", ".join(f"{f:.0%} {report.loss_at(f, order):.4f}" for f in FRACTIONS)
        lines.append(f"pruning by {order} ({report.pruning_mode} ablation), loss at heads removed: {points}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    if args.examples < 1:
        raise PlaygroundError("--examples must be at least 1.")
    if args.threads:
        torch.set_num_threads(args.threads)
    device = resolve_device(args.device)
    bundle = load_bundle(args.checkpoint, workspace_from(args), device=device)
    report = analyse_heads(bundle, n=args.examples, seed=args.seed, mode=args.mode, batch_size=args.batch_size,
                           workspace=workspace_from(args), device=device)
    if args.charts:
        head_heatmaps_chart(report.frame()).save(f"{args.charts}.heatmaps.html")
        pruning_chart(report.pruning_frame(), report.clean_loss).save(f"{args.charts}.pruning.html")
    print(json.dumps(report.to_dict(), indent=1) if args.json else summary(report, args.top))
    return 0
