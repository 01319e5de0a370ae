"""Import every module of the playground package; print the ones that fail and exit 1 if any do.
(The floor check runs it under the lowest dependency versions pyproject.toml allows.)"""
from __future__ import annotations

import importlib
import pkgutil
import sys
import traceback

import playground

failed: list[str] = []
names = [m.name for m in pkgutil.walk_packages(playground.__path__, "playground.")]
for name in names:
    try:
        importlib.import_module(name)
    except Exception:  # noqa: BLE001 - report every failure, not just the first
        failed.append(name)
        print(f"import {name} failed:\n{traceback.format_exc()}", file=sys.stderr)
print(f"import_all: {len(names) - len(failed)}/{len(names)} playground modules import"
      + (f"; failed: {', '.join(failed)}" if failed else ""))
sys.exit(1 if failed else 0)
