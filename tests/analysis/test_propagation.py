"""Rollout, flow and relevancy math (hand-written; checked against their defining properties)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from playground.analysis.explain.propagation import attention_flow, attention_rollout, entropy, relevancy, with_residual


def _causal_maps(L: int, B: int, H: int, T: int, seed: int = 0) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    future = ~torch.ones(T, T, dtype=torch.bool).tril()
    return [torch.randn(B, H, T, T, generator=g).masked_fill(future, float("-inf")).softmax(-1) for _ in range(L)]


def test_rollout_rows_sum_to_one_and_causal_gives_lower_triangular() -> None:
    maps = _causal_maps(3, 2, 4, 7)
    r = attention_rollout(maps)
    assert r.shape == (2, 7, 7)
    torch.testing.assert_close(r.sum(-1), torch.ones(2, 7))
    assert torch.equal(r.triu(1), torch.zeros_like(r))


def test_rollout_of_identity_attention_is_identity() -> None:
    eye = torch.eye(5).expand(1, 3, 5, 5)
    torch.testing.assert_close(attention_rollout([eye, eye, eye]), torch.eye(5)[None])


def test_rollout_is_the_product_of_residual_matrices() -> None:
    maps = _causal_maps(2, 1, 2, 4, seed=3)
    a1, a2 = (0.5 * m.mean(1)[0] + 0.5 * torch.eye(4) for m in maps)
    torch.testing.assert_close(attention_rollout(maps)[0], a2 @ a1)


def test_flow_equals_rollout_for_one_layer() -> None:
    maps = _causal_maps(1, 1, 3, 6, seed=1)
    r = attention_rollout(maps)[0]
    for q in range(6):
        f = attention_flow([maps[0][0]], q)
        np.testing.assert_allclose(f, r[q].numpy(), atol=1e-5)


def test_flow_is_a_distribution_that_ignores_future_tokens() -> None:
    maps = _causal_maps(3, 1, 2, 8, seed=2)
    f = attention_flow([m[0] for m in maps], 4)
    assert f.sum() == pytest.approx(1.0)
    assert (f[5:] == 0).all() and (f[:5] > 0).all()


def test_flow_caps_the_length() -> None:
    from playground.errors import PlaygroundError

    with pytest.raises(PlaygroundError, match="capped"):
        attention_flow([torch.eye(10)], 0, max_tokens=8)


def test_relevancy_with_zero_gradient_is_identity_and_nonnegative() -> None:
    maps = _causal_maps(2, 1, 2, 5)
    r0 = relevancy(maps, [torch.zeros_like(m) for m in maps])
    torch.testing.assert_close(r0, torch.eye(5, dtype=torch.float64)[None])
    g = torch.Generator().manual_seed(0)
    r = relevancy(maps, [torch.randn(m.shape, generator=g) for m in maps])
    assert (r >= 0).all()


def test_with_residual_rows_sum_to_one_and_entropy_of_uniform_is_log_n() -> None:
    a = _causal_maps(1, 1, 1, 4)[0]
    torch.testing.assert_close(with_residual(a).sum(-1), torch.ones(1, 1, 4))
    assert float(entropy(torch.full((8,), 1 / 8))) == pytest.approx(np.log(8))
    assert float(entropy(torch.tensor([1.0, 0.0]))) == 0.0
