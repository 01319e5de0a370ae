"""The Analyze tab's Causal accordion handler on the shipped GPT checkpoint."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from playground.errors import PlaygroundError, TooBigError
from playground.settings import DEMO_CAPS, make_settings
from playground.ui import causal_view
from playground.ui.app import build_app

CHECKPOINT = Path(__file__).resolve().parents[2] / "checkpoints" / "models" / "gpt-python-docs-char"
CLEAN, CORRUPT = "self.name = name\nself.n", "self.size = size\nself.s"


@pytest.mark.skipif(not CHECKPOINT.is_dir(), reason="shipped checkpoint missing")
def test_patching_view_shows_heatmaps_agreement_lens_and_files(workspace) -> None:
    from playground.bundle import load_bundle

    shutil.copytree(CHECKPOINT, workspace.root / "models" / "g")
    text, chart, agree, lens, files = causal_view.run_causal_view(workspace, "cpu", "g", "typed", CLEAN, CORRUPT,
                                                                  ["resid", "heads"], "denoise")
    b = load_bundle("g", workspace)
    ids = [torch.tensor([b.tokenizer.encode(t).ids]) for t in (CLEAN, CORRUPT)]
    with torch.no_grad():
        clean, corrupt = (b.model(x)[0, -1] for x in ids)
    a, w = int(clean.argmax()), int(corrupt.argmax())
    assert f"clean {float(clean[a] - clean[w]):.3f}, corrupted {float(corrupt[a] - corrupt[w]):.3f}" in text
    assert len(chart.to_dict()["vconcat"]) == 3  # residual stream and its estimate under it; heads beside theirs
    assert set(agree["grid"]) == {"resid", "heads"}
    assert list(lens["layer"][:2]) == ["embeddings", "after block 0"] and set(lens["input"]) == {"clean", "corrupted"}
    saved = json.loads(Path(files[1]).read_text())
    g = saved["patching"]["denoise"]["resid"]
    assert g["effect"][1][-1] == pytest.approx((g["values"][1][-1] - g["corrupted"]) / (g["clean"] - g["corrupted"]))
    assert g["clean"] == pytest.approx(float(clean[a] - clean[w]), abs=1e-4)
    with pytest.raises(TooBigError, match="cells"):
        causal_view.run_causal_view(workspace, "cpu", "g", "typed", CLEAN * 2, CORRUPT * 2,
                                    ["resid", "attn", "mlp", "heads"], "denoise", DEMO_CAPS.__class__(max_patch_cells=100))
    with pytest.raises(PlaygroundError, match="tokens and the corrupted one"):
        causal_view.run_causal_view(workspace, "cpu", "g", "typed", CLEAN, CLEAN + "x", ["resid"], "denoise")


def test_the_analyze_tab_has_the_causal_accordion(tmp_path) -> None:
    app = build_app(make_settings(tmp_path / "ws", device="cpu"))
    ids = {b.elem_id for b in app.blocks.values()}
    assert {"analyze-causal-accordion", "analyze-causal-run", "analyze-causal-chart"} <= ids
    assert any(getattr(fn, "api_name", None) == "analyze_causal" for fn in app.fns.values())
