"""How big a seq2seq model is, from its config alone (for the server's size limits).

Neither config fixes how long the RNN's sequences are, and the Transformer's max_len is only an
upper bound: both take the data's longest source or target (:meth:`longest_sequence`) once loaded.
"""
from __future__ import annotations

from typing import Any

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
from playground.limits import ModelSizes
from playground.models.rnn_seq2seq import RNNSeq2SeqConfig
from playground.models.transformer_seq2seq import TransformerSeq2SeqConfig
from playground.training.data import PairData

DEFAULT_SEQ_LEN = 64  # RNN seq2seq length when the data has not fixed it yet


def longest_pair(payload: PairData) -> int | None:
    """The longest training source or target (+1 for the target's <bos>/<eos>), None without data."""
    lengths = [len(x) for part in (payload.train_src, payload.train_tgt) for x in part]
    return max(lengths) + 1 if lengths else None


def _rnn(cell: str, n_in: int, hidden: int, layers: int, directions: int) -> int:
    """A (stacked, possibly bidirectional) GRU or LSTM: 3 or 4 gates of input, recurrent and 2 biases.

    Closed form (the first layer reads `n_in`, the others the layer below's `hidden * directions`):
    a layer count of 10**18 costs the same as 1, so a size check never holds the server."""
    if layers <= 0:
        return 0
    gates = 3 if cell == "gru" else 4
    per_layer = hidden * hidden + 2 * hidden  # recurrent weights and the two biases
    first = directions * gates * (n_in * hidden + per_layer)
    rest = (layers - 1) * directions * gates * (hidden * directions * hidden + per_layer)
    return first + rest


def _score(kind: str, query_dim: int, key_dim: int, attn_dim: int) -> int:
    """The attention score's weights: additive (Bahdanau) or general (Luong); the rest have none."""
    if kind == "additive":
        return (query_dim + key_dim) * attn_dim + attn_dim
    if kind == "general":
        return query_dim * key_dim
    return 0  # dot, scaled_dot, uniform, none


def _attention_options(c: RNNSeq2SeqConfig, attn_dim: int) -> int:
    """Local-p's position predictor (W_p [A,H], v_p [A]) and the coverage weight (a vector of
    the attention size inside the additive score, a scalar for dot/general, none for uniform)."""
    total = c.hidden * attn_dim + attn_dim if c.local == "predictive" else 0
    if c.coverage and c.attention != "uniform":
        total += attn_dim if c.attention == "additive" else 1
    return total


class RNNSeq2SeqSizes(ModelSizes):
    """Two embeddings, encoder and decoder RNNs, the score, the combine layer and the output layer."""

    width_field = "hidden"

    def count_parameters(self, config: RNNSeq2SeqConfig) -> int:
        c = config
        directions = 2 if c.bidirectional else 1
        hidden = c.hidden
        return (2 * c.vocab_size * c.emb_dim
                + _rnn(c.cell, c.emb_dim, hidden // directions, c.n_layers, directions)
                + _rnn(c.cell, c.emb_dim + hidden, hidden, c.n_layers, 1)
                + _score(c.attention, hidden, hidden, c.attn_dim or hidden)
                + _attention_options(c, c.attn_dim or hidden)
                + linear(2 * hidden + c.emb_dim, hidden, True) + linear(hidden, c.vocab_size, True))

    def notes(self, config: RNNSeq2SeqConfig) -> list[str]:
        """What the local window and coverage change in the decoder's attention."""
        c = config
        out = []
        if c.local != "none":
            centre = "the output step" if c.local == "monotonic" else "a position the decoder predicts"
            out.append(f"Each output step attends to at most {2 * c.local_d + 1} source tokens, centred on {centre}.")
        if c.coverage:
            out.append(f"Coverage: past attention per source token feeds the score; loss + {c.coverage_weight:g} x "
                       "sum min(attention, coverage).")
        return out

    def sequence_length(self, config: RNNSeq2SeqConfig, seq_len: int | None = None) -> int:
        return seq_len or DEFAULT_SEQ_LEN

    def activation_floats(self, config: RNNSeq2SeqConfig, batch: int, seq: int) -> int:
        c = config
        gates = 3 if c.cell == "gru" else 4
        h = c.hidden
        per_step = c.n_layers * (gates + 3) * h * 2 + c.emb_dim * 2  # encoder + decoder states
        attention = seq * ((c.attn_dim or h) if c.attention == "additive" else 1) * 2
        return batch * seq * (per_step + attention + 2 * h + c.emb_dim + 4 * c.vocab_size)

    def width_step(self, config: RNNSeq2SeqConfig) -> int:
        return 2  # a bidirectional encoder splits hidden over two directions

    def longest_sequence(self, payload: Any) -> int | None:
        return longest_pair(payload)


class TransformerSeq2SeqSizes(TransformerSizes):
    """Shared or separate embeddings, positions, encoder and decoder stacks; sequences of max_len at most."""

    seq_fields = ("max_len",)

    def parameter_parts(self, config: TransformerSeq2SeqConfig) -> dict[str, int]:
        """Encoder blocks have self-attention, decoder blocks self- and cross-attention (and a third norm)."""
        c = config
        enc, dec = c.n_encoder_layers, c.n_decoder_layers
        return {
            "token embedding": c.vocab_size * c.d_model * (1 if c.share_embeddings else 2),
            "positions": positions(c, c.max_len),
            "attention": (enc + 2 * dec) * attention(c.d_model, c.bias),
            "feed-forward": (enc + dec) * ffn(c.d_model, d_ff(c), c.ffn, c.bias),
            "norms": (2 * enc + 3 * dec) * norm(c.norm, c.d_model, c.bias) + 2 * final_norm(c),
        }

    def sequence_length(self, config: TransformerSeq2SeqConfig, seq_len: int | None = None) -> int:
        return min(config.max_len, seq_len) if seq_len else config.max_len

    def activation_floats(self, config: TransformerSeq2SeqConfig, batch: int, seq: int) -> int:
        c = config
        d = c.d_model
        return batch * seq * (c.n_encoder_layers * transformer_layer_floats(c, seq, 1)
                              + c.n_decoder_layers * (transformer_layer_floats(c, seq, 2) + 8 * d)
                              + 4 * d + 4 * c.vocab_size)

    def longest_sequence(self, payload: Any) -> int | None:
        return longest_pair(payload)
