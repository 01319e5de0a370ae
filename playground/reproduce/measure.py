"""What is measured after each run of an experiment: final metrics, the validation curve, and
(for language models) the loss at each position, also past the trained context."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from playground.analysis.position_loss import loss_by_position
from playground.bundle import load_bundle
from playground.families import get_family
from playground.training.engine import TrainResult
from playground.training.spec import RunSpec
from playground.workspace import Workspace

FINAL_KEYS = ("val_loss", "exact_match", "token_accuracy", "accuracy")


def final_metrics(result: TrainResult) -> dict[str, float]:
    """The last evaluation's val loss and accuracy-like metrics (no throughput: it is machine noise)."""
    out = {"val_loss": result.val_loss}
    out.update({k: v for k, v in result.metrics.items() if k in FINAL_KEYS})
    return {k: round(float(v), 5) for k, v in out.items() if v is not None}


def val_curve(result: TrainResult) -> list[list[float]]:
    """[[step, train_loss, val_loss], ...] at every evaluation."""
    return [[e.step, round(float(e.train_loss), 5) if e.train_loss is not None else None, round(float(e.val_loss), 5)]
            for e in result.events if e.kind == "eval" and e.val_loss is not None]


def by_length(result: TrainResult) -> list[dict[str, Any]]:
    """Exact match per source-length bucket at the last evaluation: [{bucket, lo, exact_match, n}, ...]."""
    rows = []
    for key, value in result.metrics.items():
        if not key.startswith("exact_match@"):
            continue
        bucket = key.split("@", 1)[1]
        lo = int(bucket.split("-")[0].rstrip("+"))
        n = result.metrics.get(f"n@{bucket}")
        rows.append({"bucket": bucket, "lo": lo, "exact_match": round(float(value), 5),
                     "token_accuracy": round(float(result.metrics.get(f"token_accuracy@{bucket}", float("nan"))), 5),
                     "n": int(n) if n is not None else None})
    return sorted(rows, key=lambda r: r["lo"])


def position_loss(spec: RunSpec, workspace: Workspace, name: str, factor: int, windows: int = 64,
                  batch: int = 16) -> dict[str, Any]:
    """Mean next-token loss at each position 0 .. factor x block_size - 1 on validation windows.

    A model whose positions cannot go past block_size (a learned table) is measured on the
    first block_size positions only; `trained` is the block size, `positions` how far it went.
    """
    bundle = load_bundle(name, workspace)
    model = bundle.model
    block = int(bundle.model_config.block_size)
    length = block * factor if getattr(model, "extrapolates", False) else block
    prep = get_family(spec.family).adapter.prepare(spec.data, spec.preset.model, workspace, tokenizer=bundle.tokenizer)
    per_position = loss_by_position(model, prep.payload.val, length, windows, batch)  # [L]
    return {"trained": block, "positions": length, "loss": [round(v, 4) for v in per_position]}


POSITION_FACTOR = 4  # evaluate language models out to 4 x the trained context


def _by_length_extra(spec: RunSpec, workspace: Workspace, name: str, result: TrainResult) -> dict[str, Any]:
    return {"by_length": by_length(result)}


def _position_extra(spec: RunSpec, workspace: Workspace, name: str, result: TrainResult) -> dict[str, Any]:
    return {"positions": position_loss(spec, workspace, name, POSITION_FACTOR)}


# Measurements a claim adds to each run's final metrics and curve: name -> (spec, workspace, run, result) -> fields
EXTRAS: dict[str, Callable[[RunSpec, Workspace, str, TrainResult], dict[str, Any]]] = {
    "by_length": _by_length_extra,
    "positions": _position_extra,
}
