"""`python -m playground patch CHECKPOINT (--clean TEXT --corrupted TEXT | --task ioi|dates|induction) [options]`.

Activation patching on a GPT checkpoint: the normalised effect (0 = corrupted, 1 = clean) of
patching each layer's residual stream per position, each head, and attention vs MLP outputs,
by real patching and by attribution patching, with their agreement:

    python -m playground patch gpt-python-docs-char --clean "def f(x):" --corrupted "def g(x):"
    python -m playground patch gpt-python-docs-char --task dates --direction both --csv grids.csv --json grids.json
"""
from __future__ import annotations

import argparse
import sys

import numpy as np
import torch

from playground.analysis.causal.pairs import TASKS, make_pair
from playground.analysis.causal.patching import GRID_TITLES, GRIDS, Eta
from playground.analysis.causal.report import CausalReport, run_causal
from playground.analysis.inputs import encode_input, token_label
from playground.bundle import load_bundle
from playground.cli import workspace_from
from playground.errors import PlaygroundError
from playground.settings import resolve_device


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "patch", help="activation patching: which layers, positions and heads the answer causally needs",
        description="Patch activations between a clean and a corrupted input of the same length (denoising: clean "
                    "into corrupted; noising: corrupted into clean), per layer x position (residual stream, "
                    "attention and MLP outputs) and per head; beside it attribution patching (one gradient) and "
                    "where that linear approximation breaks.",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("checkpoint", help="a GPT model name in the workspace or a bundle folder")
    parser.add_argument("--clean", help="the clean input (the model gives the answer)")
    parser.add_argument("--corrupted", help="the corrupted input: as many tokens as the clean one")
    parser.add_argument("--task", choices=TASKS, help="a built-in pair instead of typed inputs")
    parser.add_argument("--answer", default=None, help="answer token (text or #id; default: the top token on clean)")
    parser.add_argument("--wrong", default=None, help="wrong-answer token (default: the top token on corrupted)")
    parser.add_argument("--grids", default=",".join(GRIDS), help=f"comma list of {', '.join(GRIDS)}")
    parser.add_argument("--direction", choices=("denoise", "noise", "both"), default="denoise")
    parser.add_argument("--no-attribution", action="store_true", help="skip attribution patching")
    parser.add_argument("--seed", type=int, default=0, help="the induction task's random tokens")
    parser.add_argument("--chunk", type=int, default=None, help="cells per forward (default: from memory)")
    parser.add_argument("--csv", default=None, help="write every cell of every grid here")
    parser.add_argument("--json", default=None, help="write everything (grids, agreement, logit lens) here")
    parser.add_argument("--device", default="cpu", help="auto|cpu|cuda|mps (default: cpu)")
    parser.set_defaults(func=run)


def _token(tokenizer, text: str | None, vocab: int) -> int | None:
    if text is None:
        return None
    if text.startswith("#") and text[1:].isdigit():
        return int(text[1:])
    ids = encode_input(tokenizer, text, vocab, "answer")
    if len(ids) != 1:
        raise PlaygroundError(f"The answer {text!r} is {len(ids)} tokens; give one token (or its id as #123).")
    return ids[0]


def make_pair_from(bundle, args: argparse.Namespace, device: str):
    """The pair the arguments describe."""
    V = bundle.model.config.vocab_size
    tok = bundle.tokenizer
    return make_pair(bundle.model, tok, args.task, args.clean or "", args.corrupted or "", _token(tok, args.answer, V),
                     _token(tok, args.wrong, V), args.seed, device)


def grid_text(grid, digits: int = 2) -> str:
    """A grid as aligned text rows (normalised effect)."""
    eff = np.round(grid.effect, digits)
    width = max(6, *(len(c) for c in grid.cols))
    head = " " * 5 + "".join(f"{c[:width]:>{width + 1}}" for c in grid.cols)
    rows = [f"{r:<5}" + "".join(f"{v:>{width + 1}.{digits}f}" for v in line) for r, line in zip(grid.rows, eff)]
    return "\n".join([head, *rows])


def summary(report: CausalReport) -> str:
    p = report.pair
    lines = [p.description, f"clean: {''.join(p.tokens)!r}", f"corrupted: {''.join(p.corrupted_tokens)!r}"]
    for d, per in report.grids.items():
        first = next(iter(per.values()))
        lines.append(f"\n== {d} ({first.metric}: clean {first.clean:.3f}, corrupted {first.corrupted:.3f}; "
                     "normalised effect, 0 = corrupted, 1 = clean)")
        for kind, g in per.items():
            lines += [f"-- {GRID_TITLES[kind]}", grid_text(g)]
        if d in report.attribution:
            lines.append("-- attribution patching vs patching")
            lines.append(report.agreement(d).round(3).to_string(index=False))
            worst = report.breaks(d)[:5]
            if worst:
                lines.append("where the linear approximation breaks (|difference| > 0.2): " + "; ".join(
                    f"{b['grid']} {b['layer']} {b['col']}: patching {b['patching']:.2f}, attribution "
                    f"{b['attribution']:.2f}" for b in worst))
    for name, lens in report.lens.items():
        ranks = ", ".join(f"{int(r)}" for r in lens.target_rank)
        lines.append(f"\nlogit lens ({name}): rank of {lens.target_label!r} after each layer: {ranks}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    device = resolve_device(args.device)
    bundle = load_bundle(args.checkpoint, workspace_from(args), device=device)
    pair = make_pair_from(bundle, args, device)
    eta = Eta()

    def progress(done: int, total: int) -> None:
        print(f"\r{eta(done, total)}   ", end="", file=sys.stderr, flush=True)

    directions = ("denoise", "noise") if args.direction == "both" else (args.direction,)
    with torch.no_grad():
        report = run_causal(bundle.model, pair, [g.strip() for g in args.grids.split(",")], directions,
                            attribution=not args.no_attribution,
                            label=lambda i: token_label(bundle.tokenizer, i), chunk=args.chunk, progress=progress)
    print(file=sys.stderr)
    for path in (args.csv, args.json):
        if path:
            report.save(path)
    print(summary(report))
    return 0
