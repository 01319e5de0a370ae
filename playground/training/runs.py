"""Runs in the workspace as tables: final metrics per run, curves and source-length buckets.

Pure functions over the bundles' config.json and metrics.csv (the Train tab and the CLI use them).
"""
from __future__ import annotations

from typing import Any

import pandas as pd

from playground.bundle import read_metrics_csv
from playground.families import FAMILIES
from playground.training.checkpoint import TRAIN_LOG
from playground.workspace import Workspace

SUMMARY_COLUMNS = ["run", "family", "preset", "step", "status", "val_loss", "train_loss", "accuracy", "exact_match",
                   "token_accuracy", "throughput", "unit", "parameters", "elapsed_s"]


def _family_unit(family: str | None) -> str:
    """What a family's throughput counts (bundles written before runs recorded their unit)."""
    return FAMILIES[family].adapter.unit if family in FAMILIES else "tokens"


def runs_table(workspace: Workspace) -> pd.DataFrame:
    """One row per model in the workspace with its final metrics (newest first by name order)."""
    rows: list[dict[str, Any]] = []
    for entry in workspace.list("models"):
        cfg = entry.meta
        metrics = cfg.get("metrics") or {}
        run = cfg.get("run") or {}
        unit = run.get("unit") or _family_unit(cfg.get("family"))
        rows.append({
            "run": entry.name, "family": cfg.get("family"), "preset": cfg.get("preset"), "step": cfg.get("step"),
            "status": metrics.get("status") or run.get("status"),
            "val_loss": metrics.get("val_loss"), "train_loss": metrics.get("train_loss"),
            "accuracy": metrics.get("accuracy"), "exact_match": metrics.get("exact_match"),
            "token_accuracy": metrics.get("token_accuracy"), "throughput": metrics.get(f"{unit}_per_s"),
            "unit": unit, "parameters": run.get("parameters"), "elapsed_s": run.get("elapsed_s"),
        })
    df = pd.DataFrame(rows, columns=SUMMARY_COLUMNS)
    return df.dropna(axis=1, how="all") if not df.empty else df


def run_rows(workspace: Workspace, names: list[str]) -> pd.DataFrame:
    """metrics.csv of several runs stacked, with a `run` column (wide: one row per evaluation)."""
    frames = []
    for name in names:
        if not workspace.exists("models", name):
            continue
        rows = read_metrics_csv(workspace.path("models", name) / "metrics.csv")
        if rows:
            frames.append(pd.DataFrame(rows).assign(run=name))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["run", "step"])


def run_history(workspace: Workspace, name: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A saved run's step events (train_log.csv: step, train_loss, lr, grad_norm, throughput) and
    evaluations (metrics.csv), the curves a resumed run continues; empty lists when absent.
    Older bundles have no step log: their train curve is empty rather than drawn from metrics.csv's
    train_loss, which is an average over each evaluation interval, not a step's value."""
    if not workspace.exists("models", name):
        return [], []
    path = workspace.path("models", name)
    return read_metrics_csv(path / TRAIN_LOG), read_metrics_csv(path / "metrics.csv")


def loss_curves(rows: pd.DataFrame) -> pd.DataFrame:
    """Long frame run, step, split, loss from :func:`run_rows` (train and val loss per evaluation)."""
    cols = [c for c in ("train_loss", "val_loss") if c in rows]
    if rows.empty or not cols:
        return pd.DataFrame(columns=["run", "step", "split", "loss"])
    long = rows.melt(id_vars=["run", "step"], value_vars=cols, var_name="split", value_name="loss").dropna()
    long["split"] = long["split"].str.replace("_loss", "", regex=False)
    return long.reset_index(drop=True)


def bucket_table(workspace: Workspace, names: list[str]) -> pd.DataFrame:
    """Accuracy per source-length bucket at each run's last evaluation (seq2seq runs only).

    Columns: run, bucket ("40-49"), length (bucket start), exact_match, token_accuracy, n.
    """
    out = []
    for name in names:
        if not workspace.exists("models", name):
            continue
        rows = read_metrics_csv(workspace.path("models", name) / "metrics.csv")
        if not rows:
            continue
        last = rows[-1]
        for key, value in last.items():
            if not key.startswith("exact_match@") or value is None:
                continue
            bucket = key.split("@", 1)[1]
            out.append({"run": name, "bucket": bucket, "length": int(bucket.split("-")[0]), "exact_match": value,
                        "token_accuracy": last.get(f"token_accuracy@{bucket}"), "n": last.get(f"n@{bucket}")})
    df = pd.DataFrame(out, columns=["run", "bucket", "length", "exact_match", "token_accuracy", "n"])
    return df.sort_values(["run", "length"]).reset_index(drop=True)
