"""Positional encodings: sinusoidal similarities and shift rotation, RoPE relativity, ALiBi slopes."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from playground.models.positional import Rotary, alibi_bias, alibi_slopes, sinusoidal_shift, sinusoidal_table


def test_sinusoidal_cosine_similarities() -> None:
    pe = sinusoidal_table(128, 64)
    cos = lambda a, b: F.cosine_similarity(pe[a], pe[b], dim=0).item()
    assert round(cos(0, 1), 3) == 0.966
    assert round(cos(0, 50), 3) == 0.490
    assert round(cos(10, 11), 3) == 0.966


def test_sinusoidal_shift_is_one_rotation_for_every_position() -> None:
    pe = sinusoidal_table(128, 64)
    for delta in (1, 7, 40):
        R = sinusoidal_shift(delta, 64)
        assert torch.allclose(pe[delta:] , pe[:-delta] @ R.T, atol=1e-4)  # PE(p+d) = R(d) PE(p), all p
        assert torch.allclose(R @ R.T, torch.eye(64), atol=1e-5)  # a rotation
        off_block = R.clone()
        for i in range(0, 64, 2):
            off_block[i : i + 2, i : i + 2] = 0
        assert torch.all(off_block == 0)  # block-diagonal, 2 x 2 blocks


def test_rope_scores_depend_only_on_relative_position() -> None:
    rot = Rotary(8, 64)
    q, k = torch.randn(1, 1, 1, 8), torch.randn(1, 1, 1, 8)
    score = lambda i, j: (rot(q, i) * rot(k, j)).sum().item()
    assert abs(score(3, 1) - score(40, 38)) < 1e-4
    assert abs(score(3, 1) - score(3, 2)) > 1e-4


def test_alibi_slopes_and_bias() -> None:
    assert torch.allclose(alibi_slopes(8), torch.tensor([2.0 ** -i for i in range(1, 9)]))
    assert len(alibi_slopes(6)) == 6
    bias = alibi_bias(torch.tensor([0.5]), torch.arange(3), torch.arange(3), causal=False)
    assert torch.allclose(bias[0], -0.5 * torch.tensor([[0.0, 1, 2], [1, 0, 1], [2, 1, 0]]))
