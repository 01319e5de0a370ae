"""One module per subcommand; each exposes `register(subparsers)`."""
from __future__ import annotations

import argparse
import importlib

from playground.settings import make_settings
from playground.workspace import Workspace


def workspace_from(args: argparse.Namespace) -> Workspace:
    """The workspace named by the global --workspace flag (default: the repo's checkpoints/), with
    the shipped checkpoints as a read-only shelf behind it, as the app shows them."""
    settings = make_settings(getattr(args, "workspace", None))
    return Workspace(settings.workspace, shelves=[Workspace(p) for p in settings.library])


def register_modules(subparsers: argparse._SubParsersAction, package: str, names: tuple[str, ...]) -> None:
    """Call `register(subparsers)` of `package.<name>` for each name (imported by name so a
    subcommand's own imports load only when the CLI starts, not with the app)."""
    for name in names:
        importlib.import_module(f"{package}.{name}").register(subparsers)
