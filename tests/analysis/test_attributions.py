"""captum attributions: exactness on a linear model, IG completeness, leave-one-out, causality."""
from __future__ import annotations

import pytest
import torch
from torch import nn

from playground.analysis.explain import attributions as at
from playground.analysis.query import Query
from playground.families import build_model, get_family
from tests.analysis.conftest import tiny_gpt


class LinearPatches(nn.Module):
    """A "classifier" linear in its patch embedding: logits_c = Σ_t w_c,t · e_t (+ b_c)."""

    def __init__(self, n_classes: int = 3, d: int = 5) -> None:
        super().__init__()
        from playground.models.vit import PatchEmbedding

        self.patch_emb = PatchEmbedding(2, d, 2)  # [B,2,4,4] -> [B,4,5]
        self.w = nn.Parameter(torch.randn(n_classes, 4, d))
        self.b = nn.Parameter(torch.randn(n_classes))
        self.grid = (2, 2)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        e = self.patch_emb(images)  # [B,4,d]
        return torch.einsum("btd,ctd->bc", e, self.w) + self.b


def _linear_query() -> tuple[Query, LinearPatches]:
    model = LinearPatches().eval()
    x = torch.rand(2, 2, 4, 4)
    base = torch.rand(2, 2, 4, 4)
    q = Query(model, get_family("vit").explainer, x, torch.tensor([0, 2]), model.patch_emb, baselines=base, grid=(2, 2), cls_token=False)
    return q, model


def test_ig_and_input_x_gradient_are_exact_on_a_linear_model() -> None:
    q, model = _linear_query()
    with torch.no_grad():
        e, e0 = model.patch_emb(q.inputs), model.patch_emb(q.baselines)  # [B,4,d]
        w = model.w[q.targets]  # [B,4,d]
    ig = at.integrated_gradients(q, n_steps=7, auto_steps=False)
    torch.testing.assert_close(ig.values, ((e - e0) * w).sum(-1), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(at.input_x_gradient(q).values, (e * w).sum(-1), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(at.saliency(q).values, w.norm(dim=-1), rtol=1e-5, atol=1e-6)
    assert ig.delta.abs().max() < 1e-4 and bool(ig.converged.all())


def test_ig_completeness_within_the_reported_delta() -> None:
    model = tiny_gpt(20)
    ids = torch.randint(1, 20, (2, 8), generator=torch.Generator().manual_seed(0))
    q = Query(model, get_family("gpt").explainer, ids, torch.tensor([4, 9]), model.tok_emb, positions=torch.tensor([7, 7]),
              baselines=torch.zeros_like(ids))
    ig = at.integrated_gradients(q, n_steps=20)
    gap = ig.values.sum(-1) - (ig.f_inputs - ig.f_baselines)
    torch.testing.assert_close(gap, ig.delta, atol=1e-5, rtol=1e-4)  # captum's delta is that gap
    assert bool((ig.delta.abs() <= ig.tolerance()).all()) and bool(ig.converged.all())
    torch.testing.assert_close(ig.f_inputs, q.score())


def test_ig_raises_steps_until_the_delta_passes() -> None:
    model = tiny_gpt(20, d_model=32)
    ids = torch.randint(1, 20, (1, 12), generator=torch.Generator().manual_seed(3))
    q = Query(model, get_family("gpt").explainer, ids, torch.tensor([5]), model.tok_emb, positions=torch.tensor([11]),
              baselines=torch.zeros_like(ids))
    one = at.integrated_gradients(q, n_steps=1, auto_steps=False)
    auto = at.integrated_gradients(q, n_steps=1, rel_tol=1e-3)
    assert int(auto.steps[0]) > 1
    assert abs(float(auto.delta[0])) < abs(float(one.delta[0]))
    tol = max(1e-3 * abs(float(auto.f_inputs[0] - auto.f_baselines[0])), at.ABS_TOL)
    assert bool(auto.converged[0]) == bool(auto.delta.abs()[0] <= tol)


def _tvd_manual(model, ids, pos, ref_ids, ref_pos) -> float:
    with torch.no_grad():
        p = model(ids[None])[0, pos].softmax(-1)
        p0 = model(ref_ids[None])[0, ref_pos].softmax(-1)
    return float(0.5 * (p - p0).abs().sum())


def test_leave_one_out_matches_a_manual_forward() -> None:
    model = tiny_gpt(20)
    ids = torch.randint(1, 20, (1, 7), generator=torch.Generator().manual_seed(0))
    pos = 4
    q = Query(model, get_family("gpt").explainer, ids, torch.tensor([3]), model.tok_emb, positions=torch.tensor([pos]),
              baselines=torch.full_like(ids, 0))
    rep = at.leave_one_out(q, "replace", batch_size=3).values[0]
    dele = at.leave_one_out(q, "delete").values[0]
    for t in range(7):
        x = ids[0].clone()
        x[t] = 0
        assert float(rep[t]) == pytest.approx(_tvd_manual(model, x, pos, ids[0], pos), abs=1e-6)
        y = torch.cat([ids[0, :t], ids[0, t + 1:]])
        new_pos = pos - 1 if t <= pos else pos
        assert float(dele[t]) == pytest.approx(_tvd_manual(model, y, new_pos, ids[0], pos), abs=1e-6)


def test_positions_after_the_query_get_exactly_zero_from_every_gradient_method() -> None:
    model = tiny_gpt(20)
    ids = torch.randint(1, 20, (2, 9), generator=torch.Generator().manual_seed(0))
    q = Query(model, get_family("gpt").explainer, ids, torch.tensor([3, 8]), model.tok_emb, positions=torch.tensor([5, 5]),
              baselines=torch.zeros_like(ids))
    for r in (at.saliency(q), at.input_x_gradient(q), at.integrated_gradients(q, 10), at.leave_one_out(q),
              at.leave_one_out(q, "delete"), at.deeplift(q)):
        assert r.values.shape == (2, 9)
        assert torch.equal(r.values[:, 6:], torch.zeros(2, 3)), r.method
        assert r.values[:, :6].abs().sum() > 0, r.method


def test_batched_query_equals_one_example_at_a_time() -> None:
    model = tiny_gpt(20)
    ids = torch.randint(1, 20, (3, 8), generator=torch.Generator().manual_seed(4))
    q = Query(model, get_family("gpt").explainer, ids, torch.tensor([3, 8, 1]), model.tok_emb, positions=torch.tensor([7, 3, 5]),
              baselines=torch.zeros_like(ids))
    batched = at.integrated_gradients(q, 16, auto_steps=False, internal_batch_size=5).values
    loo = at.leave_one_out(q).values
    for b in range(3):
        one = q.select([b])
        torch.testing.assert_close(at.integrated_gradients(one, 16, auto_steps=False).values[0], batched[b],
                                   rtol=1e-4, atol=1e-6)
        torch.testing.assert_close(at.leave_one_out(one).values[0], loo[b], rtol=1e-4, atol=1e-6)


def test_vit_occlusion_and_gradients_cover_the_patches() -> None:
    from tests.analysis.conftest import tiny_vit

    model = tiny_vit()
    x = torch.rand(1, 3, 16, 16)
    q = Query(model, get_family("vit").explainer, x, torch.tensor([2]), model.patch_emb, baselines=torch.zeros_like(x), grid=model.grid)
    loo = at.leave_one_out(q).values[0]
    x2 = x.clone()
    x2[:, :, 4:8, 8:12] = 0  # patch r1c2 = unit 6
    with torch.no_grad():
        manual = 0.5 * (model(x2).softmax(-1) - model(x).softmax(-1)).abs().sum()
    assert float(loo[6]) == pytest.approx(float(manual), abs=1e-6)
    ig = at.integrated_gradients(q, 32)
    assert ig.values.shape == (1, 16) and bool(ig.converged.all())


def test_batch_rows_counts_every_layer_of_a_transformer_seq2seq() -> None:
    model = build_model("transformer_seq2seq", dict(vocab_size=14, d_model=16, n_head=2, n_encoder_layers=3,
                                                    n_decoder_layers=5)).eval()
    src = torch.tensor([[4, 5, 6, 7]])
    q = Query(model, get_family("transformer_seq2seq").explainer, src, torch.tensor([9]), model.src_emb,
              positions=torch.tensor([0]), decoder_inputs=torch.tensor([[1]]), baselines=torch.full_like(src, 3))
    assert at.batch_rows(q, length=10) == at.ACTIVATION_BUDGET // (10 * 16 * (3 + 5) * 12)
