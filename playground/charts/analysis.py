"""Altair charts for the Analyze tab: DataFrame in, Chart out (pure).

Frames come from ``playground.analysis.explain.per_input.InputAnalysis.to_frame()`` (long: method,
row, row_label, unit, unit_label, special, value) and :func:`head_frame`. Values are shown
normalised per method (and per output row) by the largest |value| over the real units, so
methods on different scales share one colour scale: signed methods run from -1 (blue) to +1
(red), the others from 0 to 1. Special tokens are drawn grey. Large frames are passed as
inline values (no 5000-row limit).
"""
from __future__ import annotations

import base64
import io
import math
from typing import Any

import altair as alt
import numpy as np
import pandas as pd
from PIL import Image

from playground.charts.layout import FULL, fit_width, panel_width

LABEL_PX = 6.0  # width of one character of a strip's 9-px token label
LABEL_CHARS = 14  # a strip cell grows to hold a token this long at most
MIN_CELL = 18  # px: the narrowest cell (one character)
SIGNED_SCALE = alt.Scale(domain=[-1, 0, 1], range=["#2166ac", "#f7f7f7", "#b2182b"])
UNSIGNED_SCALE = alt.Scale(domain=[0, 1], range=["#f7f7f7", "#b2182b"])


def _data(df: pd.DataFrame) -> alt.Data:
    return alt.Data(values=df.replace({np.nan: None}).to_dict(orient="records"))


def normalised(frame: pd.DataFrame) -> pd.DataFrame:
    """Add ``norm``: value / max |value| over the real units of the same (method, row); specials -> NaN."""
    df = frame.copy()
    real = df[~df["special"].astype(bool)] if "special" in df else df
    scale = real.groupby(["method", "row"])["value"].apply(lambda v: np.abs(v).max())
    df["norm"] = [v / s if s and s > 0 else 0.0
                  for v, s in zip(df["value"], scale.reindex(pd.MultiIndex.from_frame(df[["method", "row"]])).to_numpy())]
    if "special" in df:
        df.loc[df["special"].astype(bool), "norm"] = np.nan
    return df


def token_strips_chart(frame: pd.DataFrame, row: int = 0, signed_methods: set[str] | None = None) -> alt.Chart:
    """One strip per method over the input tokens (one output row of the long frame)."""
    df = normalised(frame[frame["row"] == row])
    order = list(dict.fromkeys(df["method"]))
    df["token"] = [f"{u}: {lab!r}" for u, lab in zip(df["unit"], df["unit_label"])]
    signed = signed_methods or set()
    df["shown"] = [n if (m in signed or math.isnan(n)) else abs(n) for m, n in zip(df["method"], df["norm"])]
    any_signed = bool(signed & set(order))
    n_units = int(df["unit"].max()) + 1 if len(df) else 1
    # Cells as wide as the words they hold (up to LABEL_CHARS), within the full-width box: a short
    # review's words are whole ("wonderful", not "wonder"), a long input's are cut with an ellipsis.
    texts = [repr(lab)[1:-1] for lab in df["unit_label"]]
    longest = min(LABEL_CHARS, max((len(t) for t in texts), default=1))
    width = max(240, min(FULL - 120, int(max(MIN_CELL, LABEL_PX * longest + 8) * n_units)))
    fits = max(1, int((width / n_units - 8) / LABEL_PX))
    df["label"] = [t if len(t) <= fits else t[: max(1, fits - 1)] + "…" for t in texts]
    base = alt.Chart(_data(df)).encode(
        x=alt.X("unit:O", title="input token", axis=alt.Axis(labels=n_units <= 64, labelAngle=0),
                sort="ascending"),
        y=alt.Y("method:N", sort=order, title=None),
    )
    rects = base.mark_rect(stroke="white", strokeWidth=0.5).encode(
        color=alt.condition("isValid(datum.norm)", alt.Color(
            "shown:Q", scale=SIGNED_SCALE if any_signed else UNSIGNED_SCALE, title="importance / max |importance|",
            legend=alt.Legend(orient="bottom", direction="horizontal", gradientLength=160)), alt.value("#d9d9d9")),
        tooltip=["method:N", "token:N", alt.Tooltip("value:Q", format=".4g"), alt.Tooltip("norm:Q", format=".2f"),
                 "special:N"],
    )
    text = base.mark_text(fontSize=9, color="black").encode(text="label:N") if n_units <= 64 else None
    chart = alt.layer(rects, text) if text is not None else rects
    chart = chart.properties(height=max(60, 22 * len(order)), title="Importance of each input token, per method")
    return fit_width(chart, width + 120)  # + the method names


def image_data_url(image: Any) -> str:
    """[C,H,W] tensor/array in [0, 1] -> a PNG data URL."""
    arr = np.asarray(image.detach().cpu() if hasattr(image, "detach") else image, dtype=np.float32)
    if arr.ndim == 3:
        arr = arr.transpose(1, 2, 0)
    if arr.ndim == 3 and arr.shape[2] == 1:
        arr = arr[:, :, 0]
    buf = io.BytesIO()
    Image.fromarray((arr.clip(0, 1) * 255).astype(np.uint8)).save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def patch_grids_chart(frame: pd.DataFrame, grid: tuple[int, int], image: Any | None = None,
                      size: int = 160, columns: int = 4, opacity: float = 0.6,
                      mask: np.ndarray | None = None) -> alt.VConcatChart:
    """One patch-grid heatmap per method, drawn over the image; the input image comes first.

    ``mask`` (bool [rows, cols], e.g. the vit-shapes object patches) is outlined on every panel.
    """
    rows_, cols = grid
    df = normalised(frame[frame["row"] == 0])
    df["r"], df["c"] = df["unit"] // cols, df["unit"] % cols
    df["r2"], df["c2"] = df["r"] + 1, df["c"] + 1
    df["mag"] = df["norm"].abs()
    url = image_data_url(image) if image is not None else None
    xs = alt.Scale(domain=[0, cols], nice=False, zero=True)
    ys = alt.Scale(domain=[0, rows_], nice=False, reverse=True)
    outline = None
    if mask is not None:
        rr, cc = np.nonzero(np.asarray(mask, dtype=bool))
        boxes = pd.DataFrame({"r": rr, "c": cc, "r2": rr + 1, "c2": cc + 1})
        outline = alt.Chart(boxes).mark_rect(fill=None, stroke="black", strokeWidth=1.5, strokeDash=[3, 2]).encode(
            x=alt.X("c:Q", scale=xs, axis=None), x2="c2:Q", y=alt.Y("r:Q", scale=ys, axis=None), y2="r2:Q")

    def picture() -> alt.Chart:
        return alt.Chart(pd.DataFrame({"x": [cols / 2], "y": [rows_ / 2], "url": [url]})).mark_image(
            width=size, height=size).encode(x=alt.X("x:Q", scale=xs, axis=None),
                                            y=alt.Y("y:Q", scale=ys, axis=None), url="url:N")

    panels = []
    if url:
        first = [picture()] + ([outline] if outline is not None else [])
        panels.append(alt.layer(*first).properties(width=size, height=size, title="input"))
    for m in dict.fromkeys(df["method"]):
        sub = df[df["method"] == m]
        rect = alt.Chart(_data(sub)).mark_rect(opacity=opacity if url else 1.0).encode(
            x=alt.X("c:Q", scale=xs, axis=None), x2="c2:Q",
            y=alt.Y("r:Q", scale=ys, axis=None), y2="r2:Q",
            color=alt.Color("mag:Q", scale=UNSIGNED_SCALE, title="|importance| / max",
                            legend=alt.Legend(orient="bottom", direction="horizontal", gradientLength=120)),
            tooltip=["method:N", "unit_label:N", alt.Tooltip("value:Q", format=".4g")],
        )
        layers = [picture(), rect] if url else [rect]
        if outline is not None:
            layers.append(outline)
        panels.append(alt.layer(*layers).properties(width=size, height=size, title=m))
    rows = [alt.hconcat(*panels[i:i + columns]) for i in range(0, len(panels), columns)]
    return alt.vconcat(*rows).properties(title="Importance of each patch, per method")


def matrices_chart(frame: pd.DataFrame, columns: int = 3, first: tuple[str, ...] = ("attention", "ig")) -> alt.VConcatChart:
    """Target x source matrices (seq2seq), one per method, attention and IG first (the Bahdanau figure)."""
    df = normalised(frame)
    df["mag"] = df["norm"].abs()
    df["target"] = [f"{r}: {lab!r}" for r, lab in zip(df["row"], df["row_label"])]
    df["source"] = [f"{u}: {lab!r}" for u, lab in zip(df["unit"], df["unit_label"])]
    methods = list(dict.fromkeys(df["method"]))
    methods = [m for m in first if m in methods] + [m for m in methods if m not in first]
    n_rows, n_units = df["row"].nunique(), df["unit"].nunique()
    cell = 16 if max(n_rows, n_units) <= 24 else 10
    # Each panel costs ~130 px beside its cells (output labels, axis title, spacing); the colour
    # legend ~120 px once: shrink the cells until a row of panels fits the box.
    per_row = max(1, min(columns, len(methods)))
    cell = max(3, min(cell, panel_width(FULL - 120, per_row, 130) // max(1, n_units)))
    tsort = sorted(set(df["target"]), key=lambda s: int(s.split(":")[0]))
    ssort = sorted(set(df["source"]), key=lambda s: int(s.split(":")[0]))
    panels = []
    for m in methods:
        sub = df[df["method"] == m]
        panels.append(alt.Chart(_data(sub)).mark_rect().encode(
            x=alt.X("source:O", sort=ssort, title="source", axis=alt.Axis(labelAngle=-45)),
            y=alt.Y("target:O", sort=tsort, title="output", axis=alt.Axis(labelLimit=100)),
            color=alt.condition("isValid(datum.mag)", alt.Color("mag:Q", scale=UNSIGNED_SCALE,
                                                                title="|importance| / row max"), alt.value("#d9d9d9")),
            tooltip=["method:N", "target:N", "source:N", alt.Tooltip("value:Q", format=".4g")],
        ).properties(width=cell * n_units, height=cell * n_rows, title=m))
    rows = [alt.hconcat(*panels[i:i + columns]) for i in range(0, len(panels), columns)]
    return alt.vconcat(*rows).properties(title="Output x source: which source token each output token used")


def head_frame(heads: Any) -> pd.DataFrame:
    """A HeadGrid as a long frame: layer, head, panel, q, k, query, key, value, entropy."""
    L, H = heads.maps.shape[:2]
    rec = []
    for li in range(L):
        for h in range(H):
            ent = max(0.0, float(heads.entropy[li, h]))
            panel = f"L{li} H{h} · {ent:.2f} nats"
            m = heads.maps[li, h]
            for qi in range(m.shape[0]):
                for ki in range(m.shape[1]):
                    if heads.kind == "grid":
                        qlab, klab = f"row {qi}", f"col {ki}"
                    else:
                        qlab = f"{qi}: {heads.query_labels[qi]!r}" if qi < len(heads.query_labels) else str(qi)
                        klab = f"{ki}: {heads.key_labels[ki]!r}" if ki < len(heads.key_labels) else str(ki)
                    rec.append((li, h, panel, qi, ki, qlab, klab, float(m[qi, ki]), ent))
    return pd.DataFrame(rec, columns=["layer", "head", "panel", "q", "k", "query", "key", "value", "entropy"])


def head_panel_images(frame: pd.DataFrame, cell: int = 6) -> pd.DataFrame:
    """One row per (layer, head) panel: its attention map as a grey PNG (white 0, black the
    largest weight over all panels), upscaled `cell` pixels per query/key, as a data URL."""
    n_q, n_k = int(frame["q"].max()) + 1, int(frame["k"].max()) + 1
    top = max(1e-6, float(frame["value"].max()))
    rows = []
    for (layer, head, panel), part in frame.groupby(["layer", "head", "panel"], sort=True):
        grid = np.zeros((n_q, n_k), dtype=np.float32)  # [query, key]
        grid[part["q"].to_numpy(), part["k"].to_numpy()] = part["value"].to_numpy()
        pixels = (255 - np.clip(grid / top, 0, 1) * 255).round().astype(np.uint8)
        picture = Image.fromarray(pixels, mode="L").resize((n_k * cell, n_q * cell), Image.NEAREST)
        buf = io.BytesIO()
        picture.save(buf, format="PNG")
        rows.append({"layer": int(layer), "head": int(head), "panel": panel,
                     "url": "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")})
    return pd.DataFrame(rows, columns=["layer", "head", "panel", "url"])


def head_grid_chart(frame: pd.DataFrame, n_heads: int, cell: int = 6) -> alt.Chart:
    """Layer x head grid of attention maps; each panel's title carries its entropy (nats) at the explained row.

    Each panel is one image, not one mark per cell: a few dozen images instead of thousands of
    rectangles keep the chart quick to build, send and draw (the CSV export has every value)."""
    n_q, n_k = int(frame["q"].max()) + 1, int(frame["k"].max()) + 1
    size = max(60, min(160, cell * max(n_q, n_k)))
    size = max(24, min(size, panel_width(FULL, n_heads, 24)))  # a row of heads fits the box
    width, height = size, max(20, round(size * n_q / max(n_q, n_k)))
    panels = head_panel_images(frame, cell=max(1, round(size / max(n_q, n_k))))
    order = panels.sort_values(["layer", "head"])["panel"].tolist()
    return alt.Chart(_data(panels)).mark_image(width=width, height=height).encode(
        x=alt.value(width / 2), y=alt.value(height / 2), url="url:N", tooltip=["panel:N"],
    ).properties(width=width, height=height).facet(
        facet=alt.Facet("panel:N", sort=order, title=None, header=alt.Header(labelFontSize=10)), columns=n_heads,
    ).properties(title="Every layer and head (rows: layers; dark = more attention); entropy of the explained row in nats")
