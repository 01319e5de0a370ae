"""`python -m playground import SOURCE [--name NAME] [--library [DIR]]`: a pretrained Hugging Face
model (a save_pretrained folder or a Hub id) converted into the playground's own family, saved as
a read-only bundle in the workspace or in a library folder every app user sees.

Prints the plan (architecture, family, parameters, memory, download size) before anything is
downloaded or loaded, then a Hub download's bytes as they arrive (the import box's lines: one at
the start, at every further tenth of the file and at its end); Ctrl-C during the download stops
it and imports nothing."""
from __future__ import annotations

import argparse
from collections.abc import Generator
from contextlib import closing
from typing import Any

from playground.cli import workspace_from
from playground.pretrained.importer import check_name, iter_weights, plan_import, run_import
from playground.pretrained.progress import DownloadProgress
from playground.settings import SHIPPED_LIBRARY, make_settings
from playground.workspace import Workspace


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("import", help="import a pretrained GPT-2 / BERT / DistilBERT / ViT from "
                                                  "a save_pretrained folder or the Hugging Face Hub")
    parser.add_argument("source", help="a folder written by save_pretrained, or a Hub id (gpt2, distilgpt2, "
                                       "bert-base-uncased, google/vit-base-patch16-224, ...)")
    parser.add_argument("--name", default=None, help="the model's name in the workspace (default: the id's last part)")
    parser.add_argument("--library", nargs="?", const=str(SHIPPED_LIBRARY), default=None, metavar="DIR",
                        help="save into a library folder (read-only to every app user; default: the shipped one)")
    parser.add_argument("--revision", default=None, help="a Hub branch, tag or commit (default: main)")
    parser.add_argument("--offline", action="store_true", help="read the Hugging Face cache only (as HF_HUB_OFFLINE=1)")
    parser.add_argument("--demo", action="store_true", help="apply the demo caps (the largest import is distilgpt2-sized)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    settings = make_settings(getattr(args, "workspace", None), demo=args.demo)
    workspace = Workspace(args.library) if args.library else workspace_from(args)
    plan = plan_import(args.source, caps=settings.caps, offline=True if args.offline else None, revision=args.revision)
    print(plan.summary(), flush=True)
    name = check_name(plan, workspace, args.name)  # before any download
    with closing(iter_weights(plan.source)) as weights:  # Ctrl-C closes it: the download is cut off
        tensors = print_progress(weights)
    path = run_import(plan, workspace, name, tensors=tensors)
    where = "library" if args.library else "workspace"
    print(f"imported {path.name!r} into the {where} ({path.parent.parent}); read-only: analyse it, generate with it, "
          "or fine-tune from it (data.init_from).")
    return 0


def print_progress(weights: Generator[DownloadProgress | None, None, Any], steps: int = 10) -> Any:
    """Print a download's progress lines (its start, every 1/steps of a file, its end); return the weights."""
    shown: dict[str, int | None] = {}
    while True:
        try:
            event = next(weights)
        except StopIteration as done:
            return done.value
        if event is None:  # nothing downloaded yet
            continue
        step = None if event.fraction is None else int(event.fraction * steps)  # 0 .. steps
        if event.filename not in shown or shown[event.filename] != step:
            shown[event.filename] = step
            print(event.line(), flush=True)
