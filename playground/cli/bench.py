"""`python -m playground bench tokenizer|train|quality|gpu|generate|analyze|experiments|serve`: figures beside a peer
(serve: the real app under many simulated users).

Each target lives in `playground/bench/<target>.py` with `register(subparsers)`.
"""
from __future__ import annotations

import argparse

from playground.cli import register_modules

TARGETS = ("tokenizer", "train", "quality", "gpu", "generate", "analyze", "experiments", "serve", "serve_generate", "browser")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("bench", help="benchmarks that print our figures beside a peer's")
    targets = parser.add_subparsers(dest="target", metavar="{" + ",".join(TARGETS) + "}")
    register_modules(targets, "playground.bench", TARGETS)
    parser.set_defaults(func=lambda args: (parser.print_help(), 2)[1])
