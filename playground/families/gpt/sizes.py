"""How big a GPT is, from its config alone (for the server's size limits)."""
from __future__ import annotations

from playground.families.layer_sizes import (
    TransformerSizes,
    attention,
    d_ff,
    ffn,
    final_norm,
    norm,
    positions,
    transformer_layer_floats,
)
from playground.models.gpt import GPTConfig


class GPTSizes(TransformerSizes):
    """Token embedding (tied with the output head unless tie_embeddings is off), positions,
    n_layer blocks; sequences of block_size."""

    seq_fields = ("block_size",)

    def parameter_parts(self, config: GPTConfig) -> dict[str, int]:
        c = config
        n = c.n_layer
        return {
            "token embedding": c.vocab_size * c.d_model,
            "output head": 0 if c.tie_embeddings else c.vocab_size * c.d_model,  # an untied lm_head (no bias)
            "positions": positions(c, c.block_size),
            "attention": n * attention(c.d_model, c.bias),
            "feed-forward": n * ffn(c.d_model, d_ff(c), c.ffn, c.bias),
            "norms": n * 2 * norm(c.norm, c.d_model, c.bias) + final_norm(c),
        }

    def train_flops_parts(self, config: GPTConfig) -> dict[str, int]:
        """PaLM's estimate (Chowdhery et al. 2022, appendix B), as nanoGPT's estimate_mfu uses it,
        in its two terms: 6 N for the matrices' forward and backward plus 12 L d T for QKᵀ and AV
        over a full block_size context. N leaves out what no matrix product touches: the position
        table and, when untied, the token embedding (a lookup)."""
        c = config
        lookups = positions(c, c.block_size) + (0 if c.tie_embeddings else c.vocab_size * c.d_model)
        n_matmul = self.count_parameters(c) - lookups
        return {"weights": 6 * n_matmul, "attention scores": 12 * c.n_layer * c.d_model * c.block_size}

    def train_flops_per_unit(self, config: GPTConfig) -> int:
        """Training FLOPs per token: the sum of :meth:`train_flops_parts`."""
        return sum(self.train_flops_parts(config).values())

    def sequence_length(self, config: GPTConfig, seq_len: int | None = None) -> int:
        return int(config.block_size)

    def activation_floats(self, config: GPTConfig, batch: int, seq: int) -> int:
        c = config
        return batch * seq * (c.n_layer * transformer_layer_floats(c, seq, 1) + 2 * c.d_model + 4 * c.vocab_size)
