"""One module per subcommand; each exposes `register(subparsers)`."""
from __future__ import annotations

import argparse

from playground.settings import make_settings
from playground.workspace import Workspace


def workspace_from(args: argparse.Namespace) -> Workspace:
    """The workspace named by the global --workspace flag (default: the repo's checkpoints/)."""
    return Workspace(make_settings(getattr(args, "workspace", None)).workspace)
