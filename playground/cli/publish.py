"""`python -m playground publish NAME --out DIR [--tokenizer] [--repo USER/NAME]`: a model or
tokenizer as a Hub-ready folder with its card, uploaded with huggingface_hub when --repo is given
(the token: HF_TOKEN or `hf auth login`; offline it says so and leaves the folder)."""
from __future__ import annotations

import argparse

from playground.cli import workspace_from
from playground.hub_share import prepare, upload


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("publish", help="write a Hub-ready folder (card, curves) and optionally upload it")
    parser.add_argument("name", help="a model (or, with --tokenizer, a tokenizer) in the workspace")
    parser.add_argument("--tokenizer", action="store_true", help="publish the tokenizer NAME, not a model")
    parser.add_argument("--out", required=True, help="a new or empty folder to write")
    parser.add_argument("--repo", help="upload to this Hub repository (user/name; created private when missing)")
    parser.add_argument("--public", action="store_true", help="create the repository public (default: private)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    folder = prepare(workspace_from(args), "tokenizer" if args.tokenizer else "model", args.name, args.out)
    print(f"wrote {len(folder.files)} files to {folder.path}: {', '.join(folder.files)}")
    if args.repo:
        print(f"uploaded to {upload(folder, args.repo, private=not args.public)}")
    return 0
