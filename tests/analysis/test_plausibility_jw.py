"""Plausibility (pointing game against the reviews' known rationales) for Jain & Wallace's own
definitions, jw_grad and loo_delete, checked against a by-hand computation on the shipped BiLSTM."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from playground.analysis.experiments.core import drive
from playground.analysis.experiments.data import load_held_out
from playground.analysis.experiments.erasure import POINTING_METHODS
from playground.analysis.experiments.runner import ExperimentOptions, iter_experiment
from playground.bundle import load_bundle
from playground.settings import SHIPPED_LIBRARY
from playground.workspace import Workspace

SHIPPED = "textclf-reviews-bilstm-additive"


@pytest.fixture(scope="module")
def bundle():
    return load_bundle(SHIPPED, Workspace(SHIPPED_LIBRARY))


def _jw_grad_by_hand(model, ids: torch.Tensor, target: int) -> np.ndarray:
    """|Σ_d e·∂log p/∂e| with α held constant, written out on the BiLSTM (one unpadded text)."""
    alpha = model.attention_weights(ids).detach()  # [1,T] the trained α, a constant here
    e = model.embedding(ids).detach().requires_grad_(True)  # [1,T,E]
    h, _ = model.encoder(e)  # [1,T,H] no padding: no packing needed
    context = (alpha[..., None] * h).sum(1)  # [1,H]
    logp = model.head(context).log_softmax(-1)[0, target]
    (g,) = torch.autograd.grad(logp, e)
    return (e * g).sum(-1).abs()[0].detach().double().numpy()  # [T]


def _loo_delete_by_hand(model, ids: torch.Tensor) -> np.ndarray:
    """TVD of the class distribution when each token is deleted from the text."""
    with torch.no_grad():
        base = model(ids).double().softmax(-1)[0]
        out = []
        for t in range(ids.shape[1]):
            cut = torch.cat([ids[:, :t], ids[:, t + 1:]], 1)
            out.append(0.5 * float((model(cut).double().softmax(-1)[0] - base).abs().sum()))
    return np.array(out)


def _mass_share(values: np.ndarray, rationale: np.ndarray) -> float:
    """Share of the top-k importance (k = rationale size, ties to the earlier token) on the rationale."""
    k = int(rationale.sum())
    order = sorted(range(len(values)), key=lambda i: (-values[i], i))[:k]
    top = values[order]
    return float(top[rationale[order]].sum() / top.sum())


def test_pointing_scores_jw_grad_and_loo_delete_like_a_hand_computation(bundle) -> None:
    assert "jw_grad" in POINTING_METHODS and "loo_delete" in POINTING_METHODS  # in the defaults
    ws = Workspace(SHIPPED_LIBRARY)
    held = load_held_out(bundle, 3, 0, ws)  # the runner scores these same examples
    opts = ExperimentOptions(n=3, methods=("jw_grad", "loo_delete"))
    result = drive(iter_experiment("pointing", bundle, opts, workspace=ws, held=held))
    assert len(result.rows) == 6
    model = bundle.model
    for row in result.rows:
        q, mask = held.queries[row.example], held.masks[row.example]
        ids, rationale = q.inputs, np.asarray(mask, dtype=bool)
        assert ids.shape[0] == 1 and int((ids == model.config.pad_id).sum()) == 0
        target = int(q.targets[0])
        values = _jw_grad_by_hand(model, ids, target) if row.method == "jw_grad" else _loo_delete_by_hand(model, ids)
        assert row.mass_share == pytest.approx(_mass_share(values, rationale), abs=1e-6)
        assert row.object_patches == int(rationale.sum())
