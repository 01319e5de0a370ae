"""`python -m playground export CHECKPOINT --format hf-gpt2 --out DIR`: a checkpoint in another format,
e.g. a GPT as a Hugging Face transformers GPT-2 model (loadable with GPT2LMHeadModel.from_pretrained).
Which formats a checkpoint exports to is its family's say (``Family.exports``)."""
from __future__ import annotations

import argparse

from playground.bundle import load_bundle
from playground.cli import workspace_from
from playground.errors import ConfigError
from playground.families import FAMILIES, get_family
from playground.pretrained.export import export_pretrained

FORMATS = (*sorted({fmt for family in FAMILIES.values() for fmt in family.exports}), "hf")  # hf: an imported model's own
LOADERS = {"hf-gpt2": ("GPT-2", "transformers.GPT2LMHeadModel.from_pretrained")}  # format -> (name, how to load it)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("export", help=f"export a checkpoint to another format ({', '.join(FORMATS)})")
    parser.add_argument("checkpoint", help="a bundle folder or a model name in the workspace")
    parser.add_argument("--format", choices=FORMATS, default="hf-gpt2", help="target format (default: hf-gpt2)")
    parser.add_argument("--out", required=True, help="folder to write (created if missing)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    bundle = load_bundle(args.checkpoint, workspace_from(args))
    if args.format == "hf":  # an imported pretrained model, back in its transformers architecture
        out = export_pretrained(bundle, args.out)
        print(f"exported {bundle.name!r} as {bundle.config['pretrained']['architecture']} to {out}")
        return 0
    write = get_family(bundle.family).exports.get(args.format)
    if write is None:
        able = " / ".join(name for name, family in FAMILIES.items() if args.format in family.exports)
        raise ConfigError(f"Only {able} checkpoints export to {args.format}; {bundle.name!r} is a {bundle.family} model.")
    out = write(bundle.model, bundle.model_config, args.out, tokenizer=bundle.tokenizer)
    extra = " with its tokenizer" if bundle.tokenizer is not None else ""
    name, loader = LOADERS.get(args.format, (args.format, None))
    print(f"exported {bundle.name!r} as {name}{extra} to {out}")
    if loader:
        print(f"load it with: {loader}({str(out)!r})")
    return 0
