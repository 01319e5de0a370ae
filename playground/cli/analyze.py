"""`python -m playground analyze CHECKPOINT --input TEXT | --image PATH | --sample N [options]`.

Explains one prediction with several importance methods and prints their agreement:

    python -m playground analyze my-gpt --input "To be or not to" --target " be" \\
        --methods attention,rollout,flow,ig,saliency,ixg,loo --out result.json

Reserved first words: ``analyze experiment ...`` is routed to the dataset-level experiments
(:mod:`playground.cli.analyze_experiment`, whose ``configure(parser)`` adds its arguments).
A checkpoint literally named like a reserved word is given by its path.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pandas as pd
from PIL import Image

from playground.analysis.explain.per_input import (
    DEFAULT_METHODS,
    METHODS,
    AnalysisOptions,
    InputAnalysis,
    InputSpec,
    analyze_checkpoint,
)
from playground.bundle import load_bundle
from playground.cli import analyze_experiment, workspace_from
from playground.errors import PlaygroundError
from playground.settings import resolve_device

# reserved first word -> module with `configure(parser: argparse.ArgumentParser) -> None`
# (adds its arguments and `parser.set_defaults(func=...)`)
EXTENSIONS: dict[str, ModuleType] = {"experiment": analyze_experiment}


class _AnalyzeParser(argparse.ArgumentParser):
    """`analyze CHECKPOINT ...`, except that a reserved first word selects its own parser."""

    commands: dict[str, argparse.ArgumentParser]

    def parse_known_args(self, args: Any = None, namespace: Any = None):  # type: ignore[override]
        args = list(sys.argv[1:] if args is None else args)
        commands = getattr(self, "commands", {})
        if args and args[0] in commands:
            return commands[args[0]].parse_known_args(args[1:], namespace)
        return super().parse_known_args(args, namespace)


def _extension_parser(word: str, module: ModuleType) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"python -m playground analyze {word}")
    module.configure(parser)
    return parser


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "analyze", help="explain one prediction: attention vs gradients vs leave-one-out",
        description="Explain one prediction of a checkpoint with attention, rollout, flow, gradients, IG and "
                    "leave-one-out, and print how much the methods agree. "
                    f"`analyze {'|'.join(EXTENSIONS)} ...` runs the dataset-level experiments.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="methods: " + "; ".join(f"{k} = {v}" for k, v in METHODS.items()),
    )
    parser.__class__ = _AnalyzeParser
    parser.commands = {word: _extension_parser(word, mod) for word, mod in EXTENSIONS.items()}  # type: ignore[attr-defined]
    parser.add_argument("checkpoint", help="a model name in the workspace or a bundle folder")
    src = parser.add_mutually_exclusive_group()
    src.add_argument("--input", help="GPT: the prompt; seq2seq: the source sentence")
    src.add_argument("--image", help="ViT: an image file (PNG/JPEG)")
    src.add_argument("--sample", type=int, help="index of a validation example rebuilt from the checkpoint's data "
                                                  "(ViT digits/shapes, generated seq2seq pairs)")
    parser.add_argument("--position", type=int, default=None,
                        help="GPT: token index of the query (negative from the end; default: last); "
                             "seq2seq: output step (default: 0)")
    parser.add_argument("--target", default=None,
                        help="GPT: the next token (text, or #id; default: the prediction); ViT: class name or index")
    parser.add_argument("--methods", default=",".join(DEFAULT_METHODS),
                        help=f"comma-separated, from {','.join(METHODS)} (default: %(default)s)")
    parser.add_argument("--layer", type=int, default=None, help="layer of the 'attention'/'norm' methods (default: last)")
    parser.add_argument("--head", type=int, default=None, help="head of the 'attention'/'norm' methods (default: mean)")
    parser.add_argument("--ig-steps", type=int, default=50, help="integrated-gradients steps to start from (default: 50)")
    parser.add_argument("--no-ig-auto", action="store_true",
                        help="keep --ig-steps even when the completeness delta is above 5%% of F(x) - F(x')")
    parser.add_argument("--k", type=int, default=None, help="top-k for the Jaccard agreement (default: a fifth, 1..5)")
    parser.add_argument("--device", default="cpu", help="auto|cpu|cuda|mps (default: cpu)")
    parser.add_argument("--float64", action="store_true",
                        help="run every method on a float64 copy of the model (a saturated output, 1 - p near float32's "
                             "epsilon, makes float32 gradients and leave-one-out changes rounding noise)")
    parser.add_argument("--out", default=None,
                        help="write FILE.json (everything) or FILE.csv (importances; agreement to FILE.agreement.csv)")
    parser.set_defaults(func=run)


def parse_methods(text: str) -> tuple[str, ...]:
    """'ig, loo' -> ('ig', 'loo'); unknown names raise PlaygroundError (via AnalysisOptions)."""
    return tuple(m.strip() for m in text.split(",") if m.strip())


def _read_image(path: str) -> np.ndarray:
    p = Path(path)
    if not p.is_file():
        raise PlaygroundError(f"No image file at {path!r}.")
    try:
        with Image.open(p) as im:
            return np.asarray(im.convert("RGB"))
    except OSError as exc:
        raise PlaygroundError(f"Cannot read {p.name!r} as an image ({exc}); give a PNG or JPEG.") from exc


def format_report(result: InputAnalysis) -> str:
    """The text the CLI prints: summary, importances per unit, agreement table, IG delta, notes."""
    p = result.prepared
    suffix, extra = p.query.explainer.report_lines(p)
    lines = [f"{p.family} · target {p.target_label!r} (id {p.target_id}) · predicted {p.predicted_label!r}{suffix}",
             *extra]
    if "target_prob" in p.info:
        lines.append(f"p(target) = {p.info['target_prob']:.4f}")
    table = pd.DataFrame({m: result.row(m) for m in result.importances})
    table.insert(0, "unit", [repr(u) + (" *" if s else "") for u, s in zip(p.units, p.special)])
    pd.set_option("display.width", 200)
    lines += ["", "importance per input unit (* = special, excluded from rankings):", table.to_string(
        index=True, float_format=lambda v: f"{v:.4g}")]
    if len(result.agreement):
        lines += ["", "agreement (Kendall tau-b, Spearman, top-k Jaccard, JSD):",
                  result.agreement.drop(columns=["spearman_p"]).to_string(index=False, float_format=lambda v: f"{v:.3f}")]
    if result.ig:
        d = result.ig
        lines += ["", f"IG: steps {d['steps'][p.selected]}, delta {d['delta'][p.selected]:+.2e} "
                      f"(tolerance {d['tolerance'][p.selected]:.2e}), F(x) {d['f_input'][p.selected]:.4f}, "
                      f"F(x') {d['f_baseline'][p.selected]:.4f}"]
    if result.deeplift:
        lines.append(f"DeepLift (experimental): delta {result.deeplift['delta'][p.selected]:+.3e}")
    if result.pointing is not None:
        lines += ["", "pointing game (share of top-k importance inside the object mask or rationale):",
                  result.pointing.to_string(index=False, float_format=lambda v: f"{v:.3f}")]
    if result.alignment is not None:
        lines += ["", "alignment accuracy against the gold alignment:",
                  result.alignment.to_string(index=False, float_format=lambda v: f"{v:.3f}")]
    lines += ["", "time: " + ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in result.timings.items())]
    lines += [f"note: {n}" for n in result.notes]
    return "\n".join(lines)


def write_output(result: InputAnalysis, out: str | Path) -> list[Path]:
    """Write the result as JSON (everything) or CSV (+ agreement CSV); returns the files written."""
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() == ".json":
        path.write_text(result.to_json(), encoding="utf-8")
        return [path]
    if path.suffix.lower() == ".csv":
        result.to_frame().to_csv(path, index=False)
        agree = path.with_name(path.stem + ".agreement.csv")
        result.agreement.to_csv(agree, index=False)
        return [path, agree]
    raise PlaygroundError(f"--out must end in .json or .csv, got {path.name!r}.")


def run(args: argparse.Namespace) -> int:
    device = resolve_device(args.device)
    bundle = load_bundle(args.checkpoint, workspace_from(args), device=device)
    target: Any = args.target
    spec = InputSpec(text=args.input, image=_read_image(args.image) if args.image else None, sample=args.sample,
                     position=args.position, target=target)
    options = AnalysisOptions(methods=parse_methods(args.methods), layer=args.layer, head=args.head,
                              ig_steps=args.ig_steps, ig_auto=not args.no_ig_auto, k=args.k, float64=args.float64)
    result = analyze_checkpoint(bundle, spec, options, device=device, private=False)
    print(format_report(result))
    if args.out:
        for f in write_output(result, args.out):
            print(f"wrote {f}")
    return 0
