"""A BERT-style encoder: bidirectional self-attention over [CLS] text [SEP], two heads.

Embeddings: token + learned position (+ segment, when ``segments`` is on) -> dropout ->
``n_layer`` pre-LN :class:`~playground.models.layers.EncoderBlock` (bidirectional, padding keys
masked) -> final norm. Imported BERT / DistilBERT checkpoints set ``norm_placement="post"``,
``emb_norm`` and ``norm_eps`` (and a classifier's ``pooler``): real BERT's wiring, same modules. The same
encoder (``encoder.*`` parameters) carries two heads:

- :class:`BertMLM`: the masked-language-model head, a dense + GELU + norm transform and a decoder
  whose weight *is* the token embedding (tied) plus an output bias: logits [B,T,V];
- :class:`BertClassifier`: a linear class head on the final [CLS] state: logits [B,C].

Pre-training trains a BertMLM; fine-tuning builds a BertClassifier of the same encoder shape and
copies the ``encoder.*`` tensors over (:func:`copy_encoder`). Attention modules are named
``encoder.blocks.{i}.attn`` ([B,H,T,T]; key 0 is [CLS]).
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from playground.errors import ConfigError
from playground.models.attention import assign_attention_names
from playground.models.base import ModelBase, ModelConfig, init_transformer_weights
from playground.models.dropout import Dropout
from playground.models.layers import FFNS, NORMS, EncoderBlock, make_norm


@dataclass
class BertConfig(ModelConfig):
    """Encoder hyper-parameters; vocab_size and the special ids are set from the tokenizer."""

    vocab_size: int = 64
    pad_id: int = 0
    cls_id: int = 2
    sep_id: int = 3
    mask_id: int = 4
    d_model: int = 64
    n_layer: int = 2
    n_head: int = 2
    d_ff: int = 0  # 0 = 4 * d_model
    block_size: int = 64  # the longest input in tokens, [CLS] and [SEP] included
    segments: bool = False  # segment (sentence A / B) embeddings
    norm: Literal["layernorm", "rmsnorm"] = "layernorm"
    ffn: str = "gelu"
    dropout: float = 0.1
    # Real BERT / DistilBERT (an imported checkpoint): post-LN blocks, LayerNorm eps 1e-12, a norm
    # on the embeddings and no final norm. The defaults are the playground's own pre-LN encoder.
    norm_placement: Literal["pre", "post"] = "pre"
    norm_eps: float = 0.0  # 0 = the norm's default (LayerNorm 1e-5, RMSNorm 1e-6)
    emb_norm: bool = False  # a norm on token + position (+ segment) embeddings, before the blocks

    def __post_init__(self) -> None:
        self._check_positive("vocab_size", "d_model", "n_layer", "n_head", "block_size")
        self._check_choice("norm", NORMS)
        self._check_choice("norm_placement", NORM_PLACEMENTS)
        if self.norm_eps < 0:
            raise ConfigError(f"{type(self).__name__}.norm_eps must be >= 0 (0 = the norm's default), got {self.norm_eps}.")
        self._check_choice("ffn", FFNS)
        self._check_dropouts("dropout")
        self._check_heads(self.d_model, self.n_head)
        if self.d_ff < 0:
            raise ConfigError(f"{type(self).__name__}.d_ff must be >= 0 (0 = 4 * d_model), got {self.d_ff}.")
        if self.block_size < 3:
            raise ConfigError(f"{type(self).__name__}.block_size must be >= 3 ([CLS], a token, [SEP]), got {self.block_size}.")
        for f in ("pad_id", "cls_id", "sep_id", "mask_id"):
            if not 0 <= getattr(self, f) < self.vocab_size:
                raise ConfigError(f"{type(self).__name__}.{f} = {getattr(self, f)} is outside the vocabulary of {self.vocab_size}.")

    def encoder_shape(self) -> dict[str, object]:
        """The fields that fix the encoder's tensors (what a pre-trained encoder must share)."""
        return {f.name: getattr(self, f.name) for f in fields(BertConfig) if f.name not in ("dropout",)}


POOLERS = ("none", "tanh", "relu")
NORM_PLACEMENTS = ("pre", "post")


@dataclass
class BertClassifierConfig(BertConfig):
    """A BERT encoder with a class head on [CLS]; n_classes is set from the data."""

    n_classes: int = 2
    # what reads the [CLS] state before the class head: nothing (the playground's), BERT's pooler
    # (dense + tanh) or DistilBERT's pre-classifier (dense + ReLU)
    pooler: Literal["none", "tanh", "relu"] = "none"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.n_classes < 2:
            raise ConfigError(f"BertClassifierConfig.n_classes must be >= 2, got {self.n_classes}.")
        self._check_choice("pooler", POOLERS)


class BertEncoder(nn.Module):
    """``encoder(ids [B,T], segments [B,T] | None) -> states [B,T,D]`` (padding keys masked)."""

    def __init__(self, c: BertConfig) -> None:
        super().__init__()
        self.config = c
        self.tok_emb = nn.Embedding(c.vocab_size, c.d_model)
        self.pos_emb = nn.Embedding(c.block_size, c.d_model)
        self.seg_emb = nn.Embedding(2, c.d_model) if c.segments else None
        if c.emb_norm:
            self.emb_norm = make_norm(c.norm, c.d_model, True, c.norm_eps)
        self.drop = Dropout(c.dropout)
        self.blocks = nn.ModuleList(
            EncoderBlock(c.d_model, c.n_head, c.d_ff or 4 * c.d_model, causal=False, norm=c.norm, ffn=c.ffn,
                         dropout=c.dropout, norm_placement=c.norm_placement, norm_eps=c.norm_eps)
            for _ in range(c.n_layer))
        # post-LN blocks end normalised: no final norm (as in BERT)
        self.ln_f = make_norm(c.norm, c.d_model, True, c.norm_eps) if c.norm_placement == "pre" else nn.Identity()

    def forward(self, ids: Tensor, segments: Tensor | None = None) -> Tensor:
        c = self.config
        T = ids.shape[1]
        if T > c.block_size:
            raise ValueError(f"The input has {T} tokens; this model reads at most block_size = {c.block_size}.")
        real = ids != c.pad_id  # [B,T] True = a key that may be attended to
        x = self.tok_emb(ids) + self.pos_emb(torch.arange(T, device=ids.device))  # [B,T,D]
        if self.seg_emb is not None:
            x = x + self.seg_emb(torch.zeros_like(ids) if segments is None else segments)
        if self.config.emb_norm:
            x = self.emb_norm(x)
        x = self.drop(x)
        for i, block in enumerate(self.blocks):
            x = block(x, key_mask=real, layer=i)  # [B,T,D]
        return self.ln_f(x)


class _BertBase(ModelBase):
    """The shared encoder and GPT-2 style init (N(0, 0.02), residual projections scaled)."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.config = config
        self.encoder = BertEncoder(config)

    def init_family_weights(self, generator: torch.Generator | None = None) -> None:
        init_transformer_weights(self, 2 * self.config.n_layer, generator=generator)

    @property
    def tok_emb(self) -> nn.Embedding:
        """The token embedding (what attributions are computed against)."""
        return self.encoder.tok_emb


class MLMHead(nn.Module):
    """states [..,D] -> vocabulary logits [..,V]: dense + GELU + norm, then the tied decoder + bias."""

    def __init__(self, c: BertConfig, embedding: nn.Embedding) -> None:
        super().__init__()
        self.dense = nn.Linear(c.d_model, c.d_model)
        self.norm = make_norm(c.norm, c.d_model, True, c.norm_eps)
        self.decoder = nn.Linear(c.d_model, c.vocab_size)
        self.decoder.weight = embedding.weight  # tied: [V,D] is the token embedding itself

    def forward(self, h: Tensor) -> Tensor:
        return self.decoder(self.norm(F.gelu(self.dense(h))))


class BertMLM(_BertBase):
    """``model(ids [B,T], segments=None) -> logits [B,T,V]`` at every position (the masked ones are read)."""

    output_layers = ("mlm_head.decoder",)

    def __init__(self, config: BertConfig) -> None:
        super().__init__(config)
        self.mlm_head = MLMHead(config, self.encoder.tok_emb)
        assign_attention_names(self)
        self.init_family_weights()

    def forward(self, ids: Tensor, segments: Tensor | None = None) -> Tensor:
        return self.mlm_head(self.encoder(ids, segments))  # [B,T,V]


class BertClassifier(_BertBase):
    """``model(ids [B,T], segments=None) -> logits [B,n_classes]`` from the final [CLS] state (position 0)."""

    output_layers = ("head",)

    def __init__(self, config: BertClassifierConfig) -> None:
        super().__init__(config)
        self.pooler_kind = config.pooler
        if config.pooler != "none":
            self.pooler = nn.Linear(config.d_model, config.d_model)
        self.drop = Dropout(config.dropout)
        self.head = nn.Linear(config.d_model, config.n_classes)
        assign_attention_names(self)
        self.init_family_weights()

    def forward(self, ids: Tensor, segments: Tensor | None = None) -> Tensor:
        h = self.encoder(ids, segments)[:, 0]  # [B,D]: the final [CLS] state
        if self.pooler_kind == "tanh":  # BERT's pooler
            h = torch.tanh(self.pooler(h))
        elif self.pooler_kind == "relu":  # DistilBERT's pre-classifier
            h = F.relu(self.pooler(h))
        return self.head(self.drop(h))  # [B,C]


def encoder_state(model: nn.Module) -> dict[str, Tensor]:
    """The ``encoder.*`` tensors of a BERT model, keyed without the prefix."""
    return {k[len("encoder."):]: v for k, v in model.state_dict().items() if k.startswith("encoder.")}


def copy_encoder(model: _BertBase, state: dict[str, Tensor], source: str = "the pre-trained checkpoint") -> None:
    """Copy encoder tensors ``state`` (from :func:`encoder_state`) into ``model``'s encoder.

    ConfigError naming the first differing tensors when the shapes or names do not match."""
    own = model.encoder.state_dict()
    missing = sorted(set(own) - set(state))
    extra = sorted(set(state) - set(own))
    wrong = [f"{k} {tuple(state[k].shape)} vs {tuple(v.shape)}" for k, v in own.items()
             if k in state and state[k].shape != v.shape]
    if missing or extra or wrong:
        parts = ([f"missing {', '.join(missing[:3])}"] if missing else []) + \
                ([f"unexpected {', '.join(extra[:3])}"] if extra else []) + wrong[:3]
        raise ConfigError(f"The encoder of {source} does not fit this model ({'; '.join(parts)}): give the model the "
                          "same d_model, n_layer, n_head, d_ff, block_size, segments and tokenizer as the pre-training run.")
    with torch.no_grad():
        for k, v in own.items():
            v.copy_(state[k].to(v.device, v.dtype))


__all__ = ["BertClassifier", "BertClassifierConfig", "BertConfig", "BertEncoder", "BertMLM", "copy_encoder",
           "encoder_state"]
