"""`python -m playground export CHECKPOINT --format hf-gpt2 --out DIR`: a GPT checkpoint as a
Hugging Face transformers GPT-2 model (loadable with GPT2LMHeadModel.from_pretrained)."""
from __future__ import annotations

import argparse

from playground.bundle import load_bundle
from playground.cli import workspace_from
from playground.errors import ConfigError

FORMATS = ("hf-gpt2",)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("export", help="export a checkpoint to another format (hf-gpt2)")
    parser.add_argument("checkpoint", help="a bundle folder or a model name in the workspace")
    parser.add_argument("--format", choices=FORMATS, default="hf-gpt2", help="target format (default: hf-gpt2)")
    parser.add_argument("--out", required=True, help="folder to write (created if missing)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from playground.models.export_hf import export_hf_gpt2

    bundle = load_bundle(args.checkpoint, workspace_from(args))
    if bundle.family != "gpt":
        raise ConfigError(f"Only GPT checkpoints export to {args.format}; {bundle.name!r} is a {bundle.family} model.")
    out = export_hf_gpt2(bundle.model, bundle.model_config, args.out, tokenizer=bundle.tokenizer)
    extra = " with its tokenizer" if bundle.tokenizer is not None else ""
    print(f"exported {bundle.name!r} as GPT-2{extra} to {out}")
    print(f"load it with: transformers.GPT2LMHeadModel.from_pretrained({str(out)!r})")
    return 0
