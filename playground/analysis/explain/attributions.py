"""Gradient and perturbation importance through captum (``captum.attr`` directly).

Every function takes a :class:`~playground.analysis.query.Query` (B examples) and returns a
small dataclass whose ``values`` are [B, U] importances over the input units (tokens, source
tokens or patches). Attributions are taken against the query's embedding layer and summed
over the embedding dimension (saliency: L2 norm over it).

Models with recurrent layers are attributed inside ``torch.backends.cudnn.flags(enabled=False)``
(cuDNN's RNN backward refuses eval mode); the context is harmless for the other models.

Thread safety: captum's layer methods put hooks on the model while they run. A model shared
with other threads (the app's bundle cache) must be copied first (:func:`private_model`).
"""
from __future__ import annotations

import copy
import warnings
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from playground.analysis.divergences import tvd, wide
from playground.analysis.query import Query
from playground.models.attention import attention_modules, override_attention

REL_TOL = 0.05  # IG accepted when |delta| <= REL_TOL * |F(x) - F(x')| ...
ABS_TOL = 1e-4  # ... or |delta| <= ABS_TOL (F(x) = F(x') would otherwise never pass)
MAX_STEPS = 800
ACTIVATION_BUDGET = 2**27  # floats of activations per forward chunk (~512 MB fp32)


def private_model(model: nn.Module) -> nn.Module:
    """A deep copy in eval mode (captum hooks on it cannot disturb other users of ``model``)."""
    return copy.deepcopy(model).eval()


def no_cudnn():
    """Context that disables cuDNN (RNN backward in eval mode); a no-op without CUDA."""
    return torch.backends.cudnn.flags(enabled=False)


def batch_rows(query: Query, length: int | None = None) -> int:
    """How many input rows one forward chunk takes (IG steps, leave-one-out variants)."""
    cfg = getattr(query.model, "config", None)
    d = getattr(cfg, "d_model", None) or getattr(cfg, "hidden", None) or 256
    layers = query.explainer.layer_count(cfg)
    T = length or (query.n_units + (0 if query.decoder_inputs is None else query.decoder_inputs.shape[1]))
    return max(1, int(ACTIVATION_BUDGET // (T * d * layers * 12)))


def units_from_layer(attr: Tensor, query: Query, reduce: str = "sum") -> Tensor:
    """Layer attributions -> [B,U]: sum (or L2 norm, ``reduce="norm"``) over the embedding dimension.

    Accepts [B,T,D] (tokens or patches) or [B,D,h,w] (a convolutional patch embedding).
    """
    if attr.dim() == 4:  # [B,D,h,w]
        attr = attr.flatten(2).transpose(1, 2)  # [B,h*w,D]
    if attr.dim() != 3:
        raise ValueError(f"cannot map a layer attribution of shape {tuple(attr.shape)} to input units")
    attr = query.explainer.layer_units(query, attr)  # [B,U,D]
    out = attr.norm(dim=-1) if reduce == "norm" else attr.sum(dim=-1)
    return out.detach()  # [B,U]


# ----------------------------------------------------------------------------------------
# Gradient methods


@dataclass
class Attribution:
    """Importances [B,U] of one method (``signed``: whether the sign carries meaning)."""

    method: str
    values: Tensor
    signed: bool = True


CAPTUM_METHODS = ("saliency", "ixg", "ig", "deeplift")  # the methods that run through captum


def load_captum() -> None:
    """Import captum now (a second or more the first time), so that it is not counted in the time
    of whichever method happens to run first."""
    import captum.attr  # noqa: F401 - function-level: captum adds ~0.5 s to the app's start


def _grad_x_act(query: Query, multiply: bool) -> Tensor:
    from captum.attr import (
        LayerGradientXActivation,  # function-level: captum adds ~0.5 s to the app's start
    )

    attr = LayerGradientXActivation(query.forward_fn(), query.layer, multiply_by_inputs=multiply)
    with no_cudnn():
        return attr.attribute(query.inputs, additional_forward_args=query.forward_args())


def saliency(query: Query) -> Attribution:
    """‖∂F/∂e_t‖₂ over the embedding dimension (captum LayerGradientXActivation without the input factor)."""
    return Attribution("saliency", units_from_layer(_grad_x_act(query, False), query, "norm"), signed=False)


def input_x_gradient(query: Query) -> Attribution:
    """Σ_d e_{t,d}·∂F/∂e_{t,d} (captum LayerGradientXActivation)."""
    return Attribution("ixg", units_from_layer(_grad_x_act(query, True), query), signed=True)


def detached_attention(model: nn.Module) -> AbstractContextManager[None]:
    """Context in which every attention map of ``model`` is detached from the autograd graph:
    the forward is unchanged, but gradients flow around the attention weights (α is treated as
    a constant), as in Jain & Wallace's gradient importance."""

    def detach(weights: Tensor, q_start: int) -> Tensor:
        return weights.detach()  # [B,H,Q,K], same values, no gradient through α

    return override_attention(model, {name: detach for name in attention_modules(model)})


def jw_gradient(query: Query) -> Attribution:
    """Jain & Wallace's gradient importance: |Σ_d e_{t,d}·∂F/∂e_{t,d}| with every attention map
    detached (:func:`detached_attention`).

    J&W differentiate ŷ (the predicted probability); F here is log ŷ, whose gradient is ŷ's
    divided by ŷ > 0 — the same ranking per example, so Kendall τ against it is J&W's.
    """
    with detached_attention(query.model):
        values = units_from_layer(_grad_x_act(query, True), query)  # [B,U]
    return Attribution("jw_grad", values.abs(), signed=False)


@dataclass
class IGResult(Attribution):
    """Integrated gradients with captum's convergence delta per example.

    delta = Σ attr − (F(x) − F(x′)); ``steps`` is the n_steps finally used for each example
    (raised by doubling until |delta| ≤ rel_tol·|F(x) − F(x′)| or the cap).
    """

    delta: Tensor | None = None  # [B]
    steps: Tensor | None = None  # [B] int
    f_inputs: Tensor | None = None  # [B] F(x)
    f_baselines: Tensor | None = None  # [B] F(x')
    converged: Tensor | None = None  # [B] bool

    def tolerance(self) -> Tensor:
        return torch.clamp(REL_TOL * (self.f_inputs - self.f_baselines).abs(), min=ABS_TOL)  # type: ignore[operator]


def _ig_layer(query: Query, n_steps: int, internal_batch_size: int | None, method: str) -> tuple[Tensor, Tensor]:
    """captum LayerIntegratedGradients as is: (units [B,U], convergence delta [B])."""
    from captum.attr import (
        LayerIntegratedGradients,  # function-level: captum adds ~0.5 s to the app's start
    )

    lig = LayerIntegratedGradients(query.forward_fn(), query.layer)
    rows = internal_batch_size or max(query.batch_size, batch_rows(query))
    with no_cudnn():
        attr, delta = lig.attribute(query.inputs, baselines=query.baselines, additional_forward_args=query.forward_args(),
                                    n_steps=n_steps, method=method, internal_batch_size=rows,
                                    return_convergence_delta=True)
    return units_from_layer(attr, query), delta.detach().reshape(-1)


def _ig_once(query: Query, n_steps: int, internal_batch_size: int | None, method: str) -> tuple[Tensor, Tensor, Tensor]:
    """IG over the embedding layer's output: (units [B,U], convergence delta [B], F [2B] of inputs then baselines).

    The same integral as captum's LayerIntegratedGradients, with one forward fewer on each side:
    a single pass over inputs and baselines gives both F and the layer's outputs there (LayerIG
    runs one pass per side for the outputs and two more for its delta); captum's
    IntegratedGradients then integrates over those outputs, the layer's output replaced by the
    interpolated one through a forward hook (as LayerIG does), and the delta is Σ attr − (F(x) − F(x′)).
    A layer called more than once per forward goes through LayerIG unchanged.
    """
    from captum.attr import (
        IntegratedGradients,  # function-level: captum adds ~0.5 s to the app's start
    )

    B = query.batch_size
    doubled = query.select(list(range(B)) * 2)
    outputs: list[Tensor] = []
    handle = query.layer.register_forward_hook(lambda module, args, out: outputs.append(out.detach()))
    try:
        with torch.no_grad(), no_cudnn():
            f = doubled.forward_fn()(torch.cat([query.inputs, query.baselines]), *doubled.forward_args())  # [2B]
    finally:
        handle.remove()
    if len(outputs) != 1 or not isinstance(outputs[0], Tensor):
        values, delta = _ig_layer(query, n_steps, internal_batch_size, method)
        return values, delta, f
    emb_x, emb_b = outputs[0][:B], outputs[0][B:]  # [B,T,D] (or [B,D,h,w])
    score = query.forward_fn()

    def f_embedded(emb: Tensor, inputs: Tensor, *args: Tensor) -> Tensor:
        hook = query.layer.register_forward_hook(lambda module, a, out: emb)  # the layer outputs emb instead
        try:
            return score(inputs, *args)  # [N]
        finally:
            hook.remove()

    rows = internal_batch_size or max(B, batch_rows(query))
    with no_cudnn():
        attr = IntegratedGradients(f_embedded).attribute(emb_x, baselines=emb_b, n_steps=n_steps, method=method,
                                                         additional_forward_args=(query.inputs, *query.forward_args()),
                                                         internal_batch_size=rows)
    delta = attr.detach().flatten(1).sum(1) - (f[:B] - f[B:])  # [B]
    return units_from_layer(attr, query), delta, f


def integrated_gradients(query: Query, n_steps: int = 50, auto_steps: bool = True, max_steps: int = MAX_STEPS,
                         rel_tol: float = REL_TOL, internal_batch_size: int | None = None,
                         method: str = "gausslegendre") -> IGResult:
    """Integrated gradients over the embedding layer's output from ``query.baselines``: captum's
    IntegratedGradients on that output, the integral of LayerIntegratedGradients (:func:`_ig_once`).

    With ``auto_steps`` the examples whose |delta| exceeds rel_tol·|F(x) − F(x′)| (or ABS_TOL)
    are recomputed with twice the steps, up to ``max_steps``. IG steps are batched
    (``internal_batch_size`` rows per forward; default sized to memory).
    """
    if query.baselines is None:
        raise ValueError("integrated gradients needs query.baselines")
    B = query.batch_size
    values, delta, f = _ig_once(query, n_steps, internal_batch_size, method)
    f_x, f_b = f[:B], f[B:]
    tol = torch.clamp(rel_tol * (f_x - f_b).abs(), min=ABS_TOL)
    steps = torch.full((B,), n_steps, dtype=torch.long)
    todo = (delta.abs() > tol).nonzero().flatten()
    current = n_steps
    while auto_steps and todo.numel() and current * 2 <= max_steps:
        current *= 2
        sub = query.select(todo)
        v, d, _ = _ig_once(sub, current, internal_batch_size, method)
        values[todo], delta[todo], steps[todo] = v, d, current
        todo = todo[(d.abs() > tol[todo])]
    return IGResult("ig", values, True, delta, steps, f_x, f_b, delta.abs() <= tol)


@dataclass
class DeepLiftResult(Attribution):
    """DeepLift (experimental: its rules do not cover softmax, LayerNorm or GELU); always read its delta."""

    delta: Tensor | None = None  # [B] Σ attr − (F(x) − F(x'))


class _ScoreModule(nn.Module):
    """F as an nn.Module (captum's DeepLift needs a module to hook)."""

    def __init__(self, query: Query) -> None:
        super().__init__()
        self.model = query.model
        self._fn = query.forward_fn()

    def forward(self, inputs: Tensor, *args: Tensor) -> Tensor:
        return self._fn(inputs, *args)


def deeplift(query: Query) -> DeepLiftResult:
    """captum LayerDeepLift on the embedding layer from ``query.baselines`` (experimental)."""
    from captum.attr import (
        LayerDeepLift,  # function-level: captum adds ~0.5 s to the app's start
    )

    if query.baselines is None:
        raise ValueError("DeepLift needs query.baselines")
    dl = LayerDeepLift(_ScoreModule(query), query.layer)
    with no_cudnn(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Setting forward, backward hooks and attributes on non-linear ..."
        attr, delta = dl.attribute(query.inputs, baselines=query.baselines,
                                   additional_forward_args=query.forward_args(), return_convergence_delta=True)
    return DeepLiftResult("deeplift", units_from_layer(attr, query), True, delta.detach().reshape(-1))


# ----------------------------------------------------------------------------------------
# Leave-one-out


@dataclass
class LOOResult(Attribution):
    """Δ_t = TVD(ŷ(x without unit t), ŷ(x)); ``mode`` is "replace" (by the baseline) or "delete"."""

    mode: str = "replace"


LOO_MODES = ("replace", "delete")


def replaced_tokens(query: Query) -> Tensor:
    """Every token replaced by its baseline in turn, unit-major: [U·B,T] (row t·B + b)."""
    x, U = query.inputs, query.n_units
    eye = torch.eye(U, x.shape[1], dtype=torch.bool, device=x.device)[:, None, :]  # [U,1,T]
    return torch.where(eye, query.baselines.unsqueeze(0), x.unsqueeze(0)).flatten(0, 1)  # type: ignore[union-attr]


def deleted_tokens(query: Query) -> Tensor:
    """Every token deleted in turn (the rest shifted left, ``pad_id`` at the end): [U,B,T].

    The padding is invisible to a causal query and masked as padding in a seq2seq source.
    """
    x, U = query.inputs, query.n_units
    T = x.shape[1]
    t_idx = torch.arange(U, device=x.device)
    keep = torch.arange(T, device=x.device)[None, :] + (torch.arange(T, device=x.device)[None, :] >= t_idx[:, None]).long()
    valid = keep < T  # [U,T]
    gathered = x[:, keep.clamp(max=T - 1)]  # [B,U,T]
    return torch.where(valid[None], gathered, torch.full_like(gathered, query.pad_id)).transpose(0, 1)  # [U,B,T]


def plain_loo_logits(query: Query, variants: Tensor, positions: Tensor | None,
                     rows: int) -> Iterator[tuple[Tensor, Tensor]]:
    """The explained logits of every leave-one-out variant, one whole forward per variant:
    yields (row indices [n], logits [n,V]) for ``rows`` variants at a time."""
    U = variants.shape[0] // query.batch_size
    dec = None if query.decoder_inputs is None else query.decoder_inputs.repeat(U, 1)
    for start in range(0, variants.shape[0], rows):
        sl = slice(start, start + rows)
        pos = None if positions is None else positions[sl]
        last = query.last_only and pos is not None and bool((pos == variants.shape[1] - 1).all())
        logits = query.explainer.output_rows(query, variants[sl], pos, None if dec is None else dec[sl], last)
        yield torch.arange(start, start + logits.shape[0], device=query.device), logits


def prefix_cached_logits(model: nn.Module, inputs: Tensor, variants: Tensor, positions: Tensor,
                         budget: int = ACTIVATION_BUDGET) -> Iterator[tuple[Tensor, Tensor]]:
    """The logits at ``positions`` [N] of N variants [N,T] of a causal LM's B inputs [B,T]
    (variant n changes input n % B), computed from where each variant first differs.

    A causal model's states before the first changed token i are the unchanged input's, so one
    forward of the inputs fills a KV cache, and each variant recomputes only positions i..p
    (its query position p) on top of that cache's first i positions: about n²/2 token-forwards
    for n one-token variants instead of n². Variants are taken in order of i, in chunks that
    start at the chunk's smallest i and whose activations and cache copies fit ``budget``
    floats. The model needs ``new_cache()`` and ``forward(ids, cache=, last_only=)`` (our GPT).
    Yields (row indices [n], logits [n,V]), rows in any order.
    """
    N, T = variants.shape
    B = inputs.shape[0]
    b_of = torch.arange(N, device=variants.device) % B  # [N] the input each variant changes
    differs = variants != inputs[b_of]  # [N,T]
    first = torch.where(differs.any(1), differs.int().argmax(1), T)  # [N] first changed position (T: none)
    first = torch.minimum(first, positions)  # a change after the query position cannot matter: start at p
    order = torch.argsort(first, stable=True)
    cfg = getattr(model, "config", None)
    width = (getattr(cfg, "d_model", None) or 256) * (getattr(cfg, "n_layer", None) or 4)
    cache = model.new_cache(T)
    with torch.no_grad():
        model(inputs, cache=cache)  # fills keys/values of positions 0..T-1 of every input
        start = 0
        while start < N:
            a = int(first[order[start]])
            rows = max(1, budget // ((12 * (T - a) + 2 * T) * width))  # activations + the chunk's cache copy
            idx = order[start:start + rows]  # [n] variants, first changed position >= a
            end = int(positions[idx].max()) + 1  # positions a..end-1 are recomputed
            part = model.new_cache(T)
            part.length = a
            for full, slot in zip(cache.layers, part.layers):
                k, v = full.k, full.v  # [B,H,T,hd]
                slot.k = k.new_empty(len(idx), *k.shape[1:])  # [n,H,T,hd]
                slot.v = v.new_empty(len(idx), *v.shape[1:])
                slot.k[:, :, :a] = k[b_of[idx], :, :a]
                slot.v[:, :, :a] = v[b_of[idx], :, :a]
            pos = positions[idx] - a  # [n] each variant's query row within the recomputed part
            last = bool((pos == end - a - 1).all())
            logits = model(variants[idx, a:end], cache=part, last_only=last)  # [n,end-a,V] ([n,1,V])
            yield idx, logits[:, -1] if last else logits[torch.arange(len(idx), device=logits.device), pos]
            start += len(idx)


def leave_one_out(query: Query, mode: str = "replace", batch_size: int | None = None,
                  reuse_prefix: bool = True) -> LOOResult:
    """Leave-one-out TVD per unit, all variants batched (``batch_size`` rows per whole forward).

    "replace" puts the baseline (pad/unk id, black patch) in place of the unit; "delete"
    removes the token (text only). Images always use replacement (patch occlusion). A family
    may compute the variants' outputs faster (:meth:`FamilyExplainer.loo_logits`: a causal LM
    reuses the unchanged prefix through its KV cache) unless ``reuse_prefix`` is False or
    ``batch_size`` is given; the values are the same.
    """
    if mode not in LOO_MODES:
        raise ValueError(f"leave-one-out mode {mode!r}; one of {LOO_MODES}")
    mode = query.explainer.loo_mode(mode)
    B, U = query.batch_size, query.n_units
    variants, positions = query.explainer.loo_variants(query, mode)  # [U·B,...], [U·B] or None
    ref = query.probs()  # [B,V]
    out = torch.empty(U * B, device=query.device, dtype=ref.dtype)
    with torch.no_grad():
        chunks = query.explainer.loo_logits(query, variants, positions) if reuse_prefix and not batch_size else None
        if chunks is None:
            chunks = plain_loo_logits(query, variants, positions, batch_size or batch_rows(query))
        for idx, logits in chunks:
            p = wide(logits).softmax(-1)  # [n,V] (float64 stays float64)
            out[idx] = tvd(p, ref[idx % B])  # [n]
    return LOOResult("loo" if mode == "replace" else "loo_delete", out.view(U, B).T.contiguous(), False, mode)


# ----------------------------------------------------------------------------------------

GRADIENT_METHODS: dict[str, Callable[..., Attribution]] = {
    "saliency": saliency,
    "ixg": input_x_gradient,
    "jw_grad": jw_gradient,
    "ig": integrated_gradients,
    "loo": leave_one_out,
    "deeplift": deeplift,
}
