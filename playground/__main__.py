"""Command line: `python -m playground tokenizer|train|generate|analyze|bench|list|export|import ...`.

Each subcommand lives in `playground/cli/<name>.py` with `register(subparsers)`; they call the
same functions as the app's tabs.
"""
from __future__ import annotations

import argparse
import sys

from playground.cli import register_modules
from playground.errors import PlaygroundError

SUBCOMMANDS = ("tokenizer", "train", "generate", "analyze", "bench", "list", "export", "lesson", "reproduce", "heads", "positions",
               "coverage", "import_model", "patch", "lens", "publish")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The CLI's parser; given a known `command`, only that subcommand's module is imported (each
    pulls in its own libraries: torch, pandas, altair, httpx), else all of them (for --help)."""
    parser = argparse.ArgumentParser(prog="python -m playground", description="Transformer Playground from the command line.")
    parser.add_argument("--workspace", default=None, help="workspace folder (default: the repo's checkpoints/)")
    modules = {name.removesuffix("_model"): name for name in SUBCOMMANDS}  # import_model.py: `import` is a keyword
    sub = parser.add_subparsers(dest="command", metavar="{" + ",".join(modules) + "}")
    register_modules(sub, "playground.cli", (modules[command],) if command in modules else SUBCOMMANDS)
    return parser


def command_of(argv: list[str]) -> str | None:
    """The subcommand named in `argv` (after the global options), or None."""
    globals_only = argparse.ArgumentParser(add_help=False)
    globals_only.add_argument("--workspace")
    _, rest = globals_only.parse_known_args(argv)
    return rest[0] if rest and not rest[0].startswith("-") else None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(command_of(argv))
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
