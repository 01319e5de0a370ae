"""Offline by default: every preset's default corpus loads, and the default NanoGPT preset
trains, with every download failing as it does on a machine without internet access."""
from __future__ import annotations

import pytest

from playground.config import list_presets, load_preset
from playground.data import corpora
from playground.data.corpora import load_corpus
from playground.training.engine import run_training

SHIPPED_LENGTH = 1_115_394


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    """Every download fails the way an offline machine's does."""
    def unreachable(url, timeout=30.0):
        raise OSError(f"[Errno -3] Temporary failure in name resolution ({url})")

    monkeypatch.setattr(corpora, "fetch_url", unreachable)


def _gpt_presets() -> list[str]:
    return [name for name in list_presets() if load_preset(name).family == "gpt"]


def test_every_presets_default_corpus_loads_offline(workspace):
    names = _gpt_presets()
    assert {"nanogpt-cpu-tiny", "nanogpt-bpe"} <= set(names)
    for name in names:
        spec = load_preset(name).data.get("corpus", "tinyshakespeare")
        corpus = load_corpus(spec, workspace)
        assert corpus.chars > 100_000, name
        if spec == "tinyshakespeare":
            assert corpus.chars == SHIPPED_LENGTH, name
    assert not (workspace.cache_dir / "tinyshakespeare.txt").exists()  # nothing was downloaded


def test_the_default_nanogpt_preset_trains_offline(workspace):
    overrides = {"train.max_steps": 3, "train.eval_interval": 3, "train.eval_iters": 1, "train.log_interval": 1,
                 "train.batch_size": 2, "train.preview": False,
                 "model.n_layer": 1, "model.d_model": 32, "model.n_head": 2}
    result = run_training("nanogpt-cpu-tiny", workspace, "offline-tiny", overrides=overrides, device="cpu")
    steps = [e for e in result.events if e.kind == "step"]
    assert result.status == "done" and result.step == 3 and len(steps) == 3
    assert all(e.train_loss is not None and e.train_loss > 0 for e in steps)
    assert result.val_loss is not None
    assert not (workspace.cache_dir / "tinyshakespeare.txt").exists()
