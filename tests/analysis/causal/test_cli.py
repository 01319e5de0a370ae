"""`python -m playground patch` and `lens`: every grid exported, numbers equal to the engine's."""
from __future__ import annotations

import json

import pandas as pd
import pytest
import torch

from playground.__main__ import main
from playground.bundle import save_bundle
from playground.models.gpt import GPT, GPTConfig


@pytest.fixture
def bundle_ws(workspace, char_tok):
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=char_tok.get_vocab_size(), block_size=32, n_layer=2, n_head=2, d_model=16,
                          init_std=0.5)).eval()
    save_bundle(workspace, "g", model, "gpt", model.config, tokenizer=char_tok)
    return workspace


def test_patch_exports_every_cell_of_every_grid(bundle_ws, tmp_path, capsys):
    csv, js = tmp_path / "g.csv", tmp_path / "g.json"
    code = main(["--workspace", str(bundle_ws.root), "patch", "g", "--clean", "the quick", "--corrupted", "the quack",
                 "--grids", "resid,heads", "--direction", "both", "--csv", str(csv), "--json", str(js)])
    assert code == 0
    frame = pd.read_csv(csv)
    per = 2 * 9 + 2 * 2  # layers x positions + layers x heads
    assert len(frame) == per * 2 * 2  # (patching, attribution) x (denoise, noise)
    data = json.loads(js.read_text())
    g = data["patching"]["noise"]["resid"]
    # noising at positions before the changed token (6) cannot change anything: effect 1
    assert all(abs(v - 1) < 1e-6 for row in g["effect"] for v in row[:6])
    assert len(data["lens"]["clean"]["layers"]) == 3
    out = capsys.readouterr().out
    assert "residual stream entering each layer" in out and "logit lens (clean)" in out


def test_lens_prints_each_layer_and_refuses_bad_pairs(bundle_ws, tmp_path, capsys):
    assert main(["--workspace", str(bundle_ws.root), "lens", "g", "--input", "the quick", "--csv",
                 str(tmp_path / "l.csv")]) == 0
    assert len(pd.read_csv(tmp_path / "l.csv")) == 3 * 5  # layers x top 5
    assert "after block 1" in capsys.readouterr().out
    assert main(["--workspace", str(bundle_ws.root), "patch", "g", "--clean", "the quick", "--corrupted", "the"]) == 2
    assert "tokens and the corrupted one" in capsys.readouterr().err
