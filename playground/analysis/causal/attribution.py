"""Attribution patching (Nanda 2023; Syed et al. 2023): patching's first-order approximation.

Patching a site changes its activation from ``a`` (receiver run) to ``a'`` (donor run). To
first order the metric changes by ``(a' - a) · dm/da``, with the gradient taken once on the
receiver run. One forward and one backward then estimate every cell of every grid, where real
patching needs one forward per cell. The estimate is exact when m is linear in the site, and
breaks where it is not (attention saturating, LayerNorm, large changes): :func:`agreement`
shows how far it is from real patching, cell by cell.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch
from torch import Tensor, nn

from playground.analysis.causal.patching import (
    DIRECTIONS,
    GRIDS,
    Layout,
    PatchGrid,
    Runs,
    labels_of,
)
from playground.errors import PlaygroundError
from playground.models.activations import patch_activations

BREAK_TOLERANCE = 0.2  # |attribution - patching| in normalised effect above which a cell is listed


def site_gradients(model: nn.Module, receiver: Tensor, runs: Runs, sites: Sequence[str]) -> tuple[float, dict[str, Tensor]]:
    """(metric, {site: d metric / d activation [1,T,...]}) on the receiver run.

    A zero tensor is added at every site (the forward is unchanged) and differentiated: the
    gradient with respect to it is the gradient with respect to the activation, and every
    path through later sites stays in the graph.
    """
    zeros: dict[str, Tensor] = {}

    def add_zero(site: str):
        def fn(act: Tensor) -> Tensor:
            z = zeros.setdefault(site, torch.zeros_like(act, requires_grad=True))
            return act + z
        return fn

    with torch.enable_grad(), patch_activations(model, {s: add_zero(s) for s in sites}):
        m = runs.metric(model(receiver))[0]
        grads = torch.autograd.grad(m, [zeros[s] for s in sites], allow_unused=True)
    return float(m.detach()), {s: (torch.zeros_like(zeros[s]) if g is None else g.detach()) for s, g in zip(sites, grads)}


def attribution_grids(model: nn.Module, runs: Runs, kinds: Sequence[str] = GRIDS, direction: str = "denoise",
                      tokens: Sequence[str] | None = None) -> dict[str, PatchGrid]:
    """Every chosen grid estimated by attribution patching; ``values`` = the estimated patched metric."""
    if direction not in DIRECTIONS:
        raise PlaygroundError(f"Direction {direction!r}: choose denoise or noise.")
    layout = Layout.of(model)
    T = runs.stream_len
    tokens = runs.labels(tokens)
    recv_name, donor_name = ("corrupted", "clean") if direction == "denoise" else ("clean", "corrupted")
    receiver = runs.corrupted_ids if direction == "denoise" else runs.clean_ids
    sites = layout.sites(kinds)
    m0, grads = site_gradients(model, receiver, runs, sites)
    grids = {}
    for kind in kinds:
        rows = []
        for layer in range(layout.n_layer):
            s = layout.site(kind, layer)
            delta = (runs.acts[donor_name][s] - runs.acts[recv_name][s]).to(grads[s].dtype)  # [1,T,D]
            contrib = (delta * grads[s])[0]  # [T,D]
            if kind == "heads":
                H = layout.n_head
                rows.append(contrib.view(T, H, -1).sum(dim=(0, 2)))  # [H]: all positions of each head
            else:
                rows.append(contrib.sum(-1))  # [T]
        est = m0 + torch.stack(rows).double().cpu().numpy()  # [L, cols]
        r, c = labels_of(kind, layout, tokens)
        grids[kind] = PatchGrid(kind, direction, "attribution", r, c, est, runs.clean, runs.corrupted, runs.metric.name)
    return grids


def agreement(patched: PatchGrid, approx: PatchGrid, tolerance: float = BREAK_TOLERANCE) -> dict:
    """How well attribution patching matches real patching on one grid (normalised effects).

    ``pearson`` r and ``kendall`` tau-b (scipy) over the cells, ``max_abs_error``, and the
    cells (``breaks``) where they differ by more than ``tolerance``: where the linear
    approximation breaks.
    """
    from scipy.stats import (  # here: scipy.stats adds ~1 s to start-up
        kendalltau,
        pearsonr,
    )

    a, b = patched.effect.ravel(), approx.effect.ravel()
    const = np.ptp(a) == 0 or np.ptp(b) == 0
    r = math.nan if const or a.size < 2 else float(pearsonr(a, b).statistic)
    tau = math.nan if const or a.size < 2 else float(kendalltau(a, b).statistic)
    err = np.abs(a - b)
    cols = len(patched.cols)
    breaks = [{"layer": patched.rows[i // cols], "col": patched.cols[i % cols], "patching": float(a[i]),
               "attribution": float(b[i])} for i in np.argsort(-err) if err[i] > tolerance]
    return {"grid": patched.kind, "pearson": r, "kendall": tau, "max_abs_error": float(err.max()),
            "cells": int(a.size), "breaks": breaks}


def agreement_frame(patched: dict[str, PatchGrid], approx: dict[str, PatchGrid]) -> pd.DataFrame:
    rows = [agreement(patched[k], approx[k]) for k in patched if k in approx]
    return pd.DataFrame([{**{k: v for k, v in r.items() if k != "breaks"}, "cells_off_by_0.2": len(r["breaks"])}
                         for r in rows])
