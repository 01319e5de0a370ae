"""Activation patching (Meng et al. 2022; Wang et al. 2022; Heimersheim & Nanda 2024).

Two inputs of the same length: a *clean* one, where the model gives the answer, and a
*corrupted* one that differs in a few tokens and gives another answer. A metric ``m`` reads
the logits (the logit difference of the two answers, or the answer's log-probability).

- **Denoising**: run the corrupted input, but at one site (a layer's residual stream at one
  position, a head's output, an attention or MLP output) put in the clean run's activation.
  If m comes back to the clean value, that site carries what the answer needs.
- **Noising**: run the clean input with the corrupted run's activation at one site. If m
  falls to the corrupted value, the answer needs that site.

Both are shown as the normalised effect ``(m_patched - m_corrupted) / (m_clean - m_corrupted)``:
0 = the corrupted value, 1 = the clean value.

Batched: every cell of a grid is one row of a batch; a chunk of cells is one forward, each row
patched at its own site, position and head (:func:`patched_metrics`).
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch
from torch import Tensor, nn

from playground.errors import PlaygroundError
from playground.models.activations import patch_activations, record_activations

GRIDS = ("resid", "attn", "mlp", "heads")
GRID_TITLES = {
    "resid": "residual stream entering each layer, per position",
    "attn": "attention output of each layer, per position",
    "mlp": "MLP output of each layer, per position",
    "heads": "each head's output (all positions)",
}
DIRECTIONS = ("denoise", "noise")
MIN_GAP = 0.05  # |clean - corrupted| metric below which the normalised effect would divide by almost 0
ACTIVATION_BUDGET = 2**25  # floats of activations per chunk (~128 MB fp32)
Progress = Callable[[int, int], None]  # (cells done, cells in all)


@dataclass(frozen=True)
class Metric:
    """What patching measures, read from logits [B,T,V] at ``position`` (a classifier's [B,C] has
    no position): the logit difference answer - wrong, or (``wrong`` None) the answer's log-probability."""

    position: int
    answer: int
    wrong: int | None = None

    def __call__(self, logits: Tensor) -> Tensor:
        row = logits[:, self.position] if logits.dim() == 3 else logits  # [B,V]
        row = row if row.dtype == torch.float64 else row.float()
        if self.wrong is None:
            return row.log_softmax(-1)[:, self.answer]  # [B]
        return row[:, self.answer] - row[:, self.wrong]  # [B]

    @property
    def name(self) -> str:
        return "logit difference" if self.wrong is not None else "log-probability"


@dataclass(frozen=True)
class Cell:
    """One patch: ``site`` (module:side), a position (None: all) and a head (None: the whole vector)."""

    site: str
    position: int | None = None
    head: int | None = None
    n_head: int = 1


@dataclass
class Layout:
    """The sites of a GPT-style model (``blocks`` of self-attention + MLP blocks)."""

    n_layer: int
    n_head: int

    @staticmethod
    def of(model: nn.Module) -> Layout:
        blocks = getattr(model, "blocks", None)
        if blocks is None or not all(hasattr(b, "attn") and hasattr(b, "mlp") for b in blocks):
            raise PlaygroundError("Activation patching needs a GPT-style model (blocks of attention + MLP); "
                                  f"{type(model).__name__} is not one.")
        return Layout(len(blocks), blocks[0].attn.n_head)

    def site(self, kind: str, layer: int) -> str:
        return {"resid": f"blocks.{layer}:in", "attn": f"blocks.{layer}.attn:out",
                "mlp": f"blocks.{layer}.mlp:out", "heads": f"blocks.{layer}.attn.out_proj:in"}[kind]

    def sites(self, kinds: Sequence[str]) -> list[str]:
        return [self.site(k, layer) for k in kinds for layer in range(self.n_layer)]

    def cells(self, kind: str, T: int) -> list[Cell]:
        """Row-major cells of a grid: (layer, position) or (layer, head)."""
        if kind == "heads":
            return [Cell(self.site(kind, layer), None, h, self.n_head)
                    for layer in range(self.n_layer) for h in range(self.n_head)]
        return [Cell(self.site(kind, layer), p) for layer in range(self.n_layer) for p in range(T)]


@dataclass
class PatchGrid:
    """One grid. ``values`` [layers, cols]: the patched metric; ``effect``: normalised (0 = corrupted, 1 = clean)."""

    kind: str
    direction: str
    method: str  # "patching" | "attribution"
    rows: list[str]
    cols: list[str]
    values: np.ndarray
    clean: float
    corrupted: float
    metric: str

    @property
    def effect(self) -> np.ndarray:
        return (self.values - self.corrupted) / (self.clean - self.corrupted)

    def frame(self) -> pd.DataFrame:
        """Long table, one row per cell (the CSV export)."""
        eff = self.effect
        return pd.DataFrame([{"grid": self.kind, "direction": self.direction, "method": self.method,
                              "layer": i, "layer_label": r, "col": j, "col_label": c,
                              "metric": float(self.values[i, j]), "effect": float(eff[i, j])}
                             for i, r in enumerate(self.rows) for j, c in enumerate(self.cols)])

    def to_dict(self) -> dict:
        return {"grid": self.kind, "direction": self.direction, "method": self.method, "rows": self.rows,
                "cols": self.cols, "metric_name": self.metric, "clean": self.clean, "corrupted": self.corrupted,
                "values": self.values.tolist(), "effect": self.effect.tolist()}


@dataclass
class Runs:
    """The clean and corrupted runs: ids [1,T], metric values and every site's activation [1,T,...]."""

    clean_ids: Tensor
    corrupted_ids: Tensor
    metric: Metric
    clean: float
    corrupted: float
    acts: dict[str, dict[str, Tensor]] = field(default_factory=dict)  # "clean"/"corrupted" -> site -> act

    @property
    def stream_len(self) -> int:
        """Positions of the residual stream: the tokens, plus any the model prepends (a [CLS] vector)."""
        return next(iter(self.acts["clean"].values())).shape[1]

    def labels(self, tokens: Sequence[str] | None) -> list[str]:
        """One label per stream position ("[prefix]" for positions the model adds before the tokens)."""
        tokens = list(tokens) if tokens is not None else [str(int(i)) for i in self.clean_ids[0]]
        return ["[prefix]"] * (self.stream_len - len(tokens)) + tokens


def check_pair(clean_ids: Tensor, corrupted_ids: Tensor, metric: Metric) -> None:
    """Clear messages for inputs patching cannot compare."""
    if clean_ids.shape != corrupted_ids.shape or clean_ids.dim() != 2 or clean_ids.shape[0] != 1:
        raise PlaygroundError(f"The clean and corrupted inputs must have the same number of tokens; they have "
                              f"{clean_ids.shape[-1]} and {corrupted_ids.shape[-1]}.")
    T = clean_ids.shape[1]
    if not -T <= metric.position < T and metric.position != 0:
        raise PlaygroundError(f"The metric's position {metric.position} is outside the {T} tokens.")


@torch.no_grad()
def clean_and_corrupted(model: nn.Module, clean_ids: Tensor, corrupted_ids: Tensor, metric: Metric,
                        kinds: Sequence[str] = GRIDS) -> Runs:
    """Run both inputs once, keeping every site's activation and the metric."""
    check_pair(clean_ids, corrupted_ids, metric)
    sites = Layout.of(model).sites(kinds)
    runs = Runs(clean_ids, corrupted_ids, metric, 0.0, 0.0)
    values = {}
    for name, ids in (("clean", clean_ids), ("corrupted", corrupted_ids)):
        with record_activations(model, sites) as acts:
            values[name] = float(metric(model(ids))[0])
        runs.acts[name] = dict(acts)
    runs.clean, runs.corrupted = values["clean"], values["corrupted"]
    if abs(runs.clean - runs.corrupted) < MIN_GAP:
        raise PlaygroundError(f"The clean and corrupted inputs give almost the same {metric.name} ({runs.clean:.4g} "
                              f"and {runs.corrupted:.4g}, closer than {MIN_GAP}): this model does not tell them apart, "
                              "so there is no difference to restore and the normalised effect would divide by almost 0. "
                              "Change a token the answer depends on.")
    return runs


def _edit(donor: Tensor, mask: Tensor, n_head: int, per_head: bool) -> Callable[[Tensor], Tensor]:
    """fn(act [B,T,D]) -> act with the masked entries taken from donor [1,T,D]."""
    def fn(act: Tensor) -> Tensor:
        d = donor.to(act.dtype)
        if per_head:
            B, T, D = act.shape
            heads = act.view(B, T, n_head, D // n_head)  # [B,T,H,hd]
            out = torch.where(mask, d.view(1, T, n_head, D // n_head), heads)  # mask [B,T,H,1]
            return out.reshape(B, T, D)
        return torch.where(mask, d, act)  # mask [B,T,1]
    return fn


def chunk_size(model: nn.Module, T: int) -> int:
    """Cells per forward: rows whose activations fit ACTIVATION_BUDGET."""
    cfg = getattr(model, "config", None)
    d = getattr(cfg, "d_model", 256)
    layers = getattr(cfg, "n_layer", 4)
    vocab = getattr(cfg, "vocab_size", 256)
    return max(1, ACTIVATION_BUDGET // (T * (d * layers * 8 + vocab)))


@torch.no_grad()
def patched_metrics(model: nn.Module, receiver: Tensor, donor: dict[str, Tensor], cells: Sequence[Cell],
                    metric: Metric, chunk: int | None = None, progress: Progress | None = None) -> np.ndarray:
    """The metric of ``receiver`` [1,T] with each cell's activation taken from ``donor`` -> [n_cells].

    One forward per chunk of cells: row b of the chunk is the receiver patched at cell b only.
    """
    T = next(iter(donor.values())).shape[1]  # stream positions (a prepended [CLS] included)
    chunk = chunk or chunk_size(model, T)
    out = np.empty(len(cells))
    device = receiver.device
    for start in range(0, len(cells), chunk):
        part = cells[start:start + chunk]
        B = len(part)
        masks: dict[str, Tensor] = {}
        for b, cell in enumerate(part):
            if cell.head is None:
                m = masks.setdefault(cell.site, torch.zeros(B, T, 1, dtype=torch.bool, device=device))
                m[b, slice(None) if cell.position is None else cell.position] = True
            else:
                m = masks.setdefault(cell.site, torch.zeros(B, T, cell.n_head, 1, dtype=torch.bool, device=device))
                m[b, slice(None) if cell.position is None else cell.position, cell.head] = True
        heads = {c.site: c.n_head for c in part if c.head is not None}
        edits = {s: _edit(donor[s], m, heads.get(s, 1), s in heads) for s, m in masks.items()}
        with patch_activations(model, edits):
            out[start:start + B] = metric(model(receiver.expand(B, -1))).double().cpu().numpy()
        if progress is not None:
            progress(start + B, len(cells))
    return out


def labels_of(kind: str, layout: Layout, tokens: Sequence[str]) -> tuple[list[str], list[str]]:
    rows = [f"L{layer}" for layer in range(layout.n_layer)]
    cols = [f"H{h}" for h in range(layout.n_head)] if kind == "heads" else [f"{p}:{t}" for p, t in enumerate(tokens)]
    return rows, cols


def patch_grids(model: nn.Module, runs: Runs, kinds: Sequence[str] = GRIDS, direction: str = "denoise",
                tokens: Sequence[str] | None = None, chunk: int | None = None,
                progress: Progress | None = None) -> dict[str, PatchGrid]:
    """Every chosen grid, patched for real: denoising (clean into corrupted) or noising."""
    if direction not in DIRECTIONS:
        raise PlaygroundError(f"Direction {direction!r}: choose denoise or noise.")
    layout = Layout.of(model)
    T = runs.stream_len
    tokens = runs.labels(tokens)
    receiver, donor = ((runs.corrupted_ids, runs.acts["clean"]) if direction == "denoise"
                       else (runs.clean_ids, runs.acts["corrupted"]))
    all_cells = {k: layout.cells(k, T) for k in kinds}
    total = sum(len(c) for c in all_cells.values())
    done = 0
    grids = {}
    for kind, cells in all_cells.items():
        def step(n: int, _: int, base: int = done) -> None:
            if progress is not None:
                progress(base + n, total)
        values = patched_metrics(model, receiver, donor, cells, runs.metric, chunk, step)
        done += len(cells)
        rows, cols = labels_of(kind, layout, tokens)
        grids[kind] = PatchGrid(kind, direction, "patching", rows, cols, values.reshape(len(rows), len(cols)),
                                runs.clean, runs.corrupted, runs.metric.name)
    return grids


class Eta:
    """Progress with an estimated time left: ``Eta()(done, total)`` -> "120/480 cells, about 3 s left"."""

    def __init__(self) -> None:
        self.start = time.perf_counter()

    def __call__(self, done: int, total: int) -> str:
        spent = time.perf_counter() - self.start
        left = spent / done * (total - done) if done else float("nan")
        tail = f", about {left:.0f} s left" if math.isfinite(left) else ""
        return f"{done}/{total} cells{tail}"
