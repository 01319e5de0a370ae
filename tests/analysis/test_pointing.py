"""Pointing game on vit-shapes masks and seq2seq alignment accuracy."""
from __future__ import annotations

import math

import numpy as np
import pytest

from playground.analysis.explain.pointing import alignment_accuracy, patch_mask, pointing_game
from playground.data.images import make_shapes


def test_an_oracle_map_scores_one_on_vit_shapes() -> None:
    shapes = make_shapes(8, seed=0, image_size=32)
    for i in range(shapes.n):
        pm = patch_mask(shapes.masks[i], 4)  # [8,8]
        oracle = pm.astype(float)
        score = pointing_game(oracle, pm, method="oracle")
        assert score.mass_share == 1.0 and score.hit
        anti = pointing_game(1.0 - oracle, pm)
        assert anti.mass_share == 0.0 and not anti.hit


def test_patch_mask_marks_patches_touching_the_object() -> None:
    mask = np.zeros((8, 8), dtype=bool)
    mask[0, 0] = True
    mask[5:7, 5:7] = True
    pm = patch_mask(mask, 4)
    assert pm.tolist() == [[True, False], [False, True]]
    assert patch_mask(mask, 4, min_fraction=0.2).tolist() == [[False, False], [False, True]]


def test_pointing_share_counts_mass() -> None:
    pm = np.array([True, False, False, False])
    score = pointing_game(np.array([3.0, 1.0, 0.0, 0.0]), pm, k=2)
    assert score.mass_share == pytest.approx(0.75) and score.hit and score.k == 2


def test_alignment_accuracy() -> None:
    m = np.array([[0.9, 0.1, 0.0], [0.2, 0.1, 0.7]])  # argmax per target row: 0, 2
    assert alignment_accuracy(m, [(0, 0), (1, 2)]) == 1.0
    assert alignment_accuracy(m, [(0, 1), (1, 2)]) == 0.5
    assert alignment_accuracy(m, [(1, 0)], special=[False, False, True]) == 1.0  # source 2 is excluded
    assert math.isnan(alignment_accuracy(m, []))
