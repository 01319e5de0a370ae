"""Attention, one family of modules used by every model.

- Score functions (query s, key h): additive (Bahdanau) e = v^T tanh(W [s; h]), dot s^T h,
  general s^T W h, scaled dot s^T h / sqrt(d) (scaling switchable off).
- :class:`ScoredAttention`: one query per call over a set of keys (RNN decoder attention).
- :class:`MultiHeadAttention`: self-attention (causal or bidirectional, padding masks, RoPE,
  ALiBi, KV cache) and cross-attention. Fast path ``F.scaled_dot_product_attention`` when
  nothing records or overrides; explicit path (materialised weights) otherwise.

Reading and replacing weights: :func:`record_attention`, :func:`override_attention` (hooks.py).
Masks everywhere are bool with True = attend (a real key).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from playground.models.hooks import (  # re-exported: the public API lives here
    AttentionMaps,
    NamedAttention,
    OverrideFn,
    assign_attention_names,
    attention_modules,
    logits_override,
    needs_explicit,
    override_attention,
    permute_override,
    process_weights,
    record_attention,
    rows_override,
    uniform_override,
)
from playground.models.positional import Rotary, alibi_bias, alibi_slopes

__all__ = [
    "AttentionMaps", "NamedAttention", "OverrideFn", "assign_attention_names", "attention_modules",
    "logits_override", "override_attention", "permute_override", "record_attention",
    "rows_override", "uniform_override", "SCORES", "AdditiveScore", "DotScore", "GeneralScore",
    "ScaledDotScore", "make_score", "masked_softmax", "attend", "ScoredAttention",
    "MultiHeadAttention", "LayerKV", "KVCache",
]

# ----------------------------------------------------------------------------------------
# Score functions: forward(query [B,Q,Dq], prepared keys) -> scores [B,Q,K].
# prepare(keys [B,K,Dk]) does the per-sequence work once (Bahdanau's W_h h_j trick).


class DotScore(nn.Module):
    """Luong dot: e_ij = s_i^T h_j (needs Dq == Dk)."""

    def prepare(self, keys: Tensor) -> Tensor:
        return keys

    def forward(self, query: Tensor, keys: Tensor) -> Tensor:
        return query @ keys.transpose(-2, -1)  # [B,Q,K]


class ScaledDotScore(DotScore):
    """Vaswani scaled dot: e_ij = s_i^T h_j / sqrt(d_k); ``scale=False`` drops the sqrt(d_k)."""

    def __init__(self, scale: bool = True) -> None:
        super().__init__()
        self.scale = scale

    def forward(self, query: Tensor, keys: Tensor) -> Tensor:
        scores = query @ keys.transpose(-2, -1)  # [B,Q,K]
        return scores / math.sqrt(query.shape[-1]) if self.scale else scores


class GeneralScore(DotScore):
    """Luong general: e_ij = s_i^T W h_j, W [Dq, Dk]."""

    def __init__(self, query_dim: int, key_dim: int) -> None:
        super().__init__()
        self.W = nn.Linear(key_dim, query_dim, bias=False)

    def prepare(self, keys: Tensor) -> Tensor:
        return self.W(keys)  # [B,K,Dq]


class AdditiveScore(nn.Module):
    """Bahdanau additive: e_ij = v^T tanh(W [s_i; h_j]), W [A, Dq + Dk], v [A].

    W acts on the concatenation; it is split as W = [W_s, W_h] so W_h h_j is computed once
    per sequence (``prepare``) and only W_s s_i per query.
    """

    def __init__(self, query_dim: int, key_dim: int, attn_dim: int) -> None:
        super().__init__()
        self.query_dim = query_dim
        self.W = nn.Linear(query_dim + key_dim, attn_dim, bias=False)
        self.v = nn.Linear(attn_dim, 1, bias=False)

    def prepare(self, keys: Tensor) -> Tensor:
        return keys @ self.W.weight[:, self.query_dim :].T  # [B,K,A]

    def forward(self, query: Tensor, keys: Tensor) -> Tensor:
        q = query @ self.W.weight[:, : self.query_dim].T  # [B,Q,A]
        hidden = torch.tanh(q[:, :, None, :] + keys[:, None, :, :])  # [B,Q,K,A]
        return self.v(hidden).squeeze(-1)  # [B,Q,K]


class UniformScore(nn.Module):
    """Frozen uniform attention: e_ij = 0 for every key, so alpha is uniform over real keys."""

    def prepare(self, keys: Tensor) -> Tensor:
        return keys

    def forward(self, query: Tensor, keys: Tensor) -> Tensor:
        return query.new_zeros(query.shape[0], query.shape[1], keys.shape[1])  # [B,Q,K]


SCORES = ("additive", "dot", "general", "scaled_dot", "uniform")


def make_score(kind: str, query_dim: int, key_dim: int, attn_dim: int | None = None,
               scale: bool = True) -> nn.Module:
    """Build a score module by name (one of SCORES)."""
    if kind == "additive":
        return AdditiveScore(query_dim, key_dim, attn_dim or query_dim)
    if kind == "general":
        return GeneralScore(query_dim, key_dim)
    if kind == "uniform":
        return UniformScore()
    if kind in ("dot", "scaled_dot"):
        if query_dim != key_dim:
            raise ValueError(f"{kind} attention needs equal query and key sizes, got {query_dim} and {key_dim}")
        return ScaledDotScore(scale) if kind == "scaled_dot" else DotScore()
    raise ValueError(f"unknown attention score {kind!r}; choose one of {SCORES}")


def masked_softmax(scores: Tensor, mask: Tensor | None) -> Tensor:
    """Softmax over the last axis; masked entries (mask False) are exactly 0, an all-masked row is 0."""
    if mask is None:
        return scores.softmax(-1)
    return scores.masked_fill(~mask, float("-inf")).softmax(-1).masked_fill(~mask, 0.0)


def attend(score: nn.Module, query: Tensor, keys: Tensor, values: Tensor,
           mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """Plain attention: query [B,Q,Dq], keys [B,K,Dk], values [B,K,Dv] -> (context [B,Q,Dv], weights [B,Q,K])."""
    weights = masked_softmax(score(query, score.prepare(keys)), mask)  # [B,Q,K]
    return weights @ values, weights


class ScoredAttention(NamedAttention):
    """Single-head attention of one decoder state over encoder states (RNN seq2seq).

    Recorded/overridden as [B, 1, 1, K] per call; ``step`` is the query's absolute index.
    """

    def __init__(self, score: nn.Module) -> None:
        super().__init__()
        self.score = score

    def prepare(self, keys: Tensor) -> Tensor:
        return self.score.prepare(keys)

    def forward(self, query: Tensor, keys: Tensor, values: Tensor, key_mask: Tensor | None,
                step: int = 0) -> tuple[Tensor, Tensor]:
        """query [B,Dq], prepared keys, values [B,K,Dv], key_mask [B,K] -> (context [B,Dv], alpha [B,K])."""
        scores = self.score(query[:, None, :], keys)  # [B,1,K]
        alpha = masked_softmax(scores, None if key_mask is None else key_mask[:, None, :])
        if needs_explicit(self):
            alpha = process_weights(self, alpha[:, None], step)[:, 0]  # via [B,1,1,K]
        context = (alpha @ values)[:, 0]  # [B,Dv]
        return context, alpha[:, 0]


# ----------------------------------------------------------------------------------------
# KV cache: preallocated buffers written in place, read through views (no copies per step).


class LayerKV:
    """Keys and values of one attention module. Self-attention: [B,H,T_max,hd] buffers filled
    up to the cache length; cross-attention: the projected memory, computed once."""

    __slots__ = ("k", "v")

    def __init__(self) -> None:
        self.k: Tensor | None = None
        self.v: Tensor | None = None


class KVCache:
    """Per-layer keys/values for incremental decoding; ``length`` tokens are cached.

    The model advances ``length`` after each forward. For inference (no backward through it).
    """

    def __init__(self, n_layers: int, max_length: int) -> None:
        self.max_length = max_length
        self.length = 0
        self.layers = [LayerKV() for _ in range(n_layers)]

    def append(self, i: int, k: Tensor, v: Tensor, offset: int) -> tuple[Tensor, Tensor]:
        """Write k, v [B,H,T,hd] of layer i at ``offset``; return views of all keys/values so far."""
        layer = self.layers[i]
        B, H, T, hd = k.shape
        end = offset + T
        if end > self.max_length:
            raise ValueError(f"KV cache holds {self.max_length} positions; {end} requested (crop or rebuild the cache)")
        fits = layer.k is not None and layer.k.shape[0] == B and layer.k.dtype == k.dtype and layer.k.device == k.device
        if not fits:
            if offset:
                raise ValueError("KV cache was filled with another batch size, dtype or device; start a new cache")
            layer.k = k.new_empty(B, H, self.max_length, hd)
            layer.v = v.new_empty(B, H, self.max_length, hd)
        layer.k[:, :, offset:end] = k
        layer.v[:, :, offset:end] = v
        return layer.k[:, :, :end], layer.v[:, :, :end]  # type: ignore[index]

    def crop(self, length: int) -> None:
        """Forget everything after the first ``length`` positions."""
        self.length = min(self.length, length)

    def reorder(self, index: Tensor) -> None:
        """Reorder the batch (beam search): row b becomes old row index[b]."""
        for layer in self.layers:
            if layer.k is not None:
                layer.k = layer.k.index_select(0, index)
                layer.v = layer.v.index_select(0, index)  # type: ignore[union-attr]


# Device types where causal self-attention calls SDPA with is_causal=True (flash kernels on
# GPUs). On CPU, torch 2.13's SDPA is faster given an explicit boolean [T,K] mask: fwd+bwd at
# B 12, H 4, T 64, hd 32 took 0.88 ms with the mask vs 1.24 ms with is_causal.
IS_CAUSAL_DEVICE_TYPES = frozenset({"cuda", "mps", "xpu"})


class MultiHeadAttention(NamedAttention):
    """Multi-head scaled-dot-product attention, self (causal or not) or cross.

    Self-attention projects q, k, v with one fused ``qkv`` Linear [3D, D] (q, k, v in that
    order, heads contiguous); cross-attention has ``q_proj`` and ``kv_proj`` [2D, D]. Output
    ``out_proj``. ``scale=False`` drops the 1/sqrt(d_k) factor (the sqrt(d_k) experiment);
    ``uniform=True`` freezes the weights uniform over the visible keys. ``qk_norm=True``
    RMS-normalises each head's queries and keys (no gain) before RoPE and the dot product, so
    the scores stay bounded whatever the projections' scale (QK-norm, Dehghani et al. 2023).
    """

    def __init__(self, d_model: int, n_head: int, *, causal: bool = False, cross: bool = False,
                 bias: bool = True, dropout: float = 0.0, scale: bool = True,
                 rotary: Rotary | None = None, alibi: bool = False, uniform: bool = False,
                 qk_norm: bool = False) -> None:
        super().__init__()
        if d_model % n_head:
            raise ValueError(f"d_model {d_model} is not divisible by n_head {n_head}")
        self.n_head, self.head_dim = n_head, d_model // n_head
        self.causal, self.cross, self.dropout = causal, cross, dropout
        self.scale = 1.0 / math.sqrt(self.head_dim) if scale else 1.0
        if cross:
            self.q_proj = nn.Linear(d_model, d_model, bias=bias)
            self.kv_proj = nn.Linear(d_model, 2 * d_model, bias=bias)
        else:
            self.qkv = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)
        self.rotary = None if cross else rotary  # positions do not apply across sequences
        # uniform: every query attends equally to the keys it may see (Wiegreffe & Pinter's
        # frozen-uniform baseline); done by zeroing the queries, so both paths stay exact.
        self.uniform = uniform
        self.qk_norm = qk_norm
        self.alibi = alibi and not cross and not uniform
        if self.alibi:
            self.register_buffer("alibi_slopes", alibi_slopes(n_head), persistent=False)

    def _norm_qk(self, t: Tensor) -> Tensor:
        """QK-norm: each head's vectors [.., hd] scaled to unit RMS (identity when off)."""
        if not self.qk_norm:
            return t
        return t * torch.rsqrt(t.square().mean(-1, keepdim=True) + 1e-6)

    def _heads(self, t: Tensor, n: int) -> Tensor:
        """[B,T,n*D] -> [n,B,H,T,hd]."""
        B, T, _ = t.shape
        return t.view(B, T, n, self.n_head, self.head_dim).permute(2, 0, 3, 1, 4)

    def forward(self, x: Tensor, context: Tensor | None = None, key_mask: Tensor | None = None,
                cache: KVCache | None = None, layer: int = 0, offset: int = 0,
                need_weights: bool = False) -> tuple[Tensor, Tensor | None]:
        """x [B,T,D] -> (out [B,T,D], weights [B,H,T,K] if need_weights else None).

        context [B,S,D]: memory for cross-attention. key_mask [B,K]: True = real key.
        cache/layer: KV cache and this module's slot in it; offset: absolute position of x[:,0]
        (= cache length when decoding incrementally).
        """
        B, T, D = x.shape
        if self.cross:
            q = self._norm_qk(self._heads(self.q_proj(x), 1)[0])  # [B,H,T,hd]
            slot = cache.layers[layer] if cache is not None else None
            if slot is not None and slot.k is not None:
                k, v = slot.k, slot.v  # memory projected once per sequence
            else:
                k, v = self._heads(self.kv_proj(context), 2)  # [B,H,S,hd] each
                k = self._norm_qk(k)
                if slot is not None:
                    slot.k, slot.v = k, v
        else:
            q, k, v = self._heads(self.qkv(x), 3)  # [B,H,T,hd] each
            q, k = self._norm_qk(q), self._norm_qk(k)
            if self.rotary is not None:
                q, k = self.rotary(q, offset), self.rotary(k, offset)
            if cache is not None:
                k, v = cache.append(layer, k, v, offset)  # [B,H,offset+T,hd]
        if self.uniform:
            q = torch.zeros_like(q)  # all scores 0 -> softmax uniform over the allowed keys
        K = k.shape[2]

        explicit = need_weights or needs_explicit(self)
        # plain causal self-attention on the fast path: SDPA's is_causal, no mask tensor, where
        # that is the fast kernel (IS_CAUSAL_DEVICE_TYPES); elsewhere the [T,K] mask built below
        use_is_causal = (not explicit and self.causal and T == K and T > 1
                         and x.device.type in IS_CAUSAL_DEVICE_TYPES and key_mask is None and not self.alibi)
        # mask [.., T, K] bool (True = attend), bias [H,T,K] float (ALiBi)
        mask = bias = None
        if self.causal and T > 1 and not use_is_causal:
            q_pos = torch.arange(offset, offset + T, device=x.device)
            mask = torch.arange(K, device=x.device)[None, :] <= q_pos[:, None]  # [T,K]
        if key_mask is not None:
            km = key_mask[:, None, None, :]  # [B,1,1,K]
            mask = km if mask is None else mask & km
        if self.alibi:
            bias = alibi_bias(self.alibi_slopes, torch.arange(offset, offset + T, device=x.device),
                              torch.arange(K, device=x.device), self.causal).to(q.dtype)

        p = self.dropout if self.training else 0.0
        if explicit:
            scores = (q @ k.transpose(-2, -1)) * self.scale  # [B,H,T,K]
            if bias is not None:
                scores = scores + bias
            weights = masked_softmax(scores, mask)  # [B,H,T,K]
            weights = process_weights(self, weights, offset)
            y = F.dropout(weights, p, self.training) @ v  # [B,H,T,hd]
        else:
            weights = None
            attn_mask = mask
            if bias is not None:
                attn_mask = bias if mask is None else bias.masked_fill(~mask, float("-inf"))
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=p,
                                               is_causal=use_is_causal, scale=self.scale)
        y = y.transpose(1, 2).reshape(B, T, D)  # [B,T,D]
        return self.out_proj(y), weights
