"""How big a BERT encoder is, from its config alone (for the server's size limits)."""
from __future__ import annotations

from playground.families.layer_sizes import attention, d_ff, ffn, linear, norm
from playground.limits import ModelSizes
from playground.models.bert import BertConfig


class BertSizes(ModelSizes):
    """Embeddings (token, position, segment; an imported BERT's embedding norm), n_layer blocks,
    the final norm (pre-LN only), and the MLM head (dense, norm, a bias; its decoder weight is the
    token embedding) or the class head (with a pooler when set)."""

    width_field = "d_model"
    seq_fields = ("block_size",)

    def parameter_parts(self, config: BertConfig) -> dict[str, int]:
        """Parameters by part, summing to count_parameters."""
        c, d = config, config.d_model
        parts = {"token embedding": c.vocab_size * d, "positions": c.block_size * d,
                 "segments": 2 * d if c.segments else 0,
                 "attention": c.n_layer * attention(d, True),
                 "feed-forward": c.n_layer * ffn(d, d_ff(c), c.ffn, True),
                 "norms": (2 * c.n_layer + (c.norm_placement == "pre") + c.emb_norm) * norm(c.norm, d, True)}
        n_classes = getattr(c, "n_classes", None)
        if n_classes is None:
            parts["MLM head"] = linear(d, d, True) + norm(c.norm, d, True) + c.vocab_size
        else:
            pooler = linear(d, d, True) if getattr(c, "pooler", "none") != "none" else 0
            parts["class head"] = pooler + linear(d, n_classes, True)
        return parts

    def count_parameters(self, config: BertConfig) -> int:
        return sum(self.parameter_parts(config).values())

    def sequence_length(self, config: BertConfig, seq_len: int | None = None) -> int:
        return min(config.block_size, seq_len) if seq_len else config.block_size

    def activation_floats(self, config: BertConfig, batch: int, seq: int) -> int:
        c, d = config, config.d_model
        per_token = c.n_layer * (16 * d + 2 * d_ff(c) + 2 * c.n_head * seq) + 4 * d
        head = 3 * c.vocab_size if getattr(c, "n_classes", None) is None else 0  # MLM logits, their softmax and grad
        return batch * seq * (per_token + head)

    def width_step(self, config: BertConfig) -> int:
        return 2 * config.n_head

    def train_flops_per_unit(self, config: BertConfig) -> int | None:
        """6 x parameters per token (no attention term: short sequences)."""
        return 6 * self.count_parameters(config)
