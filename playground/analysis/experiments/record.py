"""The debate's results kept with the model they were measured on.

A finished experiment on one of the user's own models leaves a small JSON record in that model's
folder (``experiments/<experiment>.json``: its settings, the summary's findings in words and the
aggregate numbers), so that a model card can show the debate table of the model it describes.
Only the latest run of each experiment is kept; a model retrained under the same name is a new
folder, so records never outlive the weights they describe. Records are written atomically and
read back defensively (a damaged or oversized file is skipped, never trusted).
"""
from __future__ import annotations

import json
import logging
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from playground.analysis.experiments.core import ExperimentResult, json_safe
from playground.analysis.experiments.summary import summarize
from playground.errors import PlaygroundError

log = logging.getLogger("playground.analysis.experiments.record")

RECORD_DIR = "experiments"
MAX_RECORD_BYTES = 256 * 1024  # a summary and a few dozen aggregates; anything bigger is not ours
SETTINGS_KEPT = ("n", "seed", "module", "heads", "views", "references", "methods", "level", "epsilon", "k",
                 "n_perm", "steps", "float64")
_NAME = re.compile(r"[a-z0-9_-]{1,40}")  # an experiment's name, as its file is named


def record_of(result: ExperimentResult) -> dict[str, Any]:
    """What is kept of a finished experiment: which one, its settings, its summary and aggregates."""
    summary = summarize(result)
    settings = {k: result.settings[k] for k in SETTINGS_KEPT if k in result.settings}
    return json_safe({
        "experiment": result.experiment,
        "title": summary.title,
        "findings": summary.findings,
        "notes": summary.notes,
        "examples": result.examples_done,
        "requested": result.n_requested,
        "stopped": result.stopped,
        "settings": settings,
        "stats": result.stats(),
    })


def save_record(model_dir: Path, result: ExperimentResult) -> Path:
    """Write `result`'s record into the model folder `model_dir` (atomically; replaces the last
    record of the same experiment) and return its path."""
    folder = Path(model_dir) / RECORD_DIR
    folder.mkdir(exist_ok=True)
    path = folder / f"{result.experiment}.json"
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(record_of(result), f, indent=1, allow_nan=False)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def record_if_own(workspace: Any, name: str, model_dir: Path, result: ExperimentResult) -> Path | None:
    """Save the record when `name` is one of the workspace's own models at `model_dir` and the run
    finished; None otherwise (library models are read-only, a stopped run is partial, a disk that
    refuses the write is logged)."""
    if workspace is None or result.stopped or not result.examples_done:
        return None
    try:
        entry = workspace.get("models", name)
    except PlaygroundError:  # a bundle folder outside the workspace: nothing to attach it to
        return None
    if entry.origin != "own" or Path(entry.path).resolve() != Path(model_dir).resolve():
        return None
    try:
        return save_record(Path(model_dir), result)
    except OSError as exc:  # a full or read-only disk never fails the finished experiment itself
        log.warning("could not keep the %s record with %s: %s", result.experiment, model_dir, exc)
        return None


def read_records(model_dir: Path) -> list[dict[str, Any]]:
    """The model's experiment records, sorted by experiment; damaged or oversized files are skipped."""
    folder = Path(model_dir) / RECORD_DIR
    if not folder.is_dir():
        return []
    out = []
    for path in sorted(folder.glob("*.json")):
        if path.name.startswith(".") or path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_RECORD_BYTES:
            continue
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(record, dict) and record.get("experiment") == path.stem and _NAME.fullmatch(path.stem) \
                and isinstance(record.get("findings"), list):
            out.append(record)
    return out


def records_markdown(records: list[dict[str, Any]]) -> str:
    """The debate section of a model card: one block per experiment with its settings and findings."""
    parts = []
    for r in records:
        settings = r.get("settings") if isinstance(r.get("settings"), dict) else {}
        shown = ", ".join(f"{k} {v}" for k, v in settings.items() if v not in (None, "", [], False))
        parts += [f"### {r.get('title') or r['experiment']}", "",
                  f"{r.get('examples', '?')} held-out examples" + (f" ({shown})" if shown else "") + ".", ""]
        parts += [f"- {f}" for f in r["findings"] if isinstance(f, str)]
        parts += [f"- _Note: {n}_" for n in r.get("notes") or [] if isinstance(n, str)]
        parts.append("")
    return "\n".join(parts)
