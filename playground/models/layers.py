"""Transformer building blocks selectable by config: LayerNorm / RMSNorm, pre-LN / post-LN,
FFN ReLU / ReLU² / GELU / SwiGLU, dropout on attention weights and residual branches."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from playground.errors import ConfigError
from playground.models.attention import KVCache, MultiHeadAttention
from playground.models.base import lookup
from playground.models.dropout import Dropout
from playground.models.positional import Positions, Rotary

NORM_LAYERS: dict[str, Callable[[int, bool], nn.Module]] = {
    "layernorm": lambda d_model, bias: nn.LayerNorm(d_model, eps=1e-5, bias=bias),
    "rmsnorm": lambda d_model, bias: nn.RMSNorm(d_model, eps=1e-6),  # no bias to have
}
NORMS = tuple(NORM_LAYERS)
NORM_PLACEMENTS = ("pre", "post")


def make_norm(kind: str, d_model: int, bias: bool = True, eps: float = 0.0) -> nn.Module:
    """LayerNorm (eps 1e-5, optional bias) or RMSNorm (eps 1e-6); ``eps`` > 0 replaces the
    default (an imported model's own, e.g. BERT's and ViT's 1e-12)."""
    layer = lookup(NORM_LAYERS, kind, "norm")(d_model, bias)
    if eps > 0:
        layer.eps = eps
    return layer


# FFN activations act on fc's output h [B,T,F]; a gated unit's fc gives [gate, up] ([B,T,2F]).


def _gelu_tanh(h: Tensor) -> Tensor:
    return F.gelu(h, approximate="tanh")


def _relu2(h: Tensor) -> Tensor:
    return F.relu(h).square()


def _swiglu(h: Tensor) -> Tensor:
    gate, up = h.chunk(2, dim=-1)
    return F.silu(gate) * up


FFN_ACTIVATIONS: dict[str, tuple[Callable[[Tensor], Tensor], int]] = {  # name -> (activation, fc width / d_ff)
    "gelu": (_gelu_tanh, 1),
    "gelu_exact": (F.gelu, 1),
    "relu": (F.relu, 1),
    "relu2": (_relu2, 1),
    "swiglu": (_swiglu, 2),
}
FFNS = tuple(FFN_ACTIVATIONS)


class FeedForward(nn.Module):
    """Position-wise FFN: proj(act(fc(x))). ``gelu`` is the tanh approximation (GPT-2's
    gelu_new), ``gelu_exact`` the erf form, ``relu2`` relu(x)² (So et al. 2021, "Primer"); ``swiglu``: fc gives
    [gate, up], act = silu(gate) * up."""

    def __init__(self, d_model: int, d_ff: int, kind: str = "gelu", bias: bool = True) -> None:
        super().__init__()
        self.kind = kind
        self.act, width = lookup(FFN_ACTIVATIONS, kind, "ffn")
        self.fc = nn.Linear(d_model, width * d_ff, bias=bias)
        self.proj = nn.Linear(d_ff, d_model, bias=bias)

    def forward(self, x: Tensor) -> Tensor:
        return self.proj(self.act(self.fc(x)))  # [B,T,F] (swiglu: [B,T,2F]) inside


class MoEFeedForward(nn.Module):
    """Mixture-of-experts FFN (Shazeer et al. 2017; Switch, Fedus et al. 2022): ``n_experts``
    FeedForwards and a ``router`` Linear [E, D]; each token goes to its ``top_k`` experts, whose
    outputs are mixed with a softmax over the chosen experts' router scores.

    After each forward: ``load`` [E], the share of routing slots (tokens x top_k) each expert got,
    ``choice`` [B,T,k] / ``gate`` [B,T,k] (detached, for the views) and, in training,
    ``aux_loss``: the load-balancing loss E * sum_e f_e P_e (f_e: that share, P_e: the mean router
    probability of e), 1 at a perfectly uniform load.
    """

    def __init__(self, d_model: int, d_ff: int, kind: str = "gelu", bias: bool = True,
                 n_experts: int = 4, top_k: int = 2) -> None:
        super().__init__()
        if not 1 <= top_k <= n_experts:
            raise ValueError(f"top_k {top_k} must be between 1 and n_experts {n_experts}")
        self.top_k = top_k
        self.router = nn.Linear(d_model, n_experts, bias=False)
        self.experts = nn.ModuleList(FeedForward(d_model, d_ff, kind, bias) for _ in range(n_experts))
        self.aux_loss: Tensor | None = None
        self.load: Tensor | None = None
        self.choice: Tensor | None = None
        self.gate: Tensor | None = None

    def forward(self, x: Tensor) -> Tensor:
        """x [B,T,D] -> [B,T,D]."""
        B, T, D = x.shape
        flat = x.reshape(B * T, D)  # [N,D]
        probs = self.router(flat).softmax(-1)  # [N,E]
        top_p, top_i = probs.topk(self.top_k, dim=-1)  # [N,k]
        gates = top_p / top_p.sum(-1, keepdim=True)  # [N,k]: softmax over the chosen experts' scores
        out = torch.zeros_like(flat)  # [N,D]
        for e, expert in enumerate(self.experts):
            rows, slot = (top_i == e).nonzero(as_tuple=True)  # the tokens that chose e, and where
            if rows.numel() or self.training:  # an idle expert still joins training's graph (zero
                # gradients, not None: DistributedDataParallel expects a gradient for every parameter)
                out.index_add_(0, rows, expert(flat[rows]) * gates[rows, slot, None])  # [n,D]
        E = len(self.experts)
        load = torch.bincount(top_i.flatten(), minlength=E).to(probs.dtype) / top_i.numel()  # [E], sums to 1
        self.load, self.choice, self.gate = load.detach(), top_i.view(B, T, -1), gates.detach().view(B, T, -1)
        self.aux_loss = load_balancing_loss(load, probs.mean(0)) if self.training else None
        return out.view(B, T, D)


def load_balancing_loss(load: Tensor, mean_prob: Tensor) -> Tensor:
    """Switch's auxiliary loss E * sum_e f_e P_e: load f [E] (a share, not differentiable),
    mean router probability P [E]; 1 when both are uniform, larger when a few experts take most."""
    return load.numel() * (load * mean_prob).sum()


def check_block_options(cfg: Any, d_model: int, n_head: int, pos_encodings: tuple[str, ...]) -> None:
    """Validate the transformer fields every family config shares (raises ConfigError)."""
    cfg._check_choice("pos_encoding", pos_encodings)
    cfg._check_choice("norm", NORMS)
    cfg._check_choice("norm_placement", NORM_PLACEMENTS)
    cfg._check_choice("ffn", FFNS)
    cfg._check_heads(d_model, n_head)
    cfg._check_dropouts("dropout", "attn_dropout", "emb_dropout")
    if cfg.d_ff < 0:
        raise ConfigError(f"{type(cfg).__name__}.d_ff must be >= 0 (0 = 4 x d_model), got {cfg.d_ff}.")
    if cfg.pos_encoding == "rope" and (d_model // n_head) % 2:
        raise ConfigError(f"RoPE needs an even head size; d_model / n_head = {d_model // n_head}.")
    if not isinstance(getattr(cfg, "residual", True), bool):
        raise ConfigError(f"{type(cfg).__name__}.residual must be true or false, got {cfg.residual!r}.")
    if cfg.pos_encoding == "sinusoidal" and d_model % 2:
        raise ConfigError(f"Sinusoidal positions need an even d_model, got {d_model}.")


def block_options(cfg: Any, d_model: int, positions: Positions) -> dict[str, Any]:
    """Keyword arguments for EncoderBlock/DecoderBlock from a family config's shared fields
    (d_ff = 0 means 4 x d_model) and its positional encoding's parts (RoPE, ALiBi)."""
    eps = {"norm_eps": cfg.norm_eps} if getattr(cfg, "norm_eps", 0.0) else {}  # imported models' own epsilon
    return dict(
        d_ff=cfg.d_ff or 4 * d_model, norm=cfg.norm, norm_placement=cfg.norm_placement, ffn=cfg.ffn,
        bias=cfg.bias, dropout=cfg.dropout, attn_dropout=cfg.attn_dropout, scale=cfg.attn_scale,
        rotary=positions.rotary, alibi=positions.alibi, uniform=getattr(cfg, "uniform_attention", False),
        qk_norm=getattr(cfg, "qk_norm", False), residual=getattr(cfg, "residual", True), **eps,
    )


def final_norm(cfg: Any, d_model: int) -> nn.Module:
    """The norm after the last block: needed with pre-LN, Identity with post-LN (already normalised)."""
    return (make_norm(cfg.norm, d_model, cfg.bias, getattr(cfg, "norm_eps", 0.0)) if cfg.norm_placement == "pre"
            else nn.Identity())


class _Block(nn.Module):
    """Residual wiring shared by the blocks. Pre-LN: x + drop(f(norm(x))); post-LN: norm(x + drop(f(x))).
    Without the residual (an ablation, He et al. 2016): pre-LN drop(f(norm(x))); post-LN norm(drop(f(x)))."""

    def _init_residual(self, norm_placement: str, dropout: float, residual: bool = True) -> None:
        self.pre = lookup({"pre": True, "post": False}, norm_placement, "norm placement")
        self.residual = residual
        self.dropout = dropout
        self.drop = Dropout(dropout)  # on the branch output; its mask from the run's generator

    def _sublayer(self, x: Tensor, norm: nn.Module, f: Callable[[Tensor], Tensor]) -> Tensor:
        h = f(norm(x) if self.pre else x)
        if self.training and self.dropout:  # no call at all on the decode hot path
            h = self.drop(h)
        if self.residual:
            h = x + h
        return h if self.pre else norm(h)


class EncoderBlock(_Block):
    """Self-attention + FFN (GPT with causal=True, ViT and the seq2seq encoder with causal=False).

    Submodules: ln1, attn, ln2, mlp. Biases: ``attn_bias`` / ``ffn_bias`` / ``norm_bias``
    default to ``bias``; ``norm_eps`` > 0 replaces the norms' default epsilon. GPT's options: ``n_kv_heads``
    (grouped-query attention), ``window``
    (sliding-window attention), ``n_experts`` > 1 (mlp is a :class:`MoEFeedForward` with ``top_k``).
    """

    def __init__(self, d_model: int, n_head: int, d_ff: int, *, causal: bool = False,
                 norm: str = "layernorm", norm_placement: str = "pre", ffn: str = "gelu",
                 bias: bool = True, attn_bias: bool | None = None, ffn_bias: bool | None = None,
                 norm_bias: bool | None = None, dropout: float = 0.0, attn_dropout: float = 0.0,
                 scale: bool = True, rotary: Rotary | None = None, alibi: bool = False,
                 uniform: bool = False, qk_norm: bool = False, residual: bool = True,
                 n_kv_heads: int = 0, window: int = 0, n_experts: int = 0, top_k: int = 2,
                 norm_eps: float = 0.0) -> None:
        super().__init__()
        attn_bias = bias if attn_bias is None else attn_bias
        ffn_bias = bias if ffn_bias is None else ffn_bias
        norm_bias = bias if norm_bias is None else norm_bias
        self.ln1 = make_norm(norm, d_model, norm_bias, norm_eps)
        self.attn = MultiHeadAttention(d_model, n_head, causal=causal, bias=attn_bias,
                                       dropout=attn_dropout, scale=scale, rotary=rotary, alibi=alibi,
                                       uniform=uniform, qk_norm=qk_norm, n_kv_heads=n_kv_heads, window=window)
        self.ln2 = make_norm(norm, d_model, norm_bias, norm_eps)
        if n_experts > 1:
            self.mlp: nn.Module = MoEFeedForward(d_model, d_ff, ffn, ffn_bias, n_experts, top_k)
        else:
            self.mlp = FeedForward(d_model, d_ff, ffn, ffn_bias)
        self._init_residual(norm_placement, dropout, residual)

    def forward(self, x: Tensor, key_mask: Tensor | None = None, cache: KVCache | None = None,
                layer: int = 0, offset: int = 0) -> Tensor:
        """x [B,T,D] -> [B,T,D]."""
        def attend(h: Tensor) -> Tensor:
            return self.attn(h, key_mask=key_mask, cache=cache, layer=layer, offset=offset)[0]

        x = self._sublayer(x, self.ln1, attend)
        return self._sublayer(x, self.ln2, self.mlp)


class DecoderBlock(_Block):
    """Causal self-attention + cross-attention + FFN (Vaswani decoder layer).

    Submodules: ln1, self_attn, ln2, cross_attn, ln3, mlp.
    """

    def __init__(self, d_model: int, n_head: int, d_ff: int, *, norm: str = "layernorm",
                 norm_placement: str = "post", ffn: str = "relu", bias: bool = True,
                 dropout: float = 0.0, attn_dropout: float = 0.0, scale: bool = True,
                 rotary: Rotary | None = None, alibi: bool = False, uniform: bool = False,
                 qk_norm: bool = False, residual: bool = True) -> None:
        super().__init__()
        self.ln1 = make_norm(norm, d_model, bias)
        self.self_attn = MultiHeadAttention(d_model, n_head, causal=True, bias=bias, dropout=attn_dropout,
                                            scale=scale, rotary=rotary, alibi=alibi, qk_norm=qk_norm)
        self.ln2 = make_norm(norm, d_model, bias)
        self.cross_attn = MultiHeadAttention(d_model, n_head, cross=True, bias=bias,
                                             dropout=attn_dropout, scale=scale, uniform=uniform, qk_norm=qk_norm)
        self.ln3 = make_norm(norm, d_model, bias)
        self.mlp = FeedForward(d_model, d_ff, ffn, bias)
        self._init_residual(norm_placement, dropout, residual)

    def forward(self, x: Tensor, memory: Tensor | None, memory_mask: Tensor | None,
                tgt_mask: Tensor | None = None, self_cache: KVCache | None = None,
                cross_cache: KVCache | None = None, layer: int = 0, offset: int = 0,
                need_cross_weights: bool = False) -> tuple[Tensor, Tensor | None]:
        """x [B,T,D], memory [B,S,D] (may be None when cross_cache holds its keys/values)
        -> (x [B,T,D], cross-attention weights [B,H,T,S] if asked, else None)."""
        def self_attend(h: Tensor) -> Tensor:
            return self.self_attn(h, key_mask=tgt_mask, cache=self_cache, layer=layer, offset=offset)[0]

        cross_weights: Tensor | None = None

        def cross_attend(h: Tensor) -> Tensor:
            nonlocal cross_weights
            out, cross_weights = self.cross_attn(h, context=memory, key_mask=memory_mask, cache=cross_cache,
                                                 layer=layer, offset=offset, need_weights=need_cross_weights)
            return out

        x = self._sublayer(x, self.ln1, self_attend)
        x = self._sublayer(x, self.ln2, cross_attend)
        return self._sublayer(x, self.ln3, self.mlp), cross_weights
