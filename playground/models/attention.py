"""Attention, one family of modules used by every model.

- :func:`attend`: scaled dot-product attention written the way lecture notes write it; the
  reference every faster path here is tested against.
- Score functions (query s, key h): additive (Bahdanau) e = v^T tanh(W [s; h]), dot s^T h,
  general s^T W h, scaled dot s^T h / sqrt(d) (scaling switchable off).
- :class:`ScoredAttention`: one query per call over a set of keys (RNN decoder attention).
- :class:`MultiHeadAttention`: self-attention (causal or bidirectional, padding masks, RoPE,
  ALiBi, KV cache) and cross-attention. Fast path ``F.scaled_dot_product_attention`` when
  nothing records, overrides or drops weights; explicit path (materialised weights) otherwise.

Reading and replacing weights: :func:`record_attention`, :func:`override_attention` (hooks.py).
Masks everywhere are bool with True = attend (a real key).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from playground.models.base import lookup
from playground.models.dropout import Dropout
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
    "rows_override", "uniform_override", "attend", "SCORES", "AdditiveScore", "DotScore", "GeneralScore",
    "ScaledDotScore", "UniformScore", "make_score", "masked_softmax", "scored_attend", "ScoredAttention",
    "MultiHeadAttention", "LayerKV", "KVCache", "WindowedKVCache", "causal_mask",
]


def attend(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, bias: Tensor | None = None,
           *, scale: float | None = None) -> tuple[Tensor, Tensor]:
    """Attention as the lecture notes write it: softmax(q k^T / sqrt(hd) + bias, masked) v.

    q [B,H,Tq,hd]; k, v [B,H,Tk,hd]; mask bool broadcastable to [B,H,Tq,Tk], True = may attend;
    bias float broadcastable to [B,H,Tq,Tk], added to the scores (e.g. ALiBi); scale replaces
    1/sqrt(hd). Returns (out [B,H,Tq,hd], weights [B,H,Tq,Tk]).
    """
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = (q @ k.transpose(-2, -1)) * scale  # [B,H,Tq,Tk]: how well query i matches key j
    if bias is not None:
        scores = scores + bias  # ALiBi: -slope * distance, a penalty for far keys
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))  # exp(-inf) = 0: masked keys get no weight
    weights = scores.softmax(dim=-1)  # [B,H,Tq,Tk], each row sums to 1
    weights = weights.nan_to_num(0.0)  # a query that may see no key at all: weights 0, not NaN
    return weights @ v, weights  # [B,H,Tq,hd]: the weighted average of the values


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


ScoreFactory = Callable[[int, int, int, bool], nn.Module]  # (query_dim, key_dim, attn_dim, scale)


def _same_sizes(kind: str, query_dim: int, key_dim: int) -> None:
    if query_dim != key_dim:
        raise ValueError(f"{kind} attention needs equal query and key sizes, got {query_dim} and {key_dim}")


def _dot(query_dim: int, key_dim: int, attn_dim: int, scale: bool) -> nn.Module:
    _same_sizes("dot", query_dim, key_dim)
    return DotScore()


def _scaled_dot(query_dim: int, key_dim: int, attn_dim: int, scale: bool) -> nn.Module:
    _same_sizes("scaled_dot", query_dim, key_dim)
    return ScaledDotScore(scale)


SCORE_FACTORIES: dict[str, ScoreFactory] = {
    "additive": lambda query_dim, key_dim, attn_dim, scale: AdditiveScore(query_dim, key_dim, attn_dim),
    "dot": _dot,
    "general": lambda query_dim, key_dim, attn_dim, scale: GeneralScore(query_dim, key_dim),
    "scaled_dot": _scaled_dot,
    "uniform": lambda query_dim, key_dim, attn_dim, scale: UniformScore(),
}
SCORES = tuple(SCORE_FACTORIES)


def make_score(kind: str, query_dim: int, key_dim: int, attn_dim: int | None = None,
               scale: bool = True) -> nn.Module:
    """Build a score module by name (one of SCORES)."""
    return lookup(SCORE_FACTORIES, kind, "attention score")(query_dim, key_dim, attn_dim or query_dim, scale)


def masked_softmax(scores: Tensor, mask: Tensor | None) -> Tensor:
    """Softmax over the last axis; masked entries (mask False) are exactly 0, an all-masked row is 0."""
    if mask is None:
        return scores.softmax(-1)
    return scores.masked_fill(~mask, float("-inf")).softmax(-1).masked_fill(~mask, 0.0)


def scored_attend(score: nn.Module, query: Tensor, keys: Tensor, values: Tensor,
                  mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """Attention with any score function: query [B,Q,Dq], keys [B,K,Dk], values [B,K,Dv]
    -> (context [B,Q,Dv], weights [B,Q,K])."""
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

    def ensure(self, k: Tensor, v: Tensor, slots: int, offset: int) -> tuple[Tensor, Tensor]:
        """The [B,H,slots,hd] buffers for keys/values like k, v [B,H,T,hd]: kept while batch size,
        dtype and device match, made anew at offset 0, refused mid-sequence otherwise."""
        B, H, _, hd = k.shape
        fits = self.k is not None and self.k.shape[0] == B and self.k.dtype == k.dtype and self.k.device == k.device
        if not fits:
            if offset:
                raise ValueError("KV cache was filled with another batch size, dtype or device; start a new cache")
            self.k = k.new_empty(B, H, slots, hd)
            self.v = v.new_empty(B, H, slots, hd)
        return self.k, self.v  # type: ignore[return-value]


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
        end = offset + k.shape[2]
        if end > self.max_length:
            raise ValueError(f"KV cache holds {self.max_length} positions; {end} requested (crop or rebuild the cache)")
        keys, values = self.layers[i].ensure(k, v, self.max_length, offset)
        keys[:, :, offset:end] = k
        values[:, :, offset:end] = v
        return keys[:, :, :end], values[:, :, :end]

    def crop(self, length: int) -> None:
        """Forget everything after the first ``length`` positions."""
        self.length = min(self.length, length)

    def nbytes(self) -> int:
        """Bytes its key/value buffers take now (a windowed cache: W positions per layer)."""
        return sum(t.numel() * t.element_size() for layer in self.layers for t in (layer.k, layer.v) if t is not None)

    def reorder(self, index: Tensor) -> None:
        """Reorder the batch (beam search): row b becomes old row index[b]."""
        for layer in self.layers:
            if layer.k is not None:
                layer.k = layer.k.index_select(0, index)
                layer.v = layer.v.index_select(0, index)  # type: ignore[union-attr]


class WindowedKVCache(KVCache):
    """A KV cache for sliding-window attention that keeps only the last ``window`` positions of
    each layer: a ring buffer [B,H,W,hd] where position p lives in slot p % W, so its memory is W
    positions however long the sequence grows (``max_length`` only bounds the positions).

    One new token (decoding) is written into its slot in place and attends to the whole ring,
    whose slots are not in position order: :meth:`key_positions` says which position each key
    holds (the causal band mask and ALiBi's distances need it; RoPE keys carry their rotation).
    Several new tokens (a prompt) attend to the kept keys in order followed by their own, and
    the last W of those are written back into the ring.
    """

    def __init__(self, n_layers: int, window: int, max_length: int) -> None:
        if window < 1:
            raise ValueError(f"a windowed KV cache needs a window of at least 1 position, got {window}")
        super().__init__(n_layers, max_length)
        self.window = window

    def append(self, i: int, k: Tensor, v: Tensor, offset: int) -> tuple[Tensor, Tensor]:
        """Write k, v [B,H,T,hd] of layer i at positions offset..offset+T-1 into the ring; return
        the keys/values those queries can see ([B,H,K,hd], K <= W - 1 + T; see key_positions)."""
        T = k.shape[2]
        end, W = offset + T, self.window
        if end > self.max_length:
            raise ValueError(f"KV cache allows {self.max_length} positions; {end} requested (start a new cache)")
        ring_k, ring_v = self.layers[i].ensure(k, v, W, offset)
        if T == 1:  # decoding: one slot overwritten in place, the ring is the key set
            ring_k[:, :, offset % W] = k[:, :, 0]
            ring_v[:, :, offset % W] = v[:, :, 0]
            n = min(end, W)
            return ring_k[:, :, :n], ring_v[:, :, :n]
        lo = max(0, offset - (W - 1))  # the oldest position the first new query can see
        kept = torch.arange(lo, offset, device=k.device) % W  # [offset-lo] slots in position order
        keys = torch.cat([ring_k[:, :, kept], k], dim=2)  # [B,H,end-lo,hd]
        values = torch.cat([ring_v[:, :, kept], v], dim=2)
        last = torch.arange(max(lo, end - W), end, device=k.device)  # [<= W] positions to keep
        ring_k[:, :, last % W] = keys[:, :, last - lo]
        ring_v[:, :, last % W] = values[:, :, last - lo]
        return keys, values

    def key_positions(self, offset: int, T: int, device: torch.device) -> Tensor:
        """Absolute position [K] of each key :meth:`append` returned for T new tokens at ``offset``."""
        end, W = offset + T, self.window
        if T > 1:
            return torch.arange(max(0, offset - (W - 1)), end, device=device)
        slots = torch.arange(min(end, W), device=device)  # [K]
        if end <= W:
            return slots  # not wrapped yet: slot s holds position s
        return end - W + (slots - (end - W)) % W  # slot s holds the one position p in [end-W, end) with p % W == s

    def crop(self, length: int) -> None:
        """Forget everything (length 0); a ring cannot keep a prefix it may have overwritten."""
        if 0 < length < self.length:
            raise ValueError("a windowed KV cache can only be emptied (crop(0)), not cut to a prefix")
        self.length = min(self.length, length)


def causal_mask(T: int, K: int, offset: int, device: torch.device, window: int = 0,
                key_pos: Tensor | None = None) -> Tensor:
    """Bool [T,K]: query i (absolute position offset + i) may attend to keys 0 .. offset + i;
    with ``window`` W > 0 only to the last W of them (itself and the W - 1 before: sliding window).
    ``key_pos`` [K]: the position each key holds (a windowed cache's ring), else key j is position j."""
    q_pos = torch.arange(offset, offset + T, device=device)[:, None]  # [T,1]
    k_pos = torch.arange(K, device=device)[None, :] if key_pos is None else key_pos[None, :]  # [1,K]
    mask = k_pos <= q_pos  # [T,K]
    return mask & (k_pos > q_pos - window) if window else mask


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
    ``dropout`` drops attention weights in training (``attn_drop``, the run's generator).

    ``n_kv_heads`` (self-attention; 0 = n_head): grouped-query attention (Ainslie et al. 2023),
    ``qkv`` is [D + 2 n_kv hd, D], the cache keeps n_kv_heads key/value heads and query head h
    reads key/value head h // (n_head / n_kv_heads); 1 is multi-query attention (Shazeer 2019).
    ``window`` W > 0 (causal only): each query sees itself and the W - 1 keys before it.

    forward = project -> positions -> cache -> mask -> attend -> merge heads; :meth:`_kernel`
    is the one place that picks how (SDPA's fused paths, or explicit as in :func:`attend`).
    """

    def __init__(self, d_model: int, n_head: int, *, causal: bool = False, cross: bool = False,
                 bias: bool = True, dropout: float = 0.0, scale: bool = True,
                 rotary: Rotary | None = None, alibi: bool = False, uniform: bool = False,
                 qk_norm: bool = False, n_kv_heads: int = 0, window: int = 0) -> None:
        super().__init__()
        if d_model % n_head:
            raise ValueError(f"d_model {d_model} is not divisible by n_head {n_head}")
        self.n_head, self.head_dim = n_head, d_model // n_head
        self.n_kv_heads = n_kv_heads or n_head
        if n_head % self.n_kv_heads or cross and self.n_kv_heads != n_head:
            raise ValueError(f"n_kv_heads {n_kv_heads} must divide n_head {n_head} (self-attention only)")
        if window < 0 or window and not causal:
            raise ValueError(f"window {window}: a sliding window needs causal self-attention and W >= 0")
        self.window = window
        self.causal, self.cross, self.dropout = causal, cross, dropout
        self.scale = 1.0 / math.sqrt(self.head_dim) if scale else 1.0
        if cross:
            self.q_proj = nn.Linear(d_model, d_model, bias=bias)
            self.kv_proj = nn.Linear(d_model, 2 * d_model, bias=bias)
        else:
            self.qkv = nn.Linear(d_model, d_model + 2 * self.n_kv_heads * self.head_dim, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)
        self.attn_drop = Dropout(dropout)
        self.rotary = None if cross else rotary  # positions do not apply across sequences
        # uniform: every query attends equally to the keys it may see (Wiegreffe & Pinter's
        # frozen-uniform baseline); done by zeroing the queries, so both paths stay exact.
        self.uniform = uniform
        self.qk_norm = qk_norm
        self.alibi = alibi and not cross and not uniform
        if self.alibi:
            self.register_buffer("alibi_slopes", alibi_slopes(n_head), persistent=False)

    def forward(self, x: Tensor, context: Tensor | None = None, key_mask: Tensor | None = None,
                cache: KVCache | None = None, layer: int = 0, offset: int = 0,
                need_weights: bool = False) -> tuple[Tensor, Tensor | None]:
        """x [B,T,D] -> (out [B,T,D], weights [B,H,T,K] if need_weights else None).

        context [B,S,D]: memory for cross-attention. key_mask [B,K]: True = real key.
        cache/layer: KV cache and this module's slot in it; offset: absolute position of x[:,0]
        (= cache length when decoding incrementally).
        """
        q, k, v = self._project(x, context, cache, layer)  # q [B,H,T,hd]; k, v [B,Hkv,T or S,hd]
        q, k = self._positions(q, k, offset)  # RoPE rotates q and k by their positions
        k, v = self._cached(k, v, cache, layer, offset)  # all keys/values so far [B,Hkv,K,hd]
        key_pos = self._key_positions(cache, offset, q)  # [K] when a windowed ring holds them, else None
        k, v = self._grouped(k), self._grouped(v)  # [B,H,K,hd]: each query head's key/value head
        if self.uniform:
            q = torch.zeros_like(q)  # all scores 0 -> softmax uniform over the allowed keys
        explicit, hooked, is_causal = self._kernel(q, k, key_mask, need_weights)  # device tuning, one place
        mask, bias = self._mask(q, k, key_mask, offset, causal=self.causal and not is_causal, key_pos=key_pos)
        y, weights = self._attend(q, k, v, mask, bias, offset, explicit, hooked, is_causal)  # [B,H,T,hd]
        return self._merge_heads(y), weights  # [B,T,D]

    # 1. project -------------------------------------------------------------------------

    def _heads(self, t: Tensor, n: int, heads: int = 0) -> Tensor:
        """[B,T,n*heads*hd] -> [n,B,heads,T,hd] (heads: n_head when 0)."""
        B, T, _ = t.shape
        return t.view(B, T, n, heads or self.n_head, self.head_dim).permute(2, 0, 3, 1, 4)

    def _norm_qk(self, t: Tensor) -> Tensor:
        """QK-norm: each head's vectors [.., hd] scaled to unit RMS (identity when off)."""
        if not self.qk_norm:
            return t
        return t * torch.rsqrt(t.square().mean(-1, keepdim=True) + 1e-6)

    def _project(self, x: Tensor, context: Tensor | None, cache: KVCache | None,
                 layer: int) -> tuple[Tensor, Tensor, Tensor]:
        """Queries from x; keys and values from x (self) or from the memory (cross), where a
        cross-attention cache slot keeps the memory's projection for the whole sequence."""
        if not self.cross and self.n_kv_heads == self.n_head:
            q, k, v = self._heads(self.qkv(x), 3)  # [B,H,T,hd] each
            return self._norm_qk(q), self._norm_qk(k), v
        if not self.cross:  # grouped-query: fewer key/value heads than query heads
            kv_dim = self.n_kv_heads * self.head_dim
            q, kv = self.qkv(x).split([self.n_head * self.head_dim, 2 * kv_dim], dim=-1)
            k, v = self._heads(kv, 2, self.n_kv_heads)  # [B,Hkv,T,hd] each
            return self._norm_qk(self._heads(q, 1)[0]), self._norm_qk(k), v
        q = self._norm_qk(self._heads(self.q_proj(x), 1)[0])  # [B,H,T,hd]
        slot = cache.layers[layer] if cache is not None else None
        if slot is not None and slot.k is not None:
            return q, slot.k, slot.v  # type: ignore[return-value]
        k, v = self._heads(self.kv_proj(context), 2)  # [B,H,S,hd] each
        k = self._norm_qk(k)
        if slot is not None:
            slot.k, slot.v = k, v
        return q, k, v

    # 2. positions -----------------------------------------------------------------------

    def _positions(self, q: Tensor, k: Tensor, offset: int) -> tuple[Tensor, Tensor]:
        """RoPE: rotate q and k [B,H,T,hd] as positions offset .. offset + T - 1 (else as is)."""
        if self.rotary is None:
            return q, k
        return self.rotary(q, offset), self.rotary(k, offset)

    # 3. cache ---------------------------------------------------------------------------

    def _cached(self, k: Tensor, v: Tensor, cache: KVCache | None, layer: int,
                offset: int) -> tuple[Tensor, Tensor]:
        """Self-attention with a cache: append k, v at ``offset`` and return every key/value so
        far [B,H,offset+T,hd]. Cross-attention's cache was used in :meth:`_project`."""
        if cache is None or self.cross:
            return k, v
        return cache.append(layer, k, v, offset)

    def _key_positions(self, cache: KVCache | None, offset: int, q: Tensor) -> Tensor | None:
        """Positions [K] of the keys a windowed cache returned (its ring is not in position
        order); None when key j is position j (no cache, a full cache, cross-attention)."""
        if isinstance(cache, WindowedKVCache) and not self.cross:
            return cache.key_positions(offset, q.shape[2], q.device)
        return None

    def _grouped(self, t: Tensor) -> Tensor:
        """Grouped-query attention: key/value heads [B,Hkv,K,hd] repeated for their query heads
        -> [B,H,K,hd] (query head h reads head h // group); as is when Hkv == H."""
        group = self.n_head // t.shape[1]
        return t if group == 1 else t.repeat_interleave(group, dim=1)

    # 4. mask ----------------------------------------------------------------------------

    def _mask(self, q: Tensor, k: Tensor, key_mask: Tensor | None, offset: int,
              causal: bool, key_pos: Tensor | None = None) -> tuple[Tensor | None, Tensor | None]:
        """Who may attend to whom: (mask bool [T,K] or [B,1,T|1,K], True = may, or None: every
        key; ALiBi's additive bias [H,T,K] or None). ``causal=False`` when the kernel applies
        causality itself (SDPA's is_causal). ``key_pos`` [K]: each key's position (else j)."""
        T, K = q.shape[2], k.shape[2]
        windowed = causal and self.window and offset + T > self.window  # some key falls outside
        mask = (causal_mask(T, K, offset, q.device, self.window, key_pos)
                if causal and (T > 1 or windowed) else None)  # [T,K]
        if key_mask is not None:
            km = key_mask[:, None, None, :]  # [B,1,1,K]
            mask = km if mask is None else mask & km  # [B,1,T,K]
        bias = None
        if self.alibi:
            k_pos = torch.arange(K, device=q.device) if key_pos is None else key_pos  # [K]
            bias = alibi_bias(self.alibi_slopes, torch.arange(offset, offset + T, device=q.device),
                              k_pos, self.causal).to(q.dtype)  # [H,T,K]
        return mask, bias

    # 5. attend --------------------------------------------------------------------------

    def _kernel(self, q: Tensor, k: Tensor, key_mask: Tensor | None,
                need_weights: bool) -> tuple[bool, bool, bool]:
        """The kernel choice, all in one place: (explicit, hooked, is_causal).

        - explicit (what :func:`attend` computes, weights materialised) when the weights are
          asked for, recorded or overridden (hooks.py), or dropped in training with the
          module's own generator (SDPA's dropout_p draws from the default one; scoped dropout
          points that at the run's stream and keeps the kernel);
        - else SDPA; plain causal self-attention (no padding, no ALiBi, T == K) passes
          ``is_causal`` on GPUs (flash kernels) and a boolean mask on CPU, where that is
          faster (IS_CAUSAL_DEVICE_TYPES).
        """
        hooked = needs_explicit(self)  # a record/override context is open for this module
        # dropping weights with the module's own generator needs them materialised; scoped
        # dropout (models/dropout.py) drops them inside SDPA's kernel instead
        own_draws = self.training and self.attn_drop.p > 0 and not self.attn_drop.scoped
        explicit = need_weights or own_draws or hooked
        T = q.shape[2]
        is_causal = (not explicit and self.causal and 1 < T == k.shape[2] and key_mask is None
                     and not self.alibi and not self.window and q.device.type in IS_CAUSAL_DEVICE_TYPES)
        return explicit, hooked, is_causal

    def _attend(self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, bias: Tensor | None,
                offset: int, explicit: bool, hooked: bool, is_causal: bool) -> tuple[Tensor, Tensor | None]:
        """q [B,H,T,hd], k, v [B,H,K,hd] -> (y [B,H,T,hd], weights [B,H,T,K] if explicit).

        Explicit: :func:`attend`'s steps plus overrides/recording and weight dropout between
        softmax and the values. SDPA: ALiBi's bias goes in as a float mask, -inf where
        ``mask`` is False.
        """
        if explicit:
            scores = (q @ k.transpose(-2, -1)) * self.scale  # [B,H,T,K]
            if bias is not None:
                scores = scores + bias
            weights = masked_softmax(scores, mask)  # [B,H,T,K]
            if hooked:
                weights = process_weights(self, weights, offset)  # overrides, then recording
            return self.attn_drop(weights) @ v, weights
        attn_mask = mask
        if bias is not None:
            attn_mask = bias if mask is None else bias.masked_fill(~mask, float("-inf"))
        drop = self.attn_drop.p if self.training and self.attn_drop.scoped else 0.0
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=drop, is_causal=is_causal,
                                           scale=self.scale)
        return y, None

    # 6. merge heads ---------------------------------------------------------------------

    def _merge_heads(self, y: Tensor) -> Tensor:
        """[B,H,T,hd] -> heads side by side [B,T,D] -> out_proj [B,T,D]."""
        B, H, T, hd = y.shape
        return self.out_proj(y.transpose(1, 2).reshape(B, T, H * hd))
