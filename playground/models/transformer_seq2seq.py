"""Transformer encoder-decoder (Vaswani et al. 2017) with a KV cache for decoding.

Encoder self-attention (bidirectional, source padding masked), decoder causal self-attention +
cross-attention; post-LN by default as in the paper, pre-LN as an option. One shared
vocabulary for source and target.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor, nn

from playground.errors import ConfigError, PlaygroundError
from playground.models.attention import KVCache, assign_attention_names
from playground.models.base import ModelBase, ModelConfig, init_transformer_weights
from playground.models.dropout import Dropout
from playground.models.layers import (
    DecoderBlock,
    EncoderBlock,
    block_options,
    check_block_options,
    final_norm,
)
from playground.models.positional import POS_ENCODINGS, make_positions


@dataclass
class TransformerSeq2SeqConfig(ModelConfig):
    """Encoder-decoder hyper-parameters; defaults follow the paper (post-LN, ReLU FFN,
    sinusoidal positions, shared and sqrt(d_model)-scaled embeddings) at a small size."""

    vocab_size: int = 256
    pad_id: int = 0
    bos_id: int = 1
    eos_id: int = 2
    d_model: int = 128
    n_head: int = 4
    n_encoder_layers: int = 2
    n_decoder_layers: int = 2
    max_len: int = 256  # longest source and longest target sequence
    dropout: float = 0.0
    bias: bool = True
    pos_encoding: Literal["none", "sinusoidal", "learned", "rope", "alibi"] = "sinusoidal"
    norm: Literal["layernorm", "rmsnorm"] = "layernorm"
    norm_placement: Literal["pre", "post"] = "post"  # post: the paper's
    ffn: Literal["gelu", "gelu_exact", "relu", "relu2", "swiglu"] = "relu"
    attn_scale: bool = True
    d_ff: int = 0  # 0 = 4 * d_model
    attn_dropout: float = 0.0
    emb_dropout: float = 0.0
    share_embeddings: bool = True  # source and target embeddings share one matrix
    scale_embeddings: bool = True  # embeddings times sqrt(d_model)
    uniform_attention: bool = False  # cross-attention frozen uniform over the source (W&P baseline)

    def __post_init__(self) -> None:
        self._check_positive("vocab_size", "d_model", "n_head", "n_encoder_layers", "n_decoder_layers", "max_len")
        for f in ("pad_id", "bos_id", "eos_id"):
            if not 0 <= getattr(self, f) < self.vocab_size:
                raise ConfigError(f"TransformerSeq2SeqConfig.{f} = {getattr(self, f)} is outside the vocabulary of {self.vocab_size}.")
        check_block_options(self, self.d_model, self.n_head, POS_ENCODINGS)


class _Stack(nn.Module):
    """A stack of blocks with a final norm (Identity when post-LN)."""

    def __init__(self, blocks: list[nn.Module], final_norm: nn.Module) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(blocks)
        self.ln_f = final_norm


@dataclass
class TransformerDecodeState:
    """Incremental decoding state: encoder memory, source mask, self-attention KV cache and
    the cross-attention keys/values (projected once)."""

    memory: Tensor  # [B,S,D]
    src_mask: Tensor  # [B,S] True = real token
    self_cache: KVCache
    cross_cache: KVCache

    @property
    def step(self) -> int:
        return self.self_cache.length

    def reorder(self, index: Tensor) -> None:
        """Reorder the batch (beam search): row b becomes old row index[b]."""
        self.memory = self.memory.index_select(0, index)
        self.src_mask = self.src_mask.index_select(0, index)
        self.self_cache.reorder(index)
        self.cross_cache.reorder(index)


class TransformerSeq2Seq(ModelBase):
    """``model(src [B,S], tgt_in [B,T]) -> logits [B,T,V]`` (teacher forcing).

    Submodules: src_emb, tgt_emb, pos_emb, encoder.blocks.{i} (attn), encoder.ln_f,
    decoder.blocks.{i} (self_attn, cross_attn), decoder.ln_f, lm_head (tied to tgt_emb).
    Target padding must be on the right (causal masking hides it from real positions).
    """

    output_layers = ("lm_head",)

    def __init__(self, config: TransformerSeq2SeqConfig) -> None:
        super().__init__()
        self.config = c = config
        self.src_emb = nn.Embedding(c.vocab_size, c.d_model)
        self.tgt_emb = nn.Embedding(c.vocab_size, c.d_model)
        positions = make_positions(c.pos_encoding, c.max_len, c.d_model, c.n_head)
        self.pos_emb = positions.embedding  # learned/sinusoidal table, else None
        self.drop = Dropout(c.emb_dropout)
        opts = block_options(c, c.d_model, positions)
        # uniform_attention freezes only the cross-attention (attention over the input)
        self.encoder = _Stack([EncoderBlock(c.d_model, c.n_head, causal=False, **{**opts, "uniform": False})
                               for _ in range(c.n_encoder_layers)], final_norm(c, c.d_model))
        self.decoder = _Stack([DecoderBlock(c.d_model, c.n_head, **opts)
                               for _ in range(c.n_decoder_layers)], final_norm(c, c.d_model))
        self.lm_head = nn.Linear(c.d_model, c.vocab_size, bias=False)
        self.init_family_weights()
        if c.share_embeddings:
            self.tgt_emb.weight = self.src_emb.weight
        self.lm_head.weight = self.tgt_emb.weight
        assign_attention_names(self)

    def init_family_weights(self, generator: torch.Generator | None = None) -> None:
        """GPT-2 init over every residual sublayer; scaled embeddings start at unit variance
        once scaled by sqrt(d_model) (fairseq init)."""
        c = self.config
        init_transformer_weights(self, 2 * c.n_encoder_layers + 3 * c.n_decoder_layers, generator=generator)
        if c.scale_embeddings:
            nn.init.normal_(self.src_emb.weight, 0.0, c.d_model**-0.5, generator=generator)
            if self.tgt_emb.weight is not self.src_emb.weight:
                nn.init.normal_(self.tgt_emb.weight, 0.0, c.d_model**-0.5, generator=generator)

    def _embed(self, ids: Tensor, emb: nn.Embedding, offset: int = 0) -> Tensor:
        """ids [B,T] -> [B,T,D] (scaled token embedding + positions offset.. + dropout)."""
        T = ids.shape[1]
        if offset + T > self.config.max_len:
            raise PlaygroundError(
                f"A sequence of {offset + T} tokens is longer than this model's max_len "
                f"{self.config.max_len}; shorten the input or cap the output length."
            )
        x = emb(ids)
        if self.config.scale_embeddings:
            x = x * math.sqrt(self.config.d_model)
        if self.pos_emb is not None:
            x = x + self.pos_emb(T, offset)
        return self.drop(x)

    def encode(self, src: Tensor) -> tuple[Tensor, Tensor]:
        """src [B,S] -> (memory [B,S,D], src_mask [B,S] True = real token)."""
        src_mask = src != self.config.pad_id
        x = self._embed(src, self.src_emb)
        for block in self.encoder.blocks:
            x = block(x, key_mask=src_mask)
        return self.encoder.ln_f(x), src_mask

    def decode(self, tgt_in: Tensor, memory: Tensor | None, src_mask: Tensor,
               self_cache: KVCache | None = None, cross_cache: KVCache | None = None,
               need_alignment: bool = False) -> tuple[Tensor, Tensor | None]:
        """tgt_in [B,T] -> (logits [B,T,V], head-mean cross-attention of the last layer
        [B,T,S] if need_alignment). With caches, positions continue from self_cache.length."""
        offset = self_cache.length if self_cache is not None else 0
        x = self._embed(tgt_in, self.tgt_emb, offset)
        last = len(self.decoder.blocks) - 1
        cross = None
        for i, block in enumerate(self.decoder.blocks):
            x, cross = block(x, memory, src_mask, self_cache=self_cache, cross_cache=cross_cache,
                             layer=i, offset=offset, need_cross_weights=need_alignment and i == last)
        if self_cache is not None:
            self_cache.length = offset + tgt_in.shape[1]
        logits = self.lm_head(self.decoder.ln_f(x))  # [B,T,V]
        return logits, None if cross is None else cross.mean(dim=1)

    def forward(self, src: Tensor, tgt_in: Tensor, return_alignment: bool = False) -> Tensor | tuple[Tensor, Tensor]:
        """src [B,S], tgt_in [B,T] -> logits [B,T,V] (and alignment [B,T,S] if asked)."""
        memory, src_mask = self.encode(src)
        logits, alignment = self.decode(tgt_in, memory, src_mask, need_alignment=return_alignment)
        return (logits, alignment) if return_alignment else logits  # type: ignore[return-value]

    def start(self, src: Tensor) -> TransformerDecodeState:
        """Encode ``src`` [B,S] once and return the state for :meth:`step`."""
        memory, src_mask = self.encode(src)
        n = self.config.n_decoder_layers
        return TransformerDecodeState(memory, src_mask, KVCache(n, self.config.max_len), KVCache(n, 0))

    def step(self, state: TransformerDecodeState, y_prev: Tensor) -> tuple[Tensor, Tensor, TransformerDecodeState]:
        """One decoding step: y_prev [B] -> (logits [B,V], alignment [B,S], state)."""
        logits, alignment = self.decode(y_prev[:, None], state.memory, state.src_mask,
                                        state.self_cache, state.cross_cache, need_alignment=True)
        return logits[:, 0], alignment[:, 0], state  # type: ignore[index]
