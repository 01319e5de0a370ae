"""The fast per-input paths give the plain paths' numbers: leave-one-out through the KV cache of
the unchanged prefix equals one whole forward per variant, on tiny GPTs of every attention shape."""
from __future__ import annotations

import pytest
import torch

from playground.analysis.explain import attributions as at
from playground.analysis.query import Query
from playground.families import get_family
from playground.models.attention import attention_modules, override_attention
from tests.analysis.conftest import tiny_gpt

SHAPES = {
    "learned": {},
    "rope": {"pos_encoding": "rope"},
    "alibi": {"pos_encoding": "alibi"},
    "window+gqa": {"attn_window": 4, "n_head": 4, "n_kv_heads": 2},
    "moe+post-ln": {"ffn_experts": 3, "ffn_top_k": 2, "norm_placement": "post"},
}


def _query(model: torch.nn.Module, B: int = 3, T: int = 12, positions: list[int] | None = None) -> Query:
    ids = torch.randint(1, 20, (B, T), generator=torch.Generator().manual_seed(1))
    pos = torch.tensor(positions if positions is not None else [T - 1] * B)
    return Query(model, get_family("gpt").explainer, ids, torch.randint(1, 20, (B,)), model.tok_emb,
                 positions=pos, baselines=torch.zeros_like(ids))


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("mode", ["replace", "delete"])
def test_prefix_cached_loo_equals_one_forward_per_variant(shape: str, mode: str) -> None:
    q = _query(tiny_gpt(20, **SHAPES[shape]))
    assert q.explainer.loo_logits(q, *q.explainer.loo_variants(q, mode)) is not None  # the fast path is taken
    fast = at.leave_one_out(q, mode)
    plain = at.leave_one_out(q, mode, reuse_prefix=False)
    assert fast.values.shape == plain.values.shape == (3, 12)
    torch.testing.assert_close(fast.values, plain.values, atol=1e-5, rtol=0)
    assert float(plain.values.abs().max()) > 1e-3  # the variants do change the output


def test_prefix_cached_loo_with_mixed_positions_and_small_chunks() -> None:
    """Queries before the end (tokens after them invisible: exactly 0), and chunks of a few rows."""
    q = _query(tiny_gpt(20), positions=[11, 5, 0])
    variants, positions = q.explainer.loo_variants(q, "replace")
    rows = list(at.prefix_cached_logits(q.model, q.inputs, variants, positions, budget=1))  # one variant per chunk
    assert sorted(int(i) for idx, _ in rows for i in idx) == list(range(36))
    plain = at.leave_one_out(q, "replace", reuse_prefix=False)
    fast = at.leave_one_out(q, "replace")
    torch.testing.assert_close(fast.values, plain.values, atol=1e-5, rtol=0)
    assert float(fast.values[1, 6:].abs().max()) == 0.0 and float(fast.values[2, 1:].abs().max()) == 0.0
    by_row = {int(i): lg for idx, logits in rows for i, lg in zip(idx, logits)}
    whole = q.explainer.output_rows(q, variants, positions, None, False)  # [36,V] one whole forward each
    torch.testing.assert_close(torch.stack([by_row[i] for i in range(36)]), whole, atol=1e-5, rtol=0)


def test_prefix_cached_loo_in_float64_is_exact_to_rounding() -> None:
    q = _query(tiny_gpt(20).double())
    fast, plain = at.leave_one_out(q, "replace"), at.leave_one_out(q, "replace", reuse_prefix=False)
    assert fast.values.dtype == torch.float64
    torch.testing.assert_close(fast.values, plain.values, atol=1e-12, rtol=0)


def test_loo_under_an_attention_override_takes_the_plain_path() -> None:
    """An open override sees every query row of a whole forward: no prefix reuse then."""
    model = tiny_gpt(20)
    q = _query(model)
    with override_attention(model, {n: (lambda w, s: w) for n in attention_modules(model)}):
        assert q.explainer.loo_logits(q, *q.explainer.loo_variants(q, "replace")) is None


def test_ig_in_memory_capped_chunks_equals_one_batch() -> None:
    """The app's IG runs its steps in chunks sized to memory; any chunking gives one batch's numbers."""
    q = _query(tiny_gpt(20), B=2)
    one = at.integrated_gradients(q, 6, auto_steps=False, internal_batch_size=12)  # 2 examples x 6 steps at once
    for rows in (5, 7):  # uneven chunks, one splitting an example's steps
        chunked = at.integrated_gradients(q, 6, auto_steps=False, internal_batch_size=rows)
        torch.testing.assert_close(chunked.values, one.values, atol=1e-6, rtol=1e-5)
        torch.testing.assert_close(chunked.delta, one.delta, atol=1e-6, rtol=1e-5)
    assert float(one.values.abs().max()) > 1e-3


def test_ig_does_not_depend_on_whether_the_weights_require_grad() -> None:
    """Gradients are taken w.r.t. the embeddings only: frozen or trainable weights, same IG, no .grad left."""
    model = tiny_gpt(20)
    q = _query(model, B=2)
    trainable = at.integrated_gradients(q, 6, auto_steps=False)
    assert all(p.grad is None for p in model.parameters())
    for p in model.parameters():
        p.requires_grad_(False)
    frozen = at.integrated_gradients(q, 6, auto_steps=False)
    torch.testing.assert_close(frozen.values, trainable.values, atol=1e-6, rtol=1e-5)  # rounding only


def _vit_query() -> Query:
    from tests.analysis.conftest import tiny_vit

    model = tiny_vit()
    x = torch.rand(2, 3, 16, 16, generator=torch.Generator().manual_seed(2))
    return Query(model, get_family("vit").explainer, x, torch.tensor([1, 3]), get_family("vit").input_embedding(model),
                 baselines=torch.zeros_like(x), grid=(4, 4))


@pytest.mark.parametrize("kind", ["gpt", "vit"])
def test_ig_from_one_pass_equals_captum_layer_integrated_gradients(kind: str) -> None:
    """Our IG (layer outputs and F from one pass, captum IntegratedGradients over them) gives
    LayerIntegratedGradients' attributions and convergence delta."""
    q = _query(tiny_gpt(20), B=2) if kind == "gpt" else _vit_query()
    values, delta, f = at._ig_once(q, 8, None, "gausslegendre")
    ref_values, ref_delta = at._ig_layer(q, 8, None, "gausslegendre")
    torch.testing.assert_close(values, ref_values, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(delta, ref_delta, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(f, torch.cat([q.score(), q.score(q.baselines)]), atol=1e-6, rtol=1e-5)
    assert float(values.abs().max()) > 1e-3
