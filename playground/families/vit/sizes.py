"""How big a ViT is, from its config alone (for the server's size limits)."""
from __future__ import annotations

from playground.families.layer_sizes import (
    TransformerSizes,
    encoder_block,
    final_norm,
    linear,
    positions,
    transformer_layer_floats,
)
from playground.models.vit import ViTConfig


class ViTSizes(TransformerSizes):
    """Patch embedding, [CLS] token, positions, n_layer blocks and the class head; one token per patch."""

    def count_parameters(self, config: ViTConfig) -> int:
        c = config
        n_tokens = self.sequence_length(c)
        return (c.channels * c.d_model * c.patch_size**2 + c.d_model + (c.d_model if c.pool == "cls" else 0)
                + positions(c, n_tokens) + c.n_layer * encoder_block(c) + final_norm(c)
                + linear(c.d_model, c.n_classes, True))

    def sequence_length(self, config: ViTConfig, seq_len: int | None = None) -> int:
        return (config.image_size // config.patch_size) ** 2 + (config.pool == "cls")

    def activation_floats(self, config: ViTConfig, batch: int, seq: int) -> int:
        c = config
        return batch * seq * c.n_layer * transformer_layer_floats(c, seq, 1) + 2 * batch * c.channels * c.image_size**2

    def is_estimable(self, config: ViTConfig) -> bool:
        return config.patch_size >= 1 and config.image_size >= config.patch_size
