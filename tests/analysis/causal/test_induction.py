"""The known result: patching names the heads the Heads view's scores name on a 2-layer
attention-only GPT trained on repeated random sequences."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from playground.analysis.causal.induction import (
    find_heads,
    load_induction,
    train_induction,
)

SHIPPED = Path(__file__).resolve().parents[3] / "checkpoints" / "causal" / "induction-2l"


def check(found) -> None:
    named = found.named()
    assert found.in_context_drop > 1.0  # the second copy is predicted: an induction circuit works
    assert named["patched_0"] == named["previous"]  # layer 0: the previous-token head
    assert named["patched_1"] == named["induction"]  # layer 1: the induction head
    T = 2 * 12  # find_heads scores repeats of 12 random tokens
    assert found.previous[0].max() > 3 * uniform_causal_baseline(T)  # a real previous-token head, not a uniform one
    assert found.induction[1].max() > 3 * uniform_causal_baseline(T, offset=-11, first_query=12)
    assert found.induction[1].max() > found.induction[0].max()  # the induction pattern lives in layer 1


@pytest.mark.skipif(not SHIPPED.is_dir(), reason="run scripts/train_induction_checkpoint.py")
def test_shipped_model_patching_finds_the_scored_heads():
    model = load_induction(SHIPPED)
    assert all(float(b.mlp.proj.weight.abs().max()) == 0.0 for b in model.blocks)  # attention only
    check(find_heads(model))


@pytest.mark.slow
def test_training_from_scratch_gives_the_same_circuit():
    torch.set_num_threads(1)
    check(find_heads(train_induction()))
