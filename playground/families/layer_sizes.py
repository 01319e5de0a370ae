"""Parameter and activation counts of the layers the families are built from, from a config alone.

The families' :class:`~playground.limits.ModelSizes` add these up; nothing here builds a module.
`c` is a transformer family's config (d_model, d_ff, n_head, norm, norm_placement, ffn, bias,
pos_encoding).
"""
from __future__ import annotations

from typing import Any

from playground.limits import ModelSizes


def linear(n_in: int, n_out: int, bias: bool) -> int:
    """An nn.Linear(n_in, n_out)."""
    return n_in * n_out + (n_out if bias else 0)


def norm(kind: str, d: int, bias: bool) -> int:
    """A LayerNorm (weight + bias) or RMSNorm (weight only) over d features."""
    return d * (2 if kind == "layernorm" and bias else 1)


def attention(d: int, bias: bool, kv_width: int | None = None) -> int:
    """Self (qkv + out) and cross (q + kv + out) attention have the same count: 4 D² (+ 4 D).
    kv_width: keys' and values' width when smaller than D (grouped-query: n_kv_heads x head size)."""
    kv = d if kv_width is None else kv_width
    return linear(d, d + 2 * kv, bias) + linear(d, d, bias)


def ffn(d: int, d_ff: int, kind: str, bias: bool) -> int:
    """The feed-forward block: in (doubled for SwiGLU's gate) and out projections."""
    return linear(d, 2 * d_ff if kind == "swiglu" else d_ff, bias) + linear(d_ff, d, bias)


def d_ff(c: Any) -> int:
    """The FFN's inner width (0 in a config means 4 d_model)."""
    return c.d_ff or 4 * c.d_model


def encoder_block(c: Any) -> int:
    """Two norms, self-attention, FFN."""
    return 2 * norm(c.norm, c.d_model, c.bias) + attention(c.d_model, c.bias) + ffn(c.d_model, d_ff(c), c.ffn, c.bias)


def decoder_block(c: Any) -> int:
    """Three norms, self- and cross-attention, FFN."""
    return 3 * norm(c.norm, c.d_model, c.bias) + 2 * attention(c.d_model, c.bias) + ffn(c.d_model, d_ff(c), c.ffn, c.bias)


def final_norm(c: Any) -> int:
    """The norm after the last block (pre-norm stacks only)."""
    return norm(c.norm, c.d_model, c.bias) if c.norm_placement == "pre" else 0


def positions(c: Any, n_positions: int) -> int:
    """A learned position table (sinusoidal is a buffer; rope / alibi have none)."""
    return n_positions * c.d_model if c.pos_encoding == "learned" else 0


def transformer_layer_floats(c: Any, seq: int, attn_maps: int) -> int:
    """Floats one token keeps per layer for backward: norms, q/k/v, outputs, residuals, FFN, and
    `attn_maps` attention weight maps (self, or self + cross)."""
    fc_out = 2 * d_ff(c) if c.ffn == "swiglu" else d_ff(c)
    return 16 * c.d_model + 2 * fc_out + 2 * c.n_head * seq * attn_maps


class TransformerSizes(ModelSizes):
    """What the transformer families share: the width is d_model, narrowed in steps of 2 n_head."""

    width_field = "d_model"

    def count_parameters(self, config: Any) -> int:
        return sum(self.parameter_parts(config).values())

    def parameter_parts(self, config: Any) -> dict[str, int]:
        """Parameters by part (embeddings, positions, attention, feed-forward, norms, heads), summing
        to count_parameters; each family names its own parts."""
        raise NotImplementedError

    def width_step(self, config: Any) -> int:
        return getattr(config, "n_head", 1) * 2
