"""How big a ViT is, from its config alone (for the server's size limits)."""
from __future__ import annotations

from playground.families.layer_sizes import (
    TransformerSizes,
    attention,
    d_ff,
    ffn,
    final_norm,
    linear,
    norm,
    positions,
    transformer_layer_floats,
)
from playground.models.vit import ViTConfig


class ViTSizes(TransformerSizes):
    """Patch embedding, [CLS] token, positions, n_layer blocks and the class head; one token per patch."""

    def parameter_parts(self, config: ViTConfig) -> dict[str, int]:
        c = config
        n = c.n_layer
        return {
            "patch embedding": linear(c.channels * c.patch_size**2, c.d_model, True),
            "cls token": c.d_model if c.pool == "cls" else 0,
            "positions": positions(c, self.sequence_length(c)),
            "attention": n * attention(c.d_model, c.bias),
            "feed-forward": n * ffn(c.d_model, d_ff(c), c.ffn, c.bias),
            "norms": n * 2 * norm(c.norm, c.d_model, c.bias) + final_norm(c),
            "class head": linear(c.d_model, c.n_classes, True),
        }

    def sequence_length(self, config: ViTConfig, seq_len: int | None = None) -> int:
        return (config.image_size // config.patch_size) ** 2 + (config.pool == "cls")

    def activation_floats(self, config: ViTConfig, batch: int, seq: int) -> int:
        c = config
        return batch * seq * c.n_layer * transformer_layer_floats(c, seq, 1) + 2 * batch * c.channels * c.image_size**2

    def is_estimable(self, config: ViTConfig) -> bool:
        return config.patch_size >= 1 and config.image_size >= config.patch_size
