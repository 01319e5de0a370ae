"""GPT: a NanoGPT-style decoder-only transformer with a tied LM head and a KV cache."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor, nn

from playground.errors import ConfigError, PlaygroundError
from playground.models.attention import KVCache, WindowedKVCache, assign_attention_names
from playground.models.base import ModelBase, ModelConfig, init_transformer_weights
from playground.models.dropout import Dropout
from playground.models.layers import (
    EncoderBlock,
    FeedForward,
    MoEFeedForward,
    block_options,
    check_block_options,
    final_norm,
)
from playground.models.positional import POS_ENCODINGS, make_positions


@dataclass
class GPTConfig(ModelConfig):
    """GPT hyper-parameters. The defaults with pos_encoding="learned", norm="layernorm",
    norm_placement="pre", ffn="gelu", bias=True are GPT-2's choices (exportable to HF)."""

    vocab_size: int = 256
    block_size: int = 128  # longest context (positions)
    n_layer: int = 4
    n_head: int = 4
    d_model: int = 128
    dropout: float = 0.0  # on the residual branches
    bias: bool = True  # biases in Linear layers and LayerNorm
    pos_encoding: Literal["none", "sinusoidal", "learned", "rope", "alibi"] = "learned"
    norm: Literal["layernorm", "rmsnorm"] = "layernorm"
    norm_placement: Literal["pre", "post"] = "pre"
    ffn: Literal["gelu", "gelu_exact", "relu", "relu2", "swiglu"] = "gelu"  # gelu: the tanh approximation
    attn_scale: bool = True  # divide scores by sqrt(d_k)
    d_ff: int = 0  # FFN hidden size; 0 = 4 * d_model
    attn_dropout: float = 0.0  # on the attention weights
    emb_dropout: float = 0.0  # on token + position embeddings
    uniform_attention: bool = False  # attention frozen uniform over visible keys (W&P baseline)
    qk_norm: bool = False  # RMS-normalise each head's queries and keys before the dot product
    tie_embeddings: bool = True  # lm_head shares tok_emb's weight (GPT-2); false: its own matrix
    zero_init: bool = False  # residual output projections (and an untied lm_head) start at zero
    residual: bool = True  # false: no skip connections (an ablation; each sublayer feeds the next)
    scale_embeddings: bool = False  # token embeddings times sqrt(d_model), drawn N(0, 1/d_model) (Vaswani §3.4)
    init_std: float = 0.02  # std of the weight matrices at init (GPT-2's 0.02; d_model^-0.5 gives unit-variance q, k)
    n_kv_heads: int = 0  # key/value heads: 0 = n_head (multi-head), 1 = multi-query, else grouped-query
    attn_window: int = 0  # 0 = full causal attention; W = each token sees itself and the W - 1 before it
    ffn_experts: int = 0  # 0 or 1: one dense FFN; E > 1: a mixture of E expert FFNs with a router
    ffn_top_k: int = 2  # experts each token is sent to (with ffn_experts > 1)
    moe_aux_weight: float = 0.01  # weight of the load-balancing loss added to the training loss

    def __post_init__(self) -> None:
        self._check_positive("vocab_size", "block_size", "n_layer", "n_head", "d_model", "init_std")
        check_block_options(self, self.d_model, self.n_head, POS_ENCODINGS)
        name = type(self).__name__
        if self.n_kv_heads < 0 or self.n_kv_heads and self.n_head % self.n_kv_heads:
            raise ConfigError(f"{name}.n_kv_heads = {self.n_kv_heads} must divide n_head = {self.n_head} "
                              "(each key/value head serves the same number of query heads); 0 means n_head.")
        if self.attn_window < 0:
            raise ConfigError(f"{name}.attn_window must be >= 0 (0 = full attention), got {self.attn_window}.")
        if self.ffn_experts < 0:
            raise ConfigError(f"{name}.ffn_experts must be >= 0 (0 or 1 = one dense FFN), got {self.ffn_experts}.")
        if self.ffn_experts > 1 and not 1 <= self.ffn_top_k <= self.ffn_experts:
            raise ConfigError(f"{name}.ffn_top_k = {self.ffn_top_k} must be between 1 and ffn_experts = "
                              f"{self.ffn_experts} (the experts each token is sent to).")
        if self.moe_aux_weight < 0:
            raise ConfigError(f"{name}.moe_aux_weight must be >= 0, got {self.moe_aux_weight}.")

    @property
    def kv_heads(self) -> int:
        """Key/value heads per layer (n_kv_heads, or n_head when 0)."""
        return self.n_kv_heads or self.n_head

    @property
    def moe(self) -> bool:
        """Whether the FFNs are mixtures of experts."""
        return self.ffn_experts > 1


class GPT(ModelBase):
    """Decoder-only transformer. ``model(idx [B,T], cache) -> logits [B,T,V]``.

    Submodules: tok_emb, pos_emb (learned/sinusoidal, else None), blocks.{i} (ln1, attn, ln2,
    mlp), ln_f (Identity when post-LN), lm_head (weight tied to tok_emb unless
    tie_embeddings=False). zero_init=True starts every block as the identity (attention
    out_proj and mlp.proj at zero) and an untied lm_head at zero (uniform first predictions).
    """

    output_layers = ("lm_head",)

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.config = c = config
        self.tok_emb = nn.Embedding(c.vocab_size, c.d_model)
        positions = make_positions(c.pos_encoding, c.block_size, c.d_model, c.n_head)
        self.pos_emb = positions.embedding  # learned/sinusoidal table, else None
        self.drop = Dropout(c.emb_dropout)
        self.blocks = nn.ModuleList(
            EncoderBlock(c.d_model, c.n_head, causal=True, **block_options(c, c.d_model, positions),
                         n_kv_heads=c.n_kv_heads, window=c.attn_window, n_experts=c.ffn_experts, top_k=c.ffn_top_k)
            for _ in range(c.n_layer)
        )
        self.ln_f = final_norm(c, c.d_model)
        self.lm_head = nn.Linear(c.d_model, c.vocab_size, bias=False)
        self.init_family_weights()
        if c.tie_embeddings:
            self.lm_head.weight = self.tok_emb.weight  # tied
        assign_attention_names(self)

    def init_family_weights(self, generator: torch.Generator | None = None) -> None:
        """GPT-2 init; zero_init zeroes the residual output projections (and an untied head)."""
        c = self.config
        init_transformer_weights(self, 2 * c.n_layer, std=c.init_std, generator=generator)
        if c.scale_embeddings:  # unit variance once scaled, like a sinusoidal table's entries
            nn.init.normal_(self.tok_emb.weight, 0.0, c.d_model**-0.5, generator=generator)
        if c.zero_init:
            for block in self.blocks:
                nn.init.zeros_(block.attn.out_proj.weight)
                for ffn in self.ffns(block):
                    nn.init.zeros_(ffn.proj.weight)
            if not c.tie_embeddings:
                nn.init.zeros_(self.lm_head.weight)

    @staticmethod
    def ffns(block: nn.Module) -> list[FeedForward]:
        """A block's feed-forward networks: its mlp, or each expert of a mixture."""
        return list(block.mlp.experts) if isinstance(block.mlp, MoEFeedForward) else [block.mlp]

    def aux_loss(self) -> Tensor | None:
        """The mixture of experts' load-balancing loss of the last training forward, summed over
        layers and times moe_aux_weight (None without experts or outside training)."""
        losses = [b.mlp.aux_loss for b in self.blocks if isinstance(b.mlp, MoEFeedForward)]
        losses = [loss for loss in losses if loss is not None]
        return self.config.moe_aux_weight * torch.stack(losses).sum() if losses and self.training else None

    def new_cache(self, length: int | None = None, windowed: bool = False) -> KVCache:
        """An empty KV cache for incremental decoding of up to ``length`` positions (block_size
        when None; more only when positions extrapolate). ``windowed`` with a sliding window
        (attn_window W < length): a ring that keeps each layer's last W positions only."""
        c = self.config
        length = c.block_size if length is None else int(length)
        if length > c.block_size:
            self._check_beyond(length)
        if windowed and c.attn_window and c.attn_window < length:
            return WindowedKVCache(c.n_layer, c.attn_window, length)
        return KVCache(c.n_layer, length)

    def forward(self, idx: Tensor, cache: KVCache | None = None, last_only: bool = False) -> Tensor:
        """idx [B,T] -> logits [B,T,V] ([B,1,V] with last_only).

        With a cache, positions continue from ``cache.length`` and the cache is extended in place;
        they may go past block_size when the cache was made longer (``new_cache(length)``).
        """
        T = idx.shape[1]
        offset = cache.length if cache is not None else 0
        limit = cache.max_length if cache is not None else self.config.block_size
        if offset + T > limit:
            raise PlaygroundError(
                f"{offset + T} tokens do not fit the model's context of {limit}; "
                "crop the prompt or start a new cache."
            )
        return self._logits(idx, cache, offset, last_only)

    @property
    def extrapolates(self) -> bool:
        """Whether positions past block_size can be computed (all encodings but a learned table)."""
        return self.config.pos_encoding != "learned"

    def _check_beyond(self, length: int) -> None:
        """PlaygroundError when ``length`` positions need vectors a learned table does not have."""
        if length > self.config.block_size and not self.extrapolates:
            raise PlaygroundError(
                f"This model's learned positions stop at block_size = {self.config.block_size}: "
                f"positions {self.config.block_size} .. {length - 1} were never trained, so there is no vector "
                "to look up. Only sinusoidal, RoPE, ALiBi or no positions can be evaluated past it.")

    def forward_beyond(self, idx: Tensor, last_only: bool = False) -> Tensor:
        """idx [B,T] -> logits [B,T,V] ([B,1,V] with last_only) for any T, also past block_size
        (no cache): the sinusoidal table and RoPE's angles are computed for the longer length,
        ALiBi's distances and no positions need nothing. Learned positions raise: no vector was
        trained past block_size. Within block_size it equals :meth:`forward`."""
        self._check_beyond(idx.shape[1])
        return self._logits(idx, None, 0, last_only)

    def _tokens(self, idx: Tensor) -> Tensor:
        """Token embeddings [B,T,D] (times sqrt(d_model) with scale_embeddings)."""
        x = self.tok_emb(idx)
        return x * self.config.d_model**0.5 if self.config.scale_embeddings else x

    def _logits(self, idx: Tensor, cache: KVCache | None, offset: int, last_only: bool) -> Tensor:
        """The forward pass proper: idx [B,T] at positions offset.. -> logits [B,T,V] ([B,1,V] last_only)."""
        T = idx.shape[1]
        x = self._tokens(idx)  # [B,T,D]
        if self.pos_emb is not None:
            x = x + self.pos_emb(T, offset)
        x = self.drop(x)
        for i, block in enumerate(self.blocks):
            x = block(x, cache=cache, layer=i, offset=offset)
        if cache is not None:
            cache.length = offset + T
        x = self.ln_f(x)
        if last_only:
            x = x[:, -1:]
        return self.lm_head(x)  # [B,T,V]

    @property
    def rows_batchable(self) -> bool:
        """Whether :meth:`decode_rows` applies: positions looked up per row (learned, sinusoidal or
        none); RoPE rotations and ALiBi biases need one shared offset per forward."""
        return self.config.pos_encoding not in ("rope", "alibi")

    def decode_rows(self, tokens: Tensor, cache) -> Tensor:
        """One token per row, each row at its own position: tokens [R,1] -> logits [R,V].

        Concurrent generations share this pass (playground.generation.batching, whose row cache
        ``cache`` is). The modules of :meth:`forward` in its order; what differs is per row: the
        position embedding of each row's position and a key mask [R,K] (True = a key of this
        row's own prefix or the new token; none when every row is equally long). Blocks get
        offset 0, which is why only additive (or no) position encodings are batched.
        """
        pos, K = cache.begin()  # [R], keys after this token
        x = self._tokens(tokens)  # [R,1,D]
        if self.pos_emb is not None:
            x = x + self.pos_emb.weight[pos][:, None]  # [R,1,D]
        x = self.drop(x)
        key_mask = None  # all rows equally long (one user, or users in step): every key is real
        W = self.config.attn_window
        if min(cache.lengths) != K - 1 or W and K > W:
            keys = torch.arange(K, device=tokens.device)[None, :]  # [1,K]
            key_mask = keys <= pos[:, None]  # [R,K]
            if W:
                key_mask &= keys > pos[:, None] - W  # the sliding window: the last W keys only
        for i, block in enumerate(self.blocks):
            x = block(x, key_mask=key_mask, cache=cache, layer=i, offset=0)
        cache.end()
        return self.lm_head(self.ln_f(x))[:, -1]  # [R,V]
