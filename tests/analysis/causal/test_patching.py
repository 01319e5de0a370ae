"""Activation patching against an independent hand computation, and its fixed points."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from playground.analysis.causal.attribution import (
    agreement,
    attribution_grids,
    site_gradients,
)
from playground.analysis.causal.patching import (
    GRIDS,
    Cell,
    Layout,
    Metric,
    clean_and_corrupted,
    patch_grids,
    patched_metrics,
)
from playground.errors import PlaygroundError
from playground.models.gpt import GPT, GPTConfig


def tiny(seed: int = 0, **kw) -> GPT:
    torch.manual_seed(seed)
    cfg = {"vocab_size": 11, "block_size": 16, "n_layer": 2, "n_head": 2, "d_model": 8, "init_std": 0.3}
    cfg.update(kw)
    return GPT(GPTConfig(**cfg)).eval().double()


CLEAN = torch.tensor([[1, 2, 3, 4, 5, 6]])
CORRUPT = torch.tensor([[1, 2, 7, 4, 5, 6]])


def metric_for(model: GPT) -> Metric:
    with torch.no_grad():
        top = model(CLEAN)[0, -1].topk(2).indices
    return Metric(-1, int(top[0]), int(top[1]))


def hand_cell(model: GPT, receiver: torch.Tensor, donor: torch.Tensor, module, kind: str, pos, head, metric) -> float:
    """One cell by hand: record the donor's activation with a plain forward hook, then run the
    receiver alone with that one entry overwritten (float64, no batching, no library code)."""
    store = {}
    pre = kind in ("resid", "heads")

    def keep(_m, args, out=None):
        store["a"] = (args[0] if pre else (out[0] if isinstance(out, tuple) else out)).clone()

    h = module.register_forward_pre_hook(keep) if pre else module.register_forward_hook(keep)
    with torch.no_grad():
        model(donor)
    h.remove()
    d = store["a"]

    def put(x):
        x = x.clone()
        if kind == "heads":
            hd = x.shape[-1] // model.config.n_head
            x[:, :, head * hd:(head + 1) * hd] = d[:, :, head * hd:(head + 1) * hd]
        else:
            x[:, pos] = d[:, pos]
        return x

    if pre:
        h = module.register_forward_pre_hook(lambda _m, args: (put(args[0]),) + args[1:])
    else:
        h = module.register_forward_hook(
            lambda _m, args, out: (put(out[0]),) + out[1:] if isinstance(out, tuple) else put(out))
    with torch.no_grad():
        value = float(metric(model(receiver))[0])
    h.remove()
    return value


def module_of(model: GPT, kind: str, layer: int):
    b = model.blocks[layer]
    return {"resid": b, "attn": b.attn, "mlp": b.mlp, "heads": b.attn.out_proj}[kind]


@pytest.mark.parametrize("direction", ["denoise", "noise"])
def test_every_cell_equals_an_unbatched_hand_computation(direction):
    model = tiny()
    metric = metric_for(model)
    runs = clean_and_corrupted(model, CLEAN, CORRUPT, metric)
    grids = patch_grids(model, runs, GRIDS, direction, chunk=5)  # chunks that cut across layers
    recv, donor = (CORRUPT, CLEAN) if direction == "denoise" else (CLEAN, CORRUPT)
    for kind, grid in grids.items():
        for layer in range(2):
            cols = range(2) if kind == "heads" else range(CLEAN.shape[1])
            for c in cols:
                pos, head = (None, c) if kind == "heads" else (c, None)
                expected = hand_cell(model, recv, donor, module_of(model, kind, layer), kind, pos, head, metric)
                assert grid.values[layer, c] == pytest.approx(expected, abs=1e-10), (kind, layer, c)


def test_clean_into_clean_is_one_and_corrupted_into_corrupted_is_zero():
    model = tiny()
    metric = metric_for(model)
    runs = clean_and_corrupted(model, CLEAN, CORRUPT, metric)
    layout = Layout.of(model)
    for kind in GRIDS:
        cells = layout.cells(kind, CLEAN.shape[1])
        same_clean = patched_metrics(model, CLEAN, runs.acts["clean"], cells, metric)
        same_corrupt = patched_metrics(model, CORRUPT, runs.acts["corrupted"], cells, metric)
        norm = lambda v: (v - runs.corrupted) / (runs.clean - runs.corrupted)
        np.testing.assert_allclose(norm(same_clean), 1.0, atol=1e-10)
        np.testing.assert_allclose(norm(same_corrupt), 0.0, atol=1e-10)


def test_positions_the_corruption_cannot_reach_have_no_effect_and_the_last_layer_is_all_or_nothing():
    model = tiny()
    runs = clean_and_corrupted(model, CLEAN, CORRUPT, metric_for(model))
    eff = patch_grids(model, runs, ["resid"], "denoise")["resid"].effect  # [L, T]
    np.testing.assert_allclose(eff[:, :2], 0.0, atol=1e-10)  # before the changed token: identical runs
    np.testing.assert_allclose(eff[0, 2], 1.0, atol=1e-10)  # the changed token's embedding restores it all


def test_one_forward_per_chunk():
    model = tiny()
    runs = clean_and_corrupted(model, CLEAN, CORRUPT, metric_for(model))
    calls = []
    h = model.register_forward_pre_hook(lambda _m, args: calls.append(args[0].shape[0]))
    patch_grids(model, runs, ["resid"], "denoise", chunk=4)
    h.remove()
    assert calls == [4, 4, 4]  # 2 layers x 6 positions = 12 cells


def test_attribution_is_first_order_exact():
    """Donor activations a + eps * delta: real patching's change divided by eps tends to the
    attribution estimate, with an error shrinking like eps (first-order agreement)."""
    model = tiny()
    metric = metric_for(model)
    runs = clean_and_corrupted(model, CLEAN, CORRUPT, metric)
    layout = Layout.of(model)
    site = layout.site("resid", 1)
    m0, grads = site_gradients(model, CORRUPT, runs, [site])
    delta = runs.acts["clean"][site] - runs.acts["corrupted"][site]
    errors = []
    for eps in (1e-2, 1e-3):
        donor = {site: runs.acts["corrupted"][site] + eps * delta}
        real = patched_metrics(model, CORRUPT, donor, [Cell(site, p) for p in range(6)], metric)
        est = m0 + eps * (delta * grads[site])[0].sum(-1).numpy()
        errors.append(np.abs(real - est).max())
    assert errors[1] < errors[0] / 50  # O(eps^2): ten times smaller eps, about a hundred times smaller error


def test_attribution_agrees_with_patching_where_the_model_is_linear():
    """The last layer's MLP output only passes ln_f and the unembedding: on the answer position
    patching and its linear estimate differ only by ln_f's curvature; on earlier positions both are 0."""
    model = tiny()
    runs = clean_and_corrupted(model, CLEAN, CORRUPT, metric_for(model))
    real = patch_grids(model, runs, ["mlp"], "denoise")["mlp"]
    approx = attribution_grids(model, runs, ["mlp"], "denoise")["mlp"]
    np.testing.assert_allclose(approx.effect[:, :2], 0.0, atol=1e-12)
    assert agreement(real, approx)["cells"] == 12


def test_bad_inputs_get_clear_messages():
    model = tiny()
    metric = metric_for(model)
    with pytest.raises(PlaygroundError, match="same number of tokens"):
        clean_and_corrupted(model, CLEAN, CORRUPT[:, :5], metric)
    with pytest.raises(PlaygroundError, match="same"):
        clean_and_corrupted(model, CLEAN, CLEAN, metric)
    with pytest.raises(PlaygroundError, match="GPT-style"):
        Layout.of(torch.nn.Linear(2, 2))


def test_hooks_are_removed_even_on_error():
    model = tiny()
    runs = clean_and_corrupted(model, CLEAN, CORRUPT, metric_for(model))
    bad = Metric(-1, 10**6)  # an answer outside the vocabulary fails inside the patched forward
    with pytest.raises(IndexError):
        patched_metrics(model, CORRUPT, runs.acts["clean"], Layout.of(model).cells("resid", 6), bad)
    assert all(not m._forward_hooks and not m._forward_pre_hooks for m in model.modules())


def test_eta_is_the_pace_so_far_times_the_cells_left():
    from playground.analysis.causal.patching import Eta

    eta = Eta()
    assert eta(0, 10) == "0/10 cells"
    eta.start -= 10.0  # 10 s spent on 5 of 10 cells: about 10 s left
    assert eta(5, 10).startswith("5/10 cells, about 1") and eta(5, 10).endswith(" s left")
