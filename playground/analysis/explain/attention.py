"""Attention-based importance over the input units, read from the model's own maps.

Which maps relate input to target (each family's explainer decides):

- GPT: the self-attention maps ``blocks.{i}.attn``, row = the query position.
- ViT: ``blocks.{i}.attn``, row 0 (CLS) over the patches (mean pooling: the mean of the patch rows).
- Transformer seq2seq: the cross-attention ``decoder.blocks.{i}.cross_attn``, row = output step;
  the encoder's self-attention ``encoder.blocks.{i}.attn`` is rolled out beneath it.
- RNN seq2seq: the Bahdanau/Luong alpha ``decoder.attention`` (one "head", one layer).

Methods: one layer/head or the head mean, rollout, flow, norm-weighted (Kobayashi et al.
2020) and gradient-weighted relevancy (Chefer et al. 2021). All take a :class:`Query` and
return an :class:`~playground.analysis.explain.attributions.Attribution` with values [B,U].
"""
from __future__ import annotations

import inspect
import threading
from dataclasses import dataclass, field

import torch
from torch import Tensor, nn

from playground.analysis.explain.attributions import Attribution, no_cudnn
from playground.analysis.explain.propagation import FLOW_MAX_TOKENS, attention_flow, attention_rollout, entropy, relevancy
from playground.analysis.query import Query
from playground.errors import PlaygroundError
from playground.models.attention import MultiHeadAttention, ScoredAttention, attention_modules, record_attention


@dataclass
class Recording:
    """One forward's attention: maps name -> [B,H,Q,K] and the value-side input of each module.

    ``values_in[name]`` is what the module projects to values: x for self-attention, the
    encoder memory for cross-attention, the encoder states for the RNN attention ([B,K,D]).
    """

    maps: dict[str, Tensor]
    values_in: dict[str, Tensor] = field(default_factory=dict)
    score: Tensor | None = None  # F [B]


def _value_input_hook(store: dict[str, Tensor], name: str, owner: int):
    def hook(module: nn.Module, args: tuple, kwargs: dict) -> None:
        if threading.get_ident() != owner or name in store:
            return None  # another thread's forward on a shared model, or a later decoding step
        bound = inspect.signature(module.forward).bind(*args, **kwargs)
        a = bound.arguments
        if isinstance(module, ScoredAttention):
            store[name] = a["values"]
        elif isinstance(module, MultiHeadAttention) and module.cross:
            store[name] = a["context"]
        else:
            store[name] = a["x"]
        return None
    return hook


def record(query: Query, values: bool = False, keep_grad: bool = False) -> Recording:
    """Run the model once under ``record_attention``; ``values`` also keeps each module's value input."""
    model = query.model
    store: dict[str, Tensor] = {}
    handles = []
    if values:
        owner = threading.get_ident()
        handles = [m.register_forward_pre_hook(_value_input_hook(store, name, owner), with_kwargs=True)
                   for name, m in attention_modules(model).items()]
    try:
        with torch.set_grad_enabled(keep_grad), record_attention(model, keep_grad=keep_grad) as maps:
            score = query.forward_fn()(query.inputs, *query.forward_args())
            recorded = {name: maps[name] for name in maps}
    finally:
        for h in handles:
            h.remove()
    return Recording(recorded, store, score)


# ----------------------------------------------------------------------------------------
# Which maps explain the target, and which of their rows


def explaining_maps(query: Query) -> list[str]:
    """Names of the maps whose query rows look at the input units, first layer first (the family's choice)."""
    return query.explainer.explaining_maps(query.model)


def rows(query: Query, attn: Tensor) -> Tensor:
    """The rows of ``attn`` [B,H,Q,K] (or [B,Q,K]) that explain each example -> [B,H,U] (or [B,U])."""
    squeeze = attn.dim() == 3
    a = attn.unsqueeze(1) if squeeze else attn  # [B,H,Q,K]
    out = query.explainer.explained_rows(query, a)  # [B,H,U]
    return out[:, 0] if squeeze else out


def _layer_name(names: list[str], layer: int | None) -> str:
    if not names:
        raise PlaygroundError("This model has no attention to read (RNN seq2seq trained with attention 'none').")
    try:
        return names[-1 if layer is None else layer]
    except IndexError:
        raise PlaygroundError(f"Layer {layer} does not exist; this model has {len(names)} attention layer(s) "
                              f"(0..{len(names) - 1}).") from None


def attention(query: Query, rec: Recording, layer: int | None = None, head: int | None = None) -> Attribution:
    """Raw attention of one layer (None = last) and one head (None = mean over heads) -> [B,U]."""
    names = explaining_maps(query)
    a = rows(query, rec.maps[_layer_name(names, layer)])  # [B,H,U]
    if head is not None and not 0 <= head < a.shape[1]:
        raise PlaygroundError(f"Head {head} does not exist; this layer has {a.shape[1]} head(s) (0..{a.shape[1] - 1}).")
    values = a.mean(1) if head is None else a[:, head]
    label = "attention" if layer is None and head is None else f"attention_L{'last' if layer is None else layer}" + \
        ("" if head is None else f"_H{head}")
    return Attribution(label, values.detach(), signed=False)


def mean_attention(query: Query, rec: Recording) -> Attribution:
    """Attention averaged over every layer and head."""
    names = explaining_maps(query)
    values = torch.stack([rows(query, rec.maps[n]).mean(1) for n in names]).mean(0)
    return Attribution("attention_mean", values.detach(), signed=False)


def _self_layers(query: Query, rec: Recording) -> list[Tensor]:
    if query.explainer.through_cross_attention:
        raise PlaygroundError("internal: seq2seq rollout goes through the encoder maps")
    return [rec.maps[n] for n in explaining_maps(query)]


def rollout(query: Query, rec: Recording, residual: float = 0.5) -> Attribution:
    """Attention rollout read at each example's explaining row -> [B,U].

    Transformer seq2seq: head-mean cross-attention of the last decoder layer times the rollout
    of the encoder (a simplification: decoder self-attention is not rolled out).
    """
    if query.explainer.through_cross_attention:
        enc = query.explainer.input_self_maps(query.model)  # the encoder's self-attention
        cross = explaining_maps(query)
        if not enc:
            raise PlaygroundError("Rollout needs self-attention layers; the RNN seq2seq has one attention (use 'attention').")
        r_enc = attention_rollout([rec.maps[n] for n in enc], residual)  # [B,S,S]
        a = rows(query, rec.maps[cross[-1]]).mean(1)  # [B,S]
        values = (a[:, None, :] @ r_enc)[:, 0]
    else:
        r = attention_rollout(_self_layers(query, rec), residual)  # [B,T,T]
        values = rows(query, r)
        if query.explainer.cls_slot(query):
            values = values / values.sum(-1, keepdim=True).clamp_min(1e-12)  # renormalise without CLS
    return Attribution("rollout", values.detach().float(), signed=False)


def flow(query: Query, rec: Recording, residual: float = 0.5, max_tokens: int | None = None) -> Attribution:
    """Attention flow (max-flow) of each example -> [B,U]; capped sequence length (see propagation)."""
    query.explainer.check_attention(query, "flow")
    layers = _self_layers(query, rec)
    out = []
    for b in range(query.batch_size):
        q = query.explainer.query_row(query, b)
        f = attention_flow([a[b] for a in layers], q, residual, max_tokens or FLOW_MAX_TOKENS)  # type: ignore[arg-type]
        f = torch.as_tensor(f, dtype=torch.float32)
        if query.explainer.cls_slot(query):
            f = f[1:] / f[1:].sum().clamp_min(1e-12)  # the patches, renormalised without CLS
        out.append(f)
    return Attribution("flow", torch.stack(out).to(query.device), signed=False)


def value_vectors(module: nn.Module, values_in: Tensor) -> Tensor:
    """f_h(x_j) = (x_j W_V^h + b_V^h) W_O^h for every head and key: [B,K,D] -> [B,H,K,D].

    The RNN attention has no value/output projections: f(h_j) = h_j, one "head".
    """
    if isinstance(module, ScoredAttention):
        return values_in[:, None]  # [B,1,K,D]
    m: MultiHeadAttention = module  # type: ignore[assignment]
    D, H, hd = values_in.shape[-1], m.n_head, m.head_dim
    proj = m.kv_proj if m.cross else m.qkv
    start = D if m.cross else 2 * D
    w_v = proj.weight[start:start + D]  # [D,D]
    b_v = None if proj.bias is None else proj.bias[start:start + D]
    v = torch.nn.functional.linear(values_in, w_v, b_v)  # [B,K,D]
    v = v.view(v.shape[0], v.shape[1], H, hd).transpose(1, 2)  # [B,H,K,hd]
    w_o = m.out_proj.weight.view(D, H, hd).permute(1, 2, 0)  # [H,hd,D]
    return v @ w_o[None]  # [B,H,K,D]


def norm_weighted(query: Query, rec: Recording, layer: int | None = None, head: int | None = None) -> Attribution:
    """Kobayashi et al. 2020: ‖Σ_h α_h,qj f_h(x_j)‖ (one head: ‖α_qj f_h(x_j)‖) at the explaining row.

    ``rec`` must come from ``record(query, values=True)``.
    """
    names = explaining_maps(query)
    name = _layer_name(names, layer)
    if name not in rec.values_in:
        raise ValueError("norm-weighted attention needs record(query, values=True)")
    module = attention_modules(query.model)[name]
    with torch.no_grad():
        f = value_vectors(module, rec.values_in[name])  # [B,H,K,D]
        a = rows(query, rec.maps[name])  # [B,H,U]
        if query.explainer.cls_slot(query):
            f = f[:, :, 1:]  # drop the CLS key: the units are the patches
        query.explainer.check_attention(query, "norm")
        weighted = a[..., None] * f  # [B,H,U,D]
        values = weighted.sum(1).norm(dim=-1) if head is None else weighted[:, head].norm(dim=-1)  # [B,U]
    label = "norm" if layer is None and head is None else f"norm_L{'last' if layer is None else layer}" + \
        ("" if head is None else f"_H{head}")
    return Attribution(label, values.float(), signed=False)


def grad_relevancy(query: Query) -> Attribution:
    """Chefer et al. 2021 gradient-weighted relevancy (GPT and ViT) -> [B,U].

    Ā_l = mean_h (∇A_l ⊙ A_l)⁺, R ← R + Ā_l R from R = I, read at the explaining row.
    """
    query.explainer.check_attention(query, "relevancy")
    names = explaining_maps(query)
    owner = threading.get_ident()

    def needs_grad(module: nn.Module, args: tuple, output: Tensor) -> Tensor | None:
        if threading.get_ident() == owner and not output.requires_grad:
            return output.detach().requires_grad_(True)
        return None

    handle = query.layer.register_forward_hook(needs_grad)
    try:
        with no_cudnn():
            rec = record(query, keep_grad=True)
            maps = [rec.maps[n] for n in names]
            grads = torch.autograd.grad(rec.score.sum(), maps, allow_unused=True)  # type: ignore[union-attr]
    finally:
        handle.remove()
    grads = [torch.zeros_like(m) if g is None else g for m, g in zip(maps, grads)]
    r = relevancy([m.detach() for m in maps], grads)  # [B,T,T]
    values = rows(query, r)
    return Attribution("relevancy", values.detach().float(), signed=False)


def head_rows(query: Query, rec: Recording) -> tuple[Tensor, Tensor]:
    """Every layer's and head's explaining row and its entropy: ([B,L,H,U], [B,L,H] nats).

    The entropy is that of the whole attention row (for a CLS query the CLS key included).
    """
    names = explaining_maps(query)
    r = torch.stack([rows(query, rec.maps[n]) for n in names], dim=1)  # [B,L,H,U]
    if query.explainer.cls_slot(query):
        full = torch.stack([rec.maps[n][:, :, 0] for n in names], dim=1)  # [B,L,H,1+U]
    else:
        full = r
    return r.detach(), entropy(full.detach()).float()
