"""Command line: `python -m playground tokenizer|train|generate|analyze|bench|list|export ...`.

Each subcommand lives in `playground/cli/<name>.py` with `register(subparsers)`; they call the
same functions as the app's tabs.
"""
from __future__ import annotations

import argparse
import sys

from playground.cli import register_modules
from playground.errors import PlaygroundError

SUBCOMMANDS = ("tokenizer", "train", "generate", "analyze", "bench", "list", "export", "lesson", "reproduce", "heads", "positions", "coverage", "patch", "lens")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m playground", description="Transformer Playground from the command line.")
    parser.add_argument("--workspace", default=None, help="workspace folder (default: the repo's checkpoints/)")
    sub = parser.add_subparsers(dest="command", metavar="{" + ",".join(SUBCOMMANDS) + "}")
    register_modules(sub, "playground.cli", SUBCOMMANDS)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except PlaygroundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
