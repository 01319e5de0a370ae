"""ViT (Dosovitskiy et al. 2021): patch embedding, CLS token or mean pooling, encoder blocks,
classification head."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor, nn

from playground.errors import ConfigError, DataError
from playground.models.attention import assign_attention_names
from playground.models.base import ModelBase, ModelConfig, init_transformer_weights
from playground.models.dropout import Dropout
from playground.models.layers import (
    EncoderBlock,
    block_options,
    check_block_options,
    final_norm,
)
from playground.models.positional import POS_ENCODINGS, make_positions

POOLS = ("cls", "mean")


@dataclass
class ViTConfig(ModelConfig):
    """ViT hyper-parameters; square images of ``image_size`` pixels, a multiple of ``patch_size``."""

    image_size: int = 32
    patch_size: int = 4
    channels: int = 3
    n_classes: int = 10
    d_model: int = 128
    n_layer: int = 4
    n_head: int = 4
    pool: Literal["cls", "mean"] = "cls"
    dropout: float = 0.0
    bias: bool = True
    pos_encoding: Literal["none", "sinusoidal", "learned", "rope", "alibi"] = "learned"  # 1-D, row-major
    norm: Literal["layernorm", "rmsnorm"] = "layernorm"
    norm_placement: Literal["pre", "post"] = "pre"
    ffn: Literal["gelu", "gelu_exact", "relu", "relu2", "swiglu"] = "gelu_exact"
    attn_scale: bool = True
    d_ff: int = 0  # 0 = 4 * d_model
    attn_dropout: float = 0.0
    emb_dropout: float = 0.0
    input_norm: Literal["none", "per_image", "center"] = "none"  # per_image: each image standardised per channel
    # before patching; center: pixels in [0, 1] mapped to [-1, 1] (mean 0.5, std 0.5: an imported ViT's processor)
    uniform_attention: bool = False  # attention frozen uniform over visible keys (W&P baseline)
    norm_eps: float = 0.0  # 0 = the norm's default; an imported ViT's own (1e-12)

    def __post_init__(self) -> None:
        self._check_positive("image_size", "patch_size", "channels", "n_classes", "d_model", "n_layer", "n_head")
        if self.image_size % self.patch_size:
            raise ConfigError(f"ViTConfig.image_size {self.image_size} must be a multiple of patch_size {self.patch_size}.")
        self._check_choice("pool", POOLS)
        self._check_choice("input_norm", INPUT_NORMS)
        check_block_options(self, self.d_model, self.n_head, POS_ENCODINGS)
        if self.norm_eps < 0:
            raise ConfigError(f"ViTConfig.norm_eps must be >= 0 (0 = the norm's default), got {self.norm_eps}.")

    @property
    def n_tokens(self) -> int:
        """Sequence length seen by the encoder: patches (+1 for CLS)."""
        return (self.image_size // self.patch_size) ** 2 + (self.pool == "cls")


INPUT_NORMS = ("none", "per_image", "center")


def standardize_per_image(images: Tensor, eps: float = 1e-5) -> Tensor:
    """[B,C,H,W] -> each channel of each image shifted to mean 0, the image scaled to std 1.

    Removes background colour and contrast, so a small ViT sees shapes rather than colours.
    """
    centred = images - images.mean(dim=(2, 3), keepdim=True)
    return centred / (centred.std(dim=(1, 2, 3), keepdim=True) + eps)


class PatchEmbedding(nn.Module):
    """Non-overlapping P x P patches, linearly embedded: [B,C,H,W] -> [B, (H/P)*(W/P), D] row-major."""

    def __init__(self, channels: int, d_model: int, patch_size: int) -> None:
        super().__init__()
        self.proj = nn.Conv2d(channels, d_model, kernel_size=patch_size, stride=patch_size)

    def forward(self, images: Tensor) -> Tensor:
        return self.proj(images).flatten(2).transpose(1, 2)  # [B,N,D]


class ViT(ModelBase):
    """``model(images [B,C,H,W]) -> logits [B,n_classes]``.

    Submodules: patch_emb, cls_token (pool="cls"), pos_emb, blocks.{i}, ln_f, head.
    With pool="cls" key 0 of every attention map is CLS and the patches follow row-major.
    """

    output_layers = ("head",)

    def __init__(self, config: ViTConfig) -> None:
        super().__init__()
        self.config = c = config
        self.grid = (c.image_size // c.patch_size, c.image_size // c.patch_size)
        self.patch_emb = PatchEmbedding(c.channels, c.d_model, c.patch_size)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, c.d_model)) if c.pool == "cls" else None
        positions = make_positions(c.pos_encoding, c.n_tokens, c.d_model, c.n_head)
        self.pos_emb = positions.embedding  # learned/sinusoidal table, else None
        self.drop = Dropout(c.emb_dropout)
        self.blocks = nn.ModuleList(
            EncoderBlock(c.d_model, c.n_head, causal=False, **block_options(c, c.d_model, positions))
            for _ in range(c.n_layer)
        )
        self.ln_f = final_norm(c, c.d_model)
        self.head = nn.Linear(c.d_model, c.n_classes)
        self.init_family_weights()
        assign_attention_names(self)

    def init_family_weights(self, generator: torch.Generator | None = None) -> None:
        """GPT-2 init (the CLS token too: N(0, 0.02))."""
        init_transformer_weights(self, 2 * self.config.n_layer, generator=generator)

    def forward(self, images: Tensor) -> Tensor:
        """images [B,C,H,W] -> logits [B,n_classes]."""
        c = self.config
        if images.dim() != 4 or tuple(images.shape[1:]) != (c.channels, c.image_size, c.image_size):
            raise DataError(
                f"This ViT takes images of shape [batch, {c.channels}, {c.image_size}, {c.image_size}], "
                f"got {list(images.shape)}; resize the images or train a model for this size."
            )
        if c.input_norm == "per_image":
            images = standardize_per_image(images)
        elif c.input_norm == "center":
            images = images * 2.0 - 1.0  # (x - 0.5) / 0.5
        x = self.patch_emb(images)  # [B,N,D]
        if self.cls_token is not None:
            x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1)  # [B,1+N,D]
        if self.pos_emb is not None:
            x = x + self.pos_emb(x.shape[1])
        x = self.drop(x)
        for block in self.blocks:
            x = block(x)
        x = self.ln_f(x)
        pooled = x[:, 0] if self.cls_token is not None else x.mean(dim=1)  # [B,D]
        return self.head(pooled)
