"""`python -m playground bench tokenizer|train|generate|analyze|experiments`: figures beside a peer.

Each target lives in `playground/bench/<target>.py` with `register(subparsers)`.
"""
from __future__ import annotations

import argparse
import importlib

TARGETS = ("tokenizer", "train", "generate", "analyze", "experiments")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("bench", help="benchmarks that print our figures beside a peer's")
    targets = parser.add_subparsers(dest="target", metavar="{" + ",".join(TARGETS) + "}")
    for name in TARGETS:
        try:
            module = importlib.import_module(f"playground.bench.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"playground.bench.{name}":
                raise
            continue
        module.register(targets)
    parser.set_defaults(func=lambda args: (parser.print_help(), 2)[1])
