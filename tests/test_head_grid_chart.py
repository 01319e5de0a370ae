"""The Analyze tab's layer x head grid: one image per panel whose pixels follow the attention weights."""
from __future__ import annotations

import base64
import io
from types import SimpleNamespace

import numpy as np
from PIL import Image

from playground.charts.analysis import head_frame, head_grid_chart, head_panel_images


def _heads(seed: int = 0):
    rng = np.random.default_rng(seed)
    maps = rng.random((2, 3, 4, 5)).astype(np.float32)  # [layer, head, query, key]
    maps /= maps.sum(-1, keepdims=True)
    entropy = -(maps[:, :, -1] * np.log(maps[:, :, -1])).sum(-1)
    return SimpleNamespace(maps=maps, entropy=entropy, kind="tokens", query_labels=list("abcd"), key_labels=list("abcde"))


def _pixels(url: str) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))))


def test_one_image_per_panel_whose_pixels_are_the_weights():
    heads = _heads()
    frame = head_frame(heads)
    panels = head_panel_images(frame, cell=3)
    assert len(panels) == 6 and list(panels[["layer", "head"]].itertuples(index=False, name=None)) == \
        [(layer, head) for layer in range(2) for head in range(3)]
    top = heads.maps.max()
    for row in panels.itertuples():
        image = _pixels(row.url)
        assert image.shape == (4 * 3, 5 * 3)  # [query * cell, key * cell]
        expected = np.round(255 - heads.maps[row.layer, row.head] / top * 255)
        assert np.abs(image[::3, ::3].astype(float) - expected).max() <= 1  # one cell = one weight, white = 0


def test_the_chart_carries_panels_not_cells():
    heads = _heads(1)
    spec = head_grid_chart(head_frame(heads), n_heads=3).to_dict()
    values = spec["data"]["values"] if "data" in spec else next(iter(spec["datasets"].values()))
    assert len(values) == 6  # 2 layers x 3 heads, not 2 x 3 x 4 x 5 cells
    assert all(v["url"].startswith("data:image/png;base64,") for v in values)
    assert f"{heads.entropy[1, 2]:.2f} nats" in values[-1]["panel"]
