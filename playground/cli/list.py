"""`python -m playground list`: tokenizers and models in the workspace with key metadata."""
from __future__ import annotations

import argparse
import json

from playground.cli import workspace_from
from playground.workspace import Entry, Workspace


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("list", help="list tokenizers and models in the workspace")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.set_defaults(func=run)


def describe(entry: Entry) -> dict[str, object]:
    """Key facts of a workspace entry, for listings."""
    meta = entry.meta
    if entry.kind == "tokenizers":
        return {"name": entry.name, "kind": "tokenizer", "vocab_size": meta.get("vocab_size"),
                "model": meta.get("model", meta.get("kind")), "corpus": _short(meta.get("corpus")), **_origin(entry)}
    metrics = meta.get("metrics") or {}
    return {"name": entry.name, "kind": "model", "family": meta.get("family"), "preset": meta.get("preset"),
            "step": meta.get("step"), **{k: metrics[k] for k in list(metrics)[:3]}, **_origin(entry)}


def _origin(entry: Entry) -> dict[str, object]:
    """`origin=library` for a read-only shelf's entry (the shipped checkpoints); nothing for own ones."""
    return {} if entry.origin == "own" else {"origin": entry.origin}


def _short(value: object) -> object:
    if isinstance(value, dict):
        return value.get("name") or value.get("description")
    return value


def listing(workspace: Workspace) -> list[dict[str, object]]:
    """Every complete entry in the workspace, described."""
    return [describe(e) for kind in ("tokenizers", "models") for e in workspace.list(kind)]


def run(args: argparse.Namespace) -> int:
    ws = workspace_from(args)
    rows = listing(ws)
    if args.json:
        print(json.dumps(rows, indent=2, default=str))
        return 0
    print(f"workspace: {ws.root}")
    if not rows:
        print("(empty: build a tokenizer or train a model first)")
    for row in rows:
        rest = "  ".join(f"{k}={v}" for k, v in row.items() if k not in ("name", "kind") and v is not None)
        print(f"{row['kind']:<10} {row['name']:<32} {rest}")
    return 0
