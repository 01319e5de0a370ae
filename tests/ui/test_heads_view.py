"""The Analyze tab's Heads accordion handler on the shipped GPT checkpoint."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

from playground.errors import PlaygroundError
from playground.settings import make_settings
from playground.ui import heads_view
from playground.ui.app import build_app

CHECKPOINT = Path(__file__).resolve().parents[2] / "checkpoints" / "models" / "gpt-python-docs-char"


@pytest.mark.skipif(not CHECKPOINT.is_dir(), reason="shipped checkpoint missing")
def test_run_heads_draws_scores_and_the_pruning_curve(workspace) -> None:
    shutil.copytree(CHECKPOINT, workspace.root / "models" / "g")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        text, heatmaps, pruning = heads_view.run_heads(workspace, "cpu", "g", 2)
    finally:
        torch.set_num_threads(threads)
    assert "16 heads in 4 attention modules" in text and "top induction" in text
    spec = heatmaps.to_dict()
    assert len([p for row in spec["vconcat"] for p in row["hconcat"]]) == 8  # 2 ablations, gradient, 4 positional, induction
    assert pruning.to_dict()["layer"][0]["mark"]["type"] == "line"
    with pytest.raises(PlaygroundError):
        heads_view.run_heads(workspace, "cpu", None, 2)


def test_the_analyze_tab_has_the_heads_accordion(tmp_path) -> None:
    app = build_app(make_settings(tmp_path / "ws", device="cpu"))
    ids = {b.elem_id for b in app.blocks.values()}
    assert {"analyze-heads-accordion", "analyze-heads-run", "analyze-heads-heatmaps", "analyze-heads-pruning"} <= ids
    assert any(getattr(fn, "api_name", None) == "analyze_heads" for fn in app.fns.values())
