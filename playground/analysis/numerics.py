"""Numerical honesty: is a ranking of importances above floating-point noise, and float64 copies.

A saturated classifier (1 − p ≤ ~1e-4 in float32) has gradients of log p scaled by 1 − p and
leave-one-out changes of a few float32 ulps of p: ranking them ranks rounding noise, and the
Kendall τ of attention against them moves with the arithmetic, not the model.

- :func:`saturation` says, per example, how far the explained output is from saturation, in
  units of the model's machine epsilon, and whether that is within :data:`NOISE_ULPS`.
- :func:`loo_at_noise` says whether leave-one-out output changes are at that noise level.
- :func:`query_in_float64` copies a query onto a float64 copy of its model (cheap for the
  small models the experiments run on), which is the remedy the warnings offer; a model above
  :data:`FLOAT64_MAX_PARAMETERS` is refused (:func:`check_float64`).
- :func:`noisy_methods` / :func:`pair_note`: which methods of one example rank noise, and the
  flag an agreement row or pair shows beside its number.
"""
from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import torch
from torch import Tensor, nn

from playground.analysis.query import Query
from playground.errors import TooBigError

NOISE_ULPS = 1024  # a difference within this many machine epsilons of the output counts as noise
# methods whose values scale with 1 − p when the output saturates (gradients of log p, output changes)
OUTPUT_SENSITIVE = frozenset({"saliency", "ixg", "jw_grad", "ig", "loo", "loo_delete", "deeplift", "relevancy"})
LOO_METHODS = frozenset({"loo", "loo_delete"})
FLOAT64_MAX_PARAMETERS = 10_000_000  # a float64 copy is for small models (twice the memory, slow on GPUs)


def model_dtype(model: nn.Module) -> torch.dtype:
    """The floating dtype of the model's first floating parameter (float32 if it has none)."""
    for p in model.parameters():
        if p.is_floating_point():
            return p.dtype
    return torch.float32


@dataclass
class Saturation:
    """How close each example's explained output is to certainty.

    complement: [B] 1 − max_k p_k (computed in float64 from the logits the model returns);
    eps: machine epsilon of the model's dtype; saturated: [B] complement ≤ NOISE_ULPS·eps.
    """

    dtype: str
    eps: float
    complement: np.ndarray
    saturated: np.ndarray

    @property
    def any(self) -> bool:
        return bool(self.saturated.any())

    def note(self) -> str:
        """One sentence for the per-input notes / experiment summary ('' when nothing is saturated)."""
        if not self.any:
            return ""
        n, B = int(self.saturated.sum()), len(self.saturated)
        worst = float(self.complement[self.saturated].min())
        which = "the output is" if B == 1 else f"{n} of {B} outputs are"
        return (f"numerical precision: {which} saturated in {self.dtype} (1 − p = {worst:.1e}, within "
                f"{NOISE_ULPS} × machine epsilon {self.eps:.1e}): gradients of log p scale with 1 − p and "
                f"leave-one-out changes are a few ulps of p, so rankings (and τ) against them can rank rounding "
                f"noise. " + ("Even float64 is at its limit here." if self.dtype == "float64" else
                              "Rerun in float64 (--float64 / the float64 option) to check."))

    def to_dict(self) -> dict[str, object]:
        return {"dtype": self.dtype, "eps": self.eps, "noise_ulps": NOISE_ULPS,
                "complement": self.complement.tolist(), "saturated": self.saturated.tolist(),
                "n_saturated": int(self.saturated.sum()), "n": int(len(self.saturated))}


def saturation(query: Query) -> Saturation:
    """:class:`Saturation` of every example of ``query`` (one forward, no gradient)."""
    dtype = model_dtype(query.model)
    eps = float(torch.finfo(dtype).eps)
    with torch.no_grad():
        logits = query.output_rows(query.inputs).double()  # [B,V] logits as the model computed them
    # 1 − max p = Σ_{k≠argmax} p_k, summed in float64 without cancellation against 1
    logp = logits.log_softmax(-1)  # [B,V]
    top = logp.argmax(-1, keepdim=True)  # [B,1]
    rest = logp.scatter(-1, top, float("-inf"))  # [B,V]
    complement = rest.logsumexp(-1).exp().cpu().numpy()  # [B]
    return Saturation(str(dtype).replace("torch.", ""), eps, complement, complement <= NOISE_ULPS * eps)


def loo_at_noise(changes: np.ndarray | Tensor, dtype: torch.dtype) -> bool:
    """Whether every leave-one-out output change (TVD, ≤ 1) is within NOISE_ULPS ulps of 1."""
    values = np.abs(np.asarray(changes.detach().cpu() if isinstance(changes, Tensor) else changes, dtype=np.float64))
    return bool(values.size) and float(values.max()) <= NOISE_ULPS * float(torch.finfo(dtype).eps)


def noisy_methods(methods: Sequence[str], saturated: bool, loo_noise: dict[str, bool]) -> set[str]:
    """The methods among ``methods`` whose values sit at rounding noise for one example: every
    gradient / output-change method when the output is saturated, a leave-one-out method whose
    changes are all within noise (``loo_noise``: method -> :func:`loo_at_noise`)."""
    return {m for m in methods if (saturated and m in OUTPUT_SENSITIVE) or loo_noise.get(m, False)}


def pair_note(a: str, b: str, noisy: set[str], dtype: str) -> str:
    """The flag shown beside a pair's agreement: '' or which side is at noise and the remedy."""
    bad = [m for m in (a, b) if m in noisy]
    if not bad:
        return ""
    hint = "even float64 is at its limit" if dtype == "float64" else "rerun in float64"
    return f"{' and '.join(bad)} at {dtype} noise: {hint}"


def _module_path(model: nn.Module, module: nn.Module) -> str:
    for name, m in model.named_modules():
        if m is module:
            return name
    raise ValueError("the query's attributed layer is not a module of its model")


def check_float64(model: nn.Module) -> None:
    """Refuse a float64 copy of a model above FLOAT64_MAX_PARAMETERS (TooBigError, with the reason)."""
    n = sum(p.numel() for p in model.parameters())
    if n > FLOAT64_MAX_PARAMETERS:
        raise TooBigError(
            f"float64 is offered for small models only: this one has {n:,} parameters, above "
            f"{FLOAT64_MAX_PARAMETERS:,}. A float64 copy doubles the model's memory and runs many times slower "
            "(GPUs have little float64 throughput). Run without float64; a saturated output is still flagged.")


def float64_model(model: nn.Module) -> nn.Module:
    """A float64 deep copy of ``model`` in eval mode (the original is untouched); TooBigError above the cap."""
    check_float64(model)
    return copy.deepcopy(model).double().eval()


def query_in_float64(query: Query, model64: nn.Module | None = None) -> Query:
    """The same query on a float64 copy of its model (``model64``: one already cast, shared by
    several queries of the same model); floating inputs and baselines (images) are cast too."""
    if model_dtype(query.model) == torch.float64:
        return query
    path = _module_path(query.model, query.layer)
    model64 = model64 if model64 is not None else float64_model(query.model)
    layer = model64.get_submodule(path) if path else model64

    def cast(t: Tensor | None) -> Tensor | None:
        return t.double() if t is not None and t.is_floating_point() else t

    return replace(query, model=model64, layer=layer, inputs=cast(query.inputs), baselines=cast(query.baselines))


def queries_in_float64(queries: Sequence[Query]) -> list[Query]:
    """:func:`query_in_float64` for many queries, casting each distinct model once."""
    cast: dict[int, nn.Module] = {}
    out = []
    for q in queries:
        if model_dtype(q.model) != torch.float64 and id(q.model) not in cast:
            cast[id(q.model)] = float64_model(q.model)
        out.append(query_in_float64(q, cast.get(id(q.model))))
    return out
