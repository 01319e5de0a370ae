"""How big a text classifier is, from its config alone (for the server's size limits)."""
from __future__ import annotations

from playground.families.layer_sizes import ffn, linear, norm
from playground.limits import ModelSizes
from playground.models.text_classifier import TextClassifierConfig


def _score(kind: str, hidden: int, attn_dim: int) -> int:
    """J&W's attention over the states with a learned query q (q counted here too)."""
    weights = {"additive": 2 * hidden * attn_dim + attn_dim, "general": hidden * hidden}.get(kind, 0)
    return hidden + weights


class TextClassifierSizes(ModelSizes):
    """Embeddings, the encoder (BiLSTM / CNN / per-token projection / transformer blocks), the
    attention layer or pooling, the class head; sequences of max_len tokens at most."""

    width_field = "hidden"
    seq_fields = ("max_len",)

    def parameter_parts(self, config: TextClassifierConfig) -> dict[str, int]:
        """Parameters by part, summing to count_parameters."""
        c = config
        h, e = c.hidden, c.emb_dim
        parts = {"token embedding": c.vocab_size * e}
        if c.encoder == "bilstm":
            parts["encoder"] = 2 * 4 * (e * (h // 2) + (h // 2) ** 2 + 2 * (h // 2))
        elif c.encoder == "cnn":
            parts["encoder"] = e * h * c.kernel_size + h
        elif c.encoder == "avg":
            parts["encoder"] = linear(e, h, True)
        else:
            ff = c.d_ff or 4 * h
            parts["input projection"] = linear(e, h, True) if e != h else 0
            parts["positions"] = (c.max_len + (c.pool == "cls")) * h if c.pos_encoding == "learned" else 0
            parts["cls token"] = h if c.pool == "cls" else 0
            parts["attention"] = c.n_layer * (4 * h * h + 4 * h)
            parts["feed-forward"] = c.n_layer * ffn(h, ff, c.ffn, True)
            parts["norms"] = (2 * c.n_layer + 1) * norm(c.norm, h, True)
        if c.encoder != "transformer":
            kind = "uniform" if c.uniform_attention else c.attention
            parts["attention"] = _score(kind, h, c.attn_dim or h)
        parts["class head"] = linear(h, c.n_classes, True)
        return parts

    def count_parameters(self, config: TextClassifierConfig) -> int:
        return sum(self.parameter_parts(config).values())

    def sequence_length(self, config: TextClassifierConfig, seq_len: int | None = None) -> int:
        return min(config.max_len, seq_len) if seq_len else config.max_len

    def activation_floats(self, config: TextClassifierConfig, batch: int, seq: int) -> int:
        c = config
        h = c.hidden
        if c.encoder == "transformer":
            per_token = c.n_layer * (16 * h + 2 * (c.d_ff or 4 * h) + 2 * c.n_head * seq) + 4 * h
        else:
            per_token = 12 * h + 2 * c.emb_dim + 2 * (c.attn_dim or h)
        return batch * seq * per_token + batch * 4 * c.n_classes

    def width_step(self, config: TextClassifierConfig) -> int:
        return 2 * config.n_head if config.encoder == "transformer" else 2

    def longest_sequence(self, payload: object) -> int | None:
        return None  # the config's max_len fixes it
