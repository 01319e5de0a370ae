"""One call for the views and the CLI: patch a pair in the chosen directions, estimate the same
grids by attribution patching, compare them, and read the logit lens of both inputs."""
from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from torch import nn

from playground.analysis.causal.attribution import (
    agreement,
    agreement_frame,
    attribution_grids,
)
from playground.analysis.causal.lens import LensResult, logit_lens
from playground.analysis.causal.pairs import Pair
from playground.analysis.causal.patching import (
    DIRECTIONS,
    GRIDS,
    Layout,
    PatchGrid,
    clean_and_corrupted,
    patch_grids,
)
from playground.errors import PlaygroundError, TooBigError
from playground.limits import cap
from playground.settings import DemoCaps


def count_cells(model: nn.Module, T: int, grids: Sequence[str], directions: Sequence[str]) -> int:
    """Patched rows a request costs (each cell is one row of a batched forward)."""
    layout = Layout.of(model)
    per = sum(layout.n_layer * (layout.n_head if g == "heads" else T) for g in grids)
    return per * len(directions)


def check_cells(n: int, caps: DemoCaps | None) -> None:
    """TooBigError above this server's ``max_patch_cells``, saying how to shrink the request."""
    limit = int(cap(caps, "max_patch_cells"))
    if n > limit:
        raise TooBigError(f"This request patches {n:,} cells; this server allows {limit:,}. Use fewer grids, one "
                          "direction, or a shorter input.")


@dataclass
class CausalReport:
    """Everything the Causal section shows for one pair."""

    pair: Pair
    grids: dict[str, dict[str, PatchGrid]]  # "denoise"/"noise" -> kind -> grid (real patching)
    attribution: dict[str, dict[str, PatchGrid]] = field(default_factory=dict)  # same keys, estimated
    lens: dict[str, LensResult] = field(default_factory=dict)  # "clean"/"corrupted"

    def frame(self) -> pd.DataFrame:
        """Every cell of every grid (CSV export)."""
        parts = [g.frame() for d in (self.grids, self.attribution) for per in d.values() for g in per.values()]
        return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()

    def agreement(self, direction: str) -> pd.DataFrame:
        return agreement_frame(self.grids.get(direction, {}), self.attribution.get(direction, {}))

    def breaks(self, direction: str) -> list[dict]:
        """Cells where attribution patching is off by more than 0.2 (normalised), worst first."""
        out = []
        for kind, g in self.grids.get(direction, {}).items():
            approx = self.attribution.get(direction, {}).get(kind)
            if approx is not None:
                out += [{"grid": kind, **b} for b in agreement(g, approx)["breaks"]]
        return sorted(out, key=lambda b: -abs(b["patching"] - b["attribution"]))

    def to_dict(self) -> dict:
        return {"pair": self.pair.to_dict(),
                "patching": {d: {k: g.to_dict() for k, g in per.items()} for d, per in self.grids.items()},
                "attribution": {d: {k: g.to_dict() for k, g in per.items()} for d, per in self.attribution.items()},
                "agreement": {d: self.agreement(d).to_dict(orient="records") for d in self.attribution},
                "lens": {k: v.to_dict() for k, v in self.lens.items()}}

    def save(self, path: str | Path) -> Path:
        """CSV (every cell) or JSON (everything) by the suffix."""
        path = Path(path)
        if path.suffix.lower() == ".csv":
            self.frame().to_csv(path, index=False)
        else:
            path.write_text(json.dumps(self.to_dict(), indent=1, default=float), encoding="utf-8")
        return path


def run_causal(model: nn.Module, pair: Pair, grids: Sequence[str] = GRIDS, directions: Sequence[str] = ("denoise",),
               attribution: bool = True, lens: bool = True, caps: DemoCaps | None = None,
               label: Callable[[int], str] = str, chunk: int | None = None,
               progress: Callable[[int, int], None] | None = None) -> CausalReport:
    """Patch ``pair`` on ``model`` (a GPT-style model), in every direction asked."""
    grids = [g for g in grids if g in GRIDS] or list(GRIDS)
    bad = [d for d in directions if d not in DIRECTIONS]
    if bad or not directions:
        raise PlaygroundError(f"Direction(s) {bad or 'none'}: choose denoise, noise or both.")
    T = pair.clean_ids.shape[1]
    n = count_cells(model, T, grids, directions)
    check_cells(n, caps)
    runs = clean_and_corrupted(model, pair.clean_ids, pair.corrupted_ids, pair.metric, grids)
    report = CausalReport(pair, {})
    done = 0
    for d in directions:
        def step(k: int, _: int, base: int = done) -> None:
            if progress is not None:
                progress(base + k, n)
        report.grids[d] = patch_grids(model, runs, grids, d, pair.tokens, chunk, step)
        done += n // len(directions)
        if attribution:
            report.attribution[d] = attribution_grids(model, runs, grids, d, pair.tokens)
    if lens:
        a = pair.metric.answer
        report.lens = {"clean": logit_lens(model, pair.clean_ids, pair.metric.position, a, label=label),
                       "corrupted": logit_lens(model, pair.corrupted_ids, pair.metric.position, a, label=label)}
    return report
