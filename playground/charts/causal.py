"""Charts of the causal section: patching heatmaps beside their attribution estimate, the
proxies-vs-causal experiment."""
from __future__ import annotations

from collections.abc import Mapping

import altair as alt
import pandas as pd

from playground.analysis.causal.patching import GRID_TITLES, PatchGrid
from playground.analysis.causal.proxies import PROXY_TITLES


def _frame(grid: PatchGrid) -> pd.DataFrame:
    f = grid.frame()
    f["shown"] = f["effect"].clip(-1.5, 1.5)
    f["col_label"] = f["col_label"].str.replace("\n", "⏎").str.replace(" ", "␣")  # whitespace tokens made visible
    return f


CELL_PX = 34  # narrower cells get no number written in them (they would overlap)
MAX_WIDTH = 1100


def grid_heatmap(grid: PatchGrid, title: str) -> alt.Chart:
    """Layers x positions (or heads), colour = normalised effect (0 = corrupted, 1 = clean; clipped to ±1.5)."""
    f = _frame(grid)
    cols = list(dict.fromkeys(f["col_label"]))
    width = min(MAX_WIDTH, max(240, CELL_PX * len(cols)))
    base = alt.Chart(f).encode(
        x=alt.X("col_label:N", sort=cols, title="head" if grid.kind == "heads" else "position:token"),
        y=alt.Y("layer_label:N", sort=list(dict.fromkeys(f["layer_label"])), title="layer"),
    )
    rect = base.mark_rect().encode(
        color=alt.Color("shown:Q", title="effect", scale=alt.Scale(scheme="redblue", domain=[-1, 1], domainMid=0,
                                                                   reverse=True, clamp=True)),
        tooltip=["layer_label", "col_label", alt.Tooltip("effect:Q", format=".3f"),
                 alt.Tooltip("metric:Q", format=".3f")])
    text = base.mark_text(fontSize=9).encode(text=alt.Text("effect:Q", format=".2f"))
    layers = rect + text if width / len(cols) >= CELL_PX else rect
    return layers.properties(title=title, width=width, height=max(60, 22 * len(grid.rows)))


def patching_chart(grids: Mapping[str, PatchGrid], approx: Mapping[str, PatchGrid] | None = None) -> alt.VConcatChart:
    """Per grid: real patching, and the attribution-patching estimate beside it (heads) or under
    it (positions: a row of cells as wide as the input)."""
    rows: list = []
    for kind, g in grids.items():
        real = grid_heatmap(g, f"{g.direction}: {GRID_TITLES[kind]}")
        est = grid_heatmap(approx[kind], "attribution patching of the same cells (linear estimate)") \
            if approx and kind in approx else None
        if est is None:
            rows.append(real)
        elif kind == "heads":
            rows.append(alt.hconcat(real, est))
        else:
            rows += [real, est]
    # room at the top for the plot's label badge
    return alt.vconcat(*rows).resolve_scale(color="shared").properties(padding={"top": 30, "left": 5, "right": 5,
                                                                                "bottom": 5})


def causal_experiment_chart(table: list[dict]) -> alt.Chart:
    """Mean τ ± std per proxy, one panel per causal target."""
    f = pd.DataFrame(table)
    f["lo"], f["hi"] = f["mean tau"] - f["std"], f["mean tau"] + f["std"]
    f["proxy"] = f["proxy"].map(lambda p: PROXY_TITLES.get(p, p))
    f["causal target"] = f["causal target"].map({"input": "effect at the input (block 0)",
                                                 "last": "effect entering the last block"}).fillna(f["causal target"])
    base = alt.Chart(f).encode(y=alt.Y("proxy:N", title=None))
    bars = base.mark_bar().encode(x=alt.X("mean tau:Q", title="Kendall τ with the causal effect",
                                          scale=alt.Scale(domain=[-1, 1])),
                                  tooltip=["proxy", "causal target", "mean tau", "std", "share p<=0.05"])
    err = base.mark_rule().encode(x="lo:Q", x2="hi:Q")
    return (bars + err).properties(width=360, height=120).facet(
        row=alt.Row("causal target:N", title=None, header=alt.Header(labelAngle=0, labelAlign="left"))).properties(
        padding={"top": 30, "left": 5, "right": 5, "bottom": 5})
