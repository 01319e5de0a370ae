"""RNN encoder-decoder with optional attention (Cho et al. 2014, Sutskever et al. 2014,
Bahdanau et al. 2015, Luong et al. 2015).

Encoder: embeddings + (bi)GRU/LSTM; a bidirectional encoder uses hidden/2 units per
direction so its states h_j have the decoder's size. Decoder step i (Bahdanau order):
  alpha_i = softmax_j score(s_{i-1}, h_j),  c_i = sum_j alpha_ij h_j
  s_i = RNN([E y_{i-1}; c_i], s_{i-1})
  logits_i = W_out tanh(W_comb [s_i; c_i; E y_{i-1}])
With attention "none" c_i is the encoder's final state for every i: the decoder sees only
that fixed-size summary (the bottleneck baseline); its alignment is reported as zeros.

Options of the attention (local_attention.py): ``local`` = "monotonic" / "predictive" limits
alpha_i to Luong's window of 2 local_d + 1 source positions (the query is s_{i-1}, this
decoder's attention query, where Luong's decoder uses its current state); ``coverage`` feeds
c_i = sum_{i' < i} alpha_{i'} into the score and ``forward(..., return_coverage=True)`` also
returns See et al.'s per-step loss sum_j min(alpha_ij, c_ij).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch import Tensor, nn
from torch.func import functional_call
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence

from playground.errors import ConfigError
from playground.models.attention import (
    SCORES,
    ScoredAttention,
    assign_attention_names,
    make_score,
)
from playground.models.base import ModelBase, ModelConfig, lookup
from playground.models.dropout import Dropout
from playground.models.local_attention import (
    LOCAL_KINDS,
    LocalCoverageAttention,
    coverage_step_loss,
)

Hidden = Tensor | tuple[Tensor, Tensor]  # GRU: h [L,B,H]; LSTM: (h, c)


class _LayerDropoutRNN(nn.RNNBase):
    """Base of :class:`GRU` / :class:`LSTM` (nn.GRU / nn.LSTM underneath): dropout between stacked layers drawn from a run's generator.

    The built-in ``dropout=`` of nn.GRU/nn.LSTM draws from torch's global RNG (cuDNN: a state
    seeded from it) and cannot take a generator. Here the module is built with dropout 0, so
    its parameters keep their names (``weight_ih_l0``, ``weight_hh_l1_reverse``, ... : older
    checkpoints load), and only a training forward with p > 0 and several layers runs the
    layers one at a time: layer l is a one-layer RNN of the same kind called on layer l's own
    parameters (``torch.func.functional_call`` on a parameter-less template), and
    ``layer_drop`` (its mask from the run's generator) drops its output before layer l + 1, as
    the built-in does. Evaluation and p = 0 take the built-in multi-layer kernel unchanged.
    """

    _base: type[nn.RNNBase]  # nn.GRU or nn.LSTM: the one-layer templates' class

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, *, dropout: float = 0.0,
                 **kwargs: Any) -> None:
        super().__init__(input_size, hidden_size, num_layers, dropout=0.0, **kwargs)  # type: ignore[misc]
        self.layer_drop = Dropout(dropout if num_layers > 1 else 0.0)
        self._templates: list[nn.RNNBase] = []  # one-layer modules on the meta device, not submodules

    def forward(self, input: Tensor | PackedSequence, hx: Hidden | None = None) -> Any:
        """Like nn.GRU / nn.LSTM (batch_first here): (output, final state [L*dirs,B,H], LSTM (h, c))."""
        if not (self.training and self.layer_drop.p > 0):
            return super().forward(input, hx)
        dirs = 2 if self.bidirectional else 1
        x, finals = input, []
        for layer in range(self.num_layers):
            template = self._template(layer)
            params = {name: getattr(self, name.replace("_l0", f"_l{layer}"))  # weight_ih_l0 <- weight_ih_l{layer}
                      for name in template._flat_weights_names}
            h = None if hx is None else (tuple(t[layer * dirs:(layer + 1) * dirs] for t in hx)
                                         if isinstance(hx, tuple) else hx[layer * dirs:(layer + 1) * dirs])
            x, final = functional_call(template, params, (x, h))  # [B,T,dirs*H]
            finals.append(final)  # [dirs,B,H] (LSTM: (h, c))
            if layer < self.num_layers - 1:
                x = x._replace(data=self.layer_drop(x.data)) if isinstance(x, PackedSequence) else self.layer_drop(x)
        if isinstance(finals[0], tuple):
            return x, tuple(torch.cat([f[i] for f in finals]) for i in range(2))
        return x, torch.cat(finals)  # [L*dirs,B,H]

    def _template(self, layer: int) -> nn.RNNBase:
        """A parameter-less one-layer RNN shaped like layer ``layer`` (built once, on meta)."""
        while len(self._templates) <= layer:
            i = len(self._templates)
            in_size = self.input_size if i == 0 else self.hidden_size * (2 if self.bidirectional else 1)
            self._templates.append(self._base(in_size, self.hidden_size, 1, bias=self.bias,
                                              batch_first=self.batch_first, bidirectional=self.bidirectional,
                                              device="meta"))
        return self._templates[layer]


class GRU(_LayerDropoutRNN, nn.GRU):
    """nn.GRU whose inter-layer dropout draws from the run's generator (see _LayerDropoutRNN)."""

    _base = nn.GRU


class LSTM(_LayerDropoutRNN, nn.LSTM):
    """nn.LSTM whose inter-layer dropout draws from the run's generator (see _LayerDropoutRNN)."""

    _base = nn.LSTM


RNN_CELLS: dict[str, type[nn.RNNBase]] = {"gru": GRU, "lstm": LSTM}
CELLS = tuple(RNN_CELLS)
RNN_ATTENTIONS = ("none",) + SCORES
MAX_LOCAL_D = 256  # window half-width cap: wider than any source the presets read


@dataclass
class RNNSeq2SeqConfig(ModelConfig):
    """RNN seq2seq hyper-parameters (one shared vocabulary for source and target)."""

    vocab_size: int = 256
    pad_id: int = 0
    bos_id: int = 1
    eos_id: int = 2
    cell: Literal["gru", "lstm"] = "gru"
    attention: Literal["none", "additive", "dot", "general", "scaled_dot", "uniform"] = "additive"  # none: the fixed-vector bottleneck
    emb_dim: int = 64
    hidden: int = 128  # decoder state size = encoder state size (split over directions)
    n_layers: int = 1
    bidirectional: bool = True  # encoder only
    attn_dim: int = 0  # additive attention size; 0 = hidden
    dropout: float = 0.0  # on embeddings, between RNN layers and before the output layer
    local: Literal["none", "monotonic", "predictive"] = "none"  # Luong local-m / local-p window
    local_d: int = 0  # window half-width D (2D+1 positions); needed when local is not "none"
    coverage: bool = False  # See et al.: the sum of past attention fed into the score
    coverage_weight: float = 1.0  # lambda of the coverage loss sum_j min(alpha_j, c_j)

    def __post_init__(self) -> None:
        self._check_positive("vocab_size", "emb_dim", "hidden", "n_layers")
        self._check_choice("cell", CELLS)
        self._check_choice("attention", RNN_ATTENTIONS)
        self._check_dropouts("dropout")
        if self.bidirectional and self.hidden % 2:
            raise ConfigError(f"A bidirectional encoder needs an even hidden size (hidden/2 per direction), got {self.hidden}.")
        if self.attn_dim < 0:
            raise ConfigError(f"RNNSeq2SeqConfig.attn_dim must be >= 0 (0 = hidden), got {self.attn_dim}.")
        for f in ("pad_id", "bos_id", "eos_id"):
            if not 0 <= getattr(self, f) < self.vocab_size:
                raise ConfigError(f"RNNSeq2SeqConfig.{f} = {getattr(self, f)} is outside the vocabulary of {self.vocab_size}.")
        self._check_attention_options()

    def _check_attention_options(self) -> None:
        """local / local_d / coverage / coverage_weight: each needs attention and sane values."""
        self._check_choice("local", LOCAL_KINDS)
        if self.attention == "none" and (self.local != "none" or self.coverage):
            raise ConfigError("model.local and model.coverage shape the decoder's attention, and model.attention is "
                              "\"none\"; pick a score (e.g. model.attention = \"general\") or turn them off.")
        if self.local != "none" and not 1 <= self.local_d <= MAX_LOCAL_D:
            raise ConfigError(f"model.local = {self.local!r} needs a window half-width model.local_d from 1 to "
                              f"{MAX_LOCAL_D} (the window spans 2D+1 source tokens), got {self.local_d}.")
        if self.local == "none" and self.local_d:
            raise ConfigError(f"model.local_d = {self.local_d} sets a window, but model.local is \"none\"; set "
                              "model.local to \"monotonic\" or \"predictive\", or local_d to 0.")
        w = self.coverage_weight
        if not (isinstance(w, (int, float)) and math.isfinite(w) and 0 <= w <= 100):
            raise ConfigError(f"model.coverage_weight must be a number from 0 to 100, got {w!r}.")


@dataclass
class RNNDecodeState:
    """Incremental decoding state of the RNN decoder."""

    values: Tensor  # encoder states h_j [B,S,H]
    keys: Tensor | None  # score-prepared keys (None without attention)
    src_mask: Tensor  # [B,S] True = real token
    summary: Tensor  # encoder final state, the fixed context without attention [B,H]
    hidden: Hidden  # decoder state [L,B,H] (LSTM: (h, c))
    step: int = 0
    coverage: Tensor | None = None  # sum of past attention [B,S] (config.coverage only)
    last_coverage_loss: Tensor | None = None  # sum_j min(alpha_j, c_j) of the last step [B]

    def reorder(self, index: Tensor) -> None:
        """Reorder the batch (beam search): row b becomes old row index[b]."""
        pick = lambda t: t.index_select(0, index)
        self.values, self.src_mask, self.summary = pick(self.values), pick(self.src_mask), pick(self.summary)
        if self.keys is not None:
            self.keys = pick(self.keys)
        if self.coverage is not None:
            self.coverage = pick(self.coverage)
        if self.last_coverage_loss is not None:
            self.last_coverage_loss = pick(self.last_coverage_loss)
        if isinstance(self.hidden, tuple):
            self.hidden = tuple(h.index_select(1, index) for h in self.hidden)  # type: ignore[assignment]
        else:
            self.hidden = self.hidden.index_select(1, index)


def make_attention(c: RNNSeq2SeqConfig) -> ScoredAttention | None:
    """The decoder's attention over the encoder states, or None (attention = "none")."""
    if c.attention not in SCORES:
        return None
    score = make_score(c.attention, c.hidden, c.hidden, c.attn_dim or c.hidden)
    if c.local == "none" and not c.coverage:
        return ScoredAttention(score)
    return LocalCoverageAttention(score, c.hidden, c.attn_dim or c.hidden, c.local, c.local_d, c.coverage)


class _Decoder(nn.Module):
    """Decoder parts: rnn, attention (None without), combine."""

    def __init__(self, c: RNNSeq2SeqConfig) -> None:
        super().__init__()
        rnn_cls = lookup(RNN_CELLS, c.cell, "cell")
        self.rnn = rnn_cls(c.emb_dim + c.hidden, c.hidden, c.n_layers, batch_first=True, dropout=c.dropout)
        self.attention = make_attention(c)
        self.combine = nn.Linear(2 * c.hidden + c.emb_dim, c.hidden)


class RNNSeq2Seq(ModelBase):
    """``model(src [B,S], tgt_in [B,T]) -> logits [B,T,V]`` (teacher forcing).

    Submodules: src_emb, tgt_emb, encoder (nn.GRU/LSTM), decoder.rnn, decoder.attention
    (recorded as [B,1,T,S]), decoder.combine, lm_head. Source padding must be on the right.
    """

    output_layers = ("lm_head",)

    def __init__(self, config: RNNSeq2SeqConfig) -> None:
        super().__init__()
        self.config = c = config
        self.src_emb = nn.Embedding(c.vocab_size, c.emb_dim, padding_idx=c.pad_id)
        self.tgt_emb = nn.Embedding(c.vocab_size, c.emb_dim, padding_idx=c.pad_id)
        self.n_dirs = 2 if c.bidirectional else 1
        rnn_cls = lookup(RNN_CELLS, c.cell, "cell")
        self.encoder = rnn_cls(c.emb_dim, c.hidden // self.n_dirs, c.n_layers, batch_first=True,
                               bidirectional=c.bidirectional, dropout=c.dropout)
        self.decoder = _Decoder(c)
        self.lm_head = nn.Linear(c.hidden, c.vocab_size)
        self.drop = Dropout(c.dropout)
        assign_attention_names(self)

    def _merge_directions(self, h: Tensor) -> Tensor:
        """Encoder final state [L*dirs,B,H/dirs] -> [L,B,H] (directions concatenated)."""
        L, B = self.config.n_layers, h.shape[1]
        return h.view(L, self.n_dirs, B, -1).permute(0, 2, 1, 3).reshape(L, B, -1)

    def start(self, src: Tensor) -> RNNDecodeState:
        """Encode ``src`` [B,S] and return the initial decoder state for :meth:`step`."""
        src_mask = src != self.config.pad_id  # [B,S]
        lengths = src_mask.sum(1).clamp_min(1).cpu()
        packed = pack_padded_sequence(self.drop(self.src_emb(src)), lengths, batch_first=True, enforce_sorted=False)
        out, final = self.encoder(packed)
        values, _ = pad_packed_sequence(out, batch_first=True, total_length=src.shape[1])  # [B,S,H]
        hidden: Hidden = (tuple(self._merge_directions(h) for h in final) if isinstance(final, tuple)  # type: ignore[assignment]
                          else self._merge_directions(final))
        top = hidden[0][-1] if isinstance(hidden, tuple) else hidden[-1]  # [B,H]
        att = self.decoder.attention
        keys = att.prepare(values) if att is not None else None
        coverage = values.new_zeros(src_mask.shape, dtype=torch.float32) if self.config.coverage else None  # [B,S] fp32
        return RNNDecodeState(values, keys, src_mask, top, hidden, coverage=coverage)

    def step(self, state: RNNDecodeState, y_prev: Tensor) -> tuple[Tensor, Tensor, RNNDecodeState]:
        """One decoding step: y_prev [B] -> (logits [B,V], alpha [B,S], state); state is updated in place."""
        e = self.drop(self.tgt_emb(y_prev))  # [B,E]
        att = self.decoder.attention
        if att is None:
            context, alpha = state.summary, state.values.new_zeros(state.src_mask.shape)
        else:
            s_prev = state.hidden[0][-1] if isinstance(state.hidden, tuple) else state.hidden[-1]  # [B,H]
            if state.coverage is None:
                context, alpha = att(s_prev, state.keys, state.values, state.src_mask, state.step)  # [B,H], [B,S]
            else:
                context, alpha = att(s_prev, state.keys, state.values, state.src_mask, state.step, state.coverage)
                state.last_coverage_loss = coverage_step_loss(alpha, state.coverage)  # [B]
                state.coverage = state.coverage + alpha  # [B,S]
        out, state.hidden = self.decoder.rnn(torch.cat([e, context], -1)[:, None], state.hidden)
        o = torch.tanh(self.decoder.combine(torch.cat([out[:, 0], context, e], -1)))  # [B,H]
        state.step += 1
        return self.lm_head(self.drop(o)), alpha, state

    def forward(self, src: Tensor, tgt_in: Tensor, return_alignment: bool = False,
                return_coverage: bool = False) -> Tensor | tuple[Tensor, ...]:
        """src [B,S], tgt_in [B,T] -> logits [B,T,V], then alpha [B,T,S] for every target step if
        ``return_alignment``, then the coverage loss per step [B,T] if ``return_coverage`` (zeros
        when config.coverage is off)."""
        state = self.start(src)
        logits, alphas, cov_losses = [], [], []
        for t in range(tgt_in.shape[1]):
            step_logits, alpha, state = self.step(state, tgt_in[:, t])
            logits.append(step_logits)
            alphas.append(alpha)
            if return_coverage:
                cov_losses.append(state.last_coverage_loss if state.last_coverage_loss is not None
                                  else alpha.new_zeros(alpha.shape[0]))
        out: list[Tensor] = [torch.stack(logits, 1)]  # [B,T,V]
        if return_alignment:
            out.append(torch.stack(alphas, 1))  # [B,T,S]
        if return_coverage:
            out.append(torch.stack(cov_losses, 1))  # [B,T]
        return out[0] if len(out) == 1 else tuple(out)
