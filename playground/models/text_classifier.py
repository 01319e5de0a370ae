"""Text classifiers of the "attention is (not) explanation" debate (Jain & Wallace 2019,
Wiegreffe & Pinter 2019), plus a small Transformer encoder classifier.

J&W's models: token embeddings -> encoder -> one attention layer over the encoder states ->
linear head.

- encoder "bilstm": a bidirectional LSTM (hidden/2 units per direction);
- encoder "cnn": a 1-D convolution (kernel ``kernel_size``, "same" padding) + ReLU;
- encoder "avg": each token's embedding projected on its own (Linear + tanh), no context
  (J&W's averaging / W&P's non-contextual model);
- the attention query is one learned vector q: additive e_t = v^T tanh(W [q; h_t]) (Bahdanau,
  the q part is a learned bias), dot e_t = q^T h_t, scaled_dot e_t = q^T h_t / sqrt(d),
  general e_t = q^T W h_t, uniform e_t = 0 (W&P's frozen-uniform baseline);
- alpha = masked softmax over the real tokens; context c = sum_t alpha_t h_t; logits = W c + b.

encoder "transformer": embeddings (+ learned positions, or RoPE inside attention) -> n_layer EncoderBlocks -> [CLS]
(a learned vector put before the tokens, key 0 of every attention map) or mean over the real
tokens -> final norm -> linear head.

Padding is on the right with ``pad_id``; a ``pad_id`` inside a sequence (an erased token) has a
zero embedding and no attention, the LSTM still steps over it (its length runs to the last
real token). The attention module is ``attention`` (J&W encoders; recorded as [B,1,1,T]) or
``blocks.{i}.attn`` (transformer; [B,H,T+1,T+1] with CLS, [B,H,T,T] without).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from playground.errors import ConfigError
from playground.models.attention import (
    SCORES,
    ScoredAttention,
    assign_attention_names,
    make_score,
    record_attention,
)
from playground.models.base import ModelBase, ModelConfig, init_transformer_weights
from playground.models.dropout import Dropout
from playground.models.layers import FFNS, NORMS, EncoderBlock, make_norm
from playground.models.positional import Rotary

ENCODERS = ("bilstm", "cnn", "avg", "transformer")
POOLS = ("cls", "mean")
POSITIONS = ("learned", "rope")


@dataclass
class TextClassifierConfig(ModelConfig):
    """Text classifier hyper-parameters (vocab_size, pad_id and n_classes are set from the data)."""

    vocab_size: int = 256
    pad_id: int = 0
    unk_id: int = 1  # its embedding starts at 0: the baseline of IG / leave-one-out / erasure
    n_classes: int = 2
    encoder: Literal["bilstm", "cnn", "avg", "transformer"] = "bilstm"
    attention: Literal["additive", "dot", "general", "scaled_dot", "uniform"] = "additive"  # J&W encoders
    emb_dim: int = 64
    hidden: int = 64  # encoder state size (bilstm: hidden/2 per direction; transformer: d_model)
    attn_dim: int = 0  # additive attention size; 0 = hidden
    kernel_size: int = 3  # cnn
    n_layer: int = 2  # transformer
    n_head: int = 2  # transformer
    d_ff: int = 0  # transformer; 0 = 4 * hidden
    max_len: int = 128  # the longest input in tokens (CLS excluded): texts are cut to it
    pool: Literal["cls", "mean"] = "cls"  # transformer
    pos_encoding: Literal["learned", "rope"] = "learned"  # transformer: a learned table or rotary (relative)
    norm: Literal["layernorm", "rmsnorm"] = "layernorm"  # transformer
    ffn: str = "gelu"  # transformer
    dropout: float = 0.1  # on embeddings and before the head (transformer: inside the blocks too)
    uniform_attention: bool = False  # freeze attention uniform over the real tokens (W&P baseline)

    def __post_init__(self) -> None:
        self._check_positive("vocab_size", "n_classes", "emb_dim", "hidden", "kernel_size", "n_layer", "n_head",
                             "max_len")
        self._check_choice("encoder", ENCODERS)
        self._check_choice("attention", SCORES)
        self._check_choice("pool", POOLS)
        self._check_choice("pos_encoding", POSITIONS)
        self._check_choice("norm", NORMS)
        self._check_choice("ffn", FFNS)
        self._check_dropouts("dropout")
        if self.n_classes < 2:
            raise ConfigError(f"TextClassifierConfig.n_classes must be >= 2, got {self.n_classes}.")
        if self.encoder == "bilstm" and self.hidden % 2:
            raise ConfigError(f"A BiLSTM encoder needs an even hidden size (hidden/2 per direction), got {self.hidden}.")
        if self.encoder == "transformer":
            self._check_heads(self.hidden, self.n_head)
        if self.attn_dim < 0 or self.d_ff < 0:
            raise ConfigError("TextClassifierConfig.attn_dim and d_ff must be >= 0 (0 = from hidden).")
        for f in ("pad_id", "unk_id"):
            if not 0 <= getattr(self, f) < self.vocab_size:
                raise ConfigError(f"TextClassifierConfig.{f} = {getattr(self, f)} is outside the vocabulary of {self.vocab_size}.")

    @property
    def uses_attention_layer(self) -> bool:
        """Whether the model pools through J&W's one attention layer (every encoder but the transformer)."""
        return self.encoder != "transformer"


def real_tokens(ids: Tensor, pad_id: int) -> Tensor:
    """[B,T] ids -> [B,T] bool, True for a real (not padding) token."""
    return ids != pad_id


def run_lengths(real: Tensor) -> Tensor:
    """[B,T] bool -> [B] the index of the last real token + 1 (at least 1), on the CPU (for packing)."""
    T = real.shape[1]
    idx = torch.arange(1, T + 1, device=real.device)[None, :]  # [1,T]
    return (real.long() * idx).amax(1).clamp_min(1).cpu()


class TextClassifier(ModelBase):
    """``model(ids [B,T]) -> logits [B,n_classes]``.

    Submodules: embedding, encoder (LSTM / Conv1d / Linear, or blocks for the transformer),
    attention (J&W encoders), head.
    """

    output_layers = ("head",)

    def __init__(self, config: TextClassifierConfig) -> None:
        super().__init__()
        self.config = c = config
        self.embedding = nn.Embedding(c.vocab_size, c.emb_dim, padding_idx=c.pad_id)
        self.drop = Dropout(c.dropout)
        self.attention: ScoredAttention | None = None
        if c.encoder == "transformer":
            self._build_transformer(c)
        else:
            self._build_jw(c)
        self.head = nn.Linear(c.hidden, c.n_classes)
        assign_attention_names(self)
        self.init_family_weights()

    def _build_jw(self, c: TextClassifierConfig) -> None:
        if c.encoder == "bilstm":
            self.encoder = nn.LSTM(c.emb_dim, c.hidden // 2, batch_first=True, bidirectional=True)
        elif c.encoder == "cnn":
            self.encoder = nn.Conv1d(c.emb_dim, c.hidden, c.kernel_size, padding="same")
        else:
            self.encoder = nn.Linear(c.emb_dim, c.hidden)
        kind = "uniform" if c.uniform_attention else c.attention
        self.query = nn.Parameter(torch.empty(c.hidden))  # the learned context vector q (init_family_weights)
        self.attention = ScoredAttention(make_score(kind, c.hidden, c.hidden, c.attn_dim or c.hidden))

    def _build_transformer(self, c: TextClassifierConfig) -> None:
        self.proj = nn.Linear(c.emb_dim, c.hidden) if c.emb_dim != c.hidden else nn.Identity()
        n_positions = c.max_len + (c.pool == "cls")
        learned = c.pos_encoding == "learned"
        self.pos_emb = nn.Embedding(n_positions, c.hidden) if learned else None
        rotary = None if learned else Rotary(c.hidden // c.n_head, n_positions)  # shared by every block
        self.cls = nn.Parameter(torch.zeros(1, 1, c.hidden)) if c.pool == "cls" else None
        self.blocks = nn.ModuleList(
            EncoderBlock(c.hidden, c.n_head, c.d_ff or 4 * c.hidden, norm=c.norm, ffn=c.ffn, dropout=c.dropout,
                         uniform=c.uniform_attention, rotary=rotary)
            for _ in range(c.n_layer))
        self.ln_f = make_norm(c.norm, c.hidden, True)

    def init_family_weights(self, generator: torch.Generator | None = None) -> None:
        """GPT-2 init for the transformer encoder; for the J&W encoders torch's defaults and the
        query q ~ N(0, 1/hidden). The <pad> and <unk> embeddings start at 0."""
        c = self.config
        if c.encoder == "transformer":
            init_transformer_weights(self, 2 * c.n_layer, generator=generator)
        else:
            nn.init.normal_(self.query, 0.0, c.hidden**-0.5, generator=generator)
        with torch.no_grad():  # <pad> and <unk> read as zero vectors (<unk> learns if training texts hold it)
            self.embedding.weight[[c.pad_id, c.unk_id]] = 0.0

    # -- encoders ---------------------------------------------------------------------------

    def encode(self, ids: Tensor) -> tuple[Tensor, Tensor]:
        """J&W encoders: ids [B,T] -> (states h [B,T,H], real-token mask [B,T])."""
        real = real_tokens(ids, self.config.pad_id)  # [B,T]
        e = self.drop(self.embedding(ids))  # [B,T,E]
        enc = self.encoder
        if isinstance(enc, nn.LSTM):
            lengths = run_lengths(real)
            packed = pack_padded_sequence(e, lengths, batch_first=True, enforce_sorted=False)
            out, _ = enc(packed)
            h, _ = pad_packed_sequence(out, batch_first=True, total_length=ids.shape[1])  # [B,T,H]
        elif isinstance(enc, nn.Conv1d):
            e = e * real[..., None]  # padding contributes nothing to its neighbours' windows
            h = torch.relu(enc(e.transpose(1, 2))).transpose(1, 2)  # [B,T,H]
        else:
            h = torch.tanh(enc(e))  # [B,T,H]
        return h, real

    def pool(self, h: Tensor, real: Tensor) -> Tensor:
        """J&W attention over the states: h [B,T,H], real [B,T] -> context [B,H]."""
        att = self.attention
        q = self.query.expand(h.shape[0], -1)  # [B,H]
        context, _ = att(q, att.prepare(h), h, real)  # [B,H], alpha [B,T]
        return context

    def attention_weights(self, ids: Tensor) -> Tensor:
        """J&W encoders: alpha [B,T] over the tokens (0 at padding); transformer: the last
        layer's head-mean row that produces the output ([CLS] row over the tokens, or the mean of
        the real tokens' rows)."""
        if self.attention is not None:
            h, real = self.encode(ids)
            att = self.attention
            q = self.query.expand(h.shape[0], -1)
            return att(q, att.prepare(h), h, real)[1]  # [B,T]
        name = f"blocks.{self.config.n_layer - 1}.attn"
        with record_attention(self) as maps:
            self(ids)
        attn = maps[name].mean(1)  # [B,T',T']
        if self.config.pool == "cls":
            return attn[:, 0, 1:]  # [B,T]
        real = real_tokens(ids, self.config.pad_id).float()  # [B,T]
        return (attn * real[:, :, None]).sum(1) / real.sum(1, keepdim=True).clamp_min(1)

    def _transformer(self, ids: Tensor) -> Tensor:
        """Transformer encoder: ids [B,T] -> pooled [B,H]."""
        c = self.config
        B, T = ids.shape
        if T > c.max_len:
            raise ValueError(f"The input has {T} tokens; this model reads at most max_len = {c.max_len}.")
        real = real_tokens(ids, c.pad_id)  # [B,T]
        x = self.proj(self.embedding(ids))  # [B,T,H]
        if self.cls is not None:
            x = torch.cat([self.cls.expand(B, -1, -1), x], 1)  # [B,T+1,H]
            real = torch.cat([real.new_ones(B, 1), real], 1)
        if self.pos_emb is not None:
            x = x + self.pos_emb(torch.arange(x.shape[1], device=ids.device))  # [B,T',H]
        x = self.drop(x)
        for i, block in enumerate(self.blocks):
            x = block(x, key_mask=real, layer=i)  # [B,T',H]
        x = self.ln_f(x)
        if self.cls is not None:
            return x[:, 0]  # [B,H]
        w = real.float()[..., None]
        return (x * w).sum(1) / w.sum(1).clamp_min(1)  # [B,H] mean over the real tokens

    def forward(self, ids: Tensor) -> Tensor:
        """ids [B,T] (right-padded with pad_id) -> logits [B,n_classes]."""
        if self.attention is None:
            pooled = self._transformer(ids)
        else:
            pooled = self.pool(*self.encode(ids))
        return self.head(self.drop(pooled))  # [B,C]


__all__ = ["ENCODERS", "POOLS", "TextClassifier", "TextClassifierConfig", "real_tokens", "run_lengths"]
