"""Two models, one input: the per-input analysis, attention interventions and head scores of each,
in two columns (the user's own model beside an imported pretrained one).

Each model reads the same text through its own tokenizer. Per model:
- the per-input analysis (:func:`~playground.analysis.explain.per_input.analyze_checkpoint`) and
  its agreement table (Kendall tau of every pair of methods);
- attention interventions on this input, as total variation distance (TVD) of the explained
  output distribution from the unchanged one: every layer's attention made uniform over the
  visible keys; the last layer's uniform; the last layer's weights permuted among the visible
  keys (Jain & Wallace's permutation, ``n_perm`` draws: median TVD and the share that change the
  predicted token or class);
- induction scores (language models with causal attention): the best head's score on repeated
  random tokens (Olsson et al. 2022).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
import torch
from torch import Tensor

from playground.analysis.experiments.core import make_generator
from playground.analysis.explain.per_input import (
    AnalysisOptions,
    InputAnalysis,
    InputSpec,
    analyze_checkpoint,
)
from playground.analysis.heads.report import gpt_induction
from playground.analysis.inputs import Prepared, special_id_set
from playground.bundle import Bundle
from playground.models.attention import (
    attention_modules,
    override_attention,
    uniform_override,
)

N_PERMUTATIONS = 20


@dataclass
class ModelColumn:
    """One model's side: its analysis, interventions and head scores."""

    name: str
    analysis: InputAnalysis
    interventions: dict[str, float]
    induction: dict[str, float] | None  # {"best head": ..., "score": ...} for causal LMs


def permute_visible(generator: torch.Generator) -> Callable[[Tensor, int], Tensor]:
    """An override that permutes each row's weights among its visible keys (weights > 0): [B,H,Q,K]."""
    def fn(weights: Tensor, q_start: int) -> Tensor:
        out = weights.clone()
        for q in range(weights.shape[2]):
            visible = (weights[0, 0, q] > 0).nonzero().flatten()  # [n] keys this row may see
            if visible.numel() > 1:
                order = visible[torch.randperm(visible.numel(), generator=generator)]
                out[:, :, q, visible] = weights[:, :, q, order]
        return out

    return fn


def _tvd(p: Tensor, q: Tensor) -> float:
    return float(0.5 * (p - q).abs().sum(-1).max())


@torch.no_grad()
def interventions(prepared: Prepared, n_perm: int = N_PERMUTATIONS, seed: int = 0) -> dict[str, float]:
    """TVD of the explained output under uniform / permuted attention on this input (see the module doc)."""
    q = prepared.query.select([prepared.selected])
    model = q.model
    names = list(attention_modules(model))
    base = q.probs()  # [1,V]
    predicted = int(base.argmax(-1))
    with override_attention(model, {n: uniform_override() for n in names}):
        all_uniform = q.probs()
    with override_attention(model, {names[-1]: uniform_override()}):
        last_uniform = q.probs()
    g = make_generator(seed)
    tvds, flips = [], 0
    for _ in range(n_perm):
        with override_attention(model, {names[-1]: permute_visible(g)}):
            p = q.probs()
        tvds.append(_tvd(base, p))
        flips += int(p.argmax(-1)) != predicted
    return {"TVD, every layer uniform": _tvd(base, all_uniform), "TVD, last layer uniform": _tvd(base, last_uniform),
            f"median TVD, last layer permuted ({n_perm}x)": float(torch.tensor(tvds).median()),
            "share of permutations changing the prediction": flips / max(n_perm, 1)}


def induction(bundle: Bundle, length: int = 24, n: int = 8, seed: int = 0) -> dict[str, float] | None:
    """The best induction head of a causal LM (None for other models)."""
    mods = attention_modules(bundle.model)
    if bundle.tokenizer is None or not mods or not all(getattr(m, "causal", False) for m in mods.values()):
        return None
    vocab = int(bundle.model_config.vocab_size)
    length = min(length, int(getattr(bundle.model_config, "block_size", 2 * length)) // 2)
    scores, _ = gpt_induction(bundle.model, vocab, special_id_set(bundle.tokenizer), length, n, seed)
    name, head, score = max(((m, h, s) for m, row in scores.items() for h, s in enumerate(row)), key=lambda t: t[2])
    return {"best head": f"{name} head {head}", "score": float(score)}


def analyse_pair(bundles: Sequence[Bundle], text: str, options: AnalysisOptions, device: str = "cpu",
                 n_perm: int = N_PERMUTATIONS) -> list[ModelColumn]:
    """Both models' columns on ``text`` (same options, each through its own tokenizer)."""
    columns = []
    for bundle in bundles:
        result = analyze_checkpoint(bundle, InputSpec(text=text), options, device=device, private=True)
        columns.append(ModelColumn(bundle.name, result, interventions(result.prepared, n_perm), induction(bundle)))
    return columns


def agreement_columns(columns: Sequence[ModelColumn], metric: str = "kendall_tau") -> pd.DataFrame:
    """One row per pair of methods, one column per model (``metric`` of that pair)."""
    frames = []
    for col in columns:
        a = col.analysis.agreement
        frames.append(pd.DataFrame({"pair": a["method_a"] + " ~ " + a["method_b"], col.name: a[metric].astype(float)}))
    out = frames[0]
    for f in frames[1:]:
        out = out.merge(f, on="pair", how="left", suffixes=("", " (2)"))  # the first model's order
    return out


def summary_columns(columns: Sequence[ModelColumn]) -> pd.DataFrame:
    """Prediction, interventions and the best induction head, one column per model."""
    rows: dict[str, dict[str, Any]] = {}
    for col in columns:
        p = col.analysis.prepared
        values: dict[str, Any] = {"family": p.family, "input units": len(p.units), "target": repr(p.target_label),
                                  "predicted": repr(p.predicted_label), "p(target)": p.info.get("target_prob")}
        values |= col.interventions
        if col.induction is not None:
            values |= {"best induction head": col.induction["best head"], "its induction score": col.induction["score"]}
        for key, value in values.items():
            rows.setdefault(key, {})[col.name] = value
    return pd.DataFrame([{"": key, **vals} for key, vals in rows.items()])
