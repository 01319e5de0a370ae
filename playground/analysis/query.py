"""What to explain: a batch of inputs, each with its output position and target.

A :class:`Query` is the one object every method takes. It is batched (B examples, each with
its own position and target), so the dataset-level experiments can reuse the per-input
methods on many examples at once; the per-input analysis is simply B = 1 (or B = number of
output tokens for the seq2seq target x source matrices).

The scalar F explained for each example (ANALYZER.md, "Per model kind"):

- ``lm`` (GPT): log softmax(logits[position])[target]; the input units are the tokens.
- ``classifier`` (ViT): the target class logit; the input units are the patches.
- ``seq2seq``: log p(y_t | y_<t, x) with the decoder teacher-forced on ``decoder_inputs``;
  the input units are the source tokens.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass, field, replace

import torch
from torch import Tensor, nn

from playground.errors import PlaygroundError

KINDS = ("lm", "classifier", "seq2seq")


@dataclass
class Query:
    """B examples to explain (all tensors on the model's device).

    inputs: lm/seq2seq ids [B,T] (right-padded with ``pad_id`` when lengths differ);
        classifier images [B,C,H,W].
    targets: [B] token id (lm, seq2seq) or class index (classifier).
    positions: [B] query position (lm) or output step (seq2seq); None for classifiers.
    decoder_inputs: seq2seq teacher-forced decoder input [B,T_out] (starts with BOS).
    baselines: like ``inputs``; the reference for IG / DeepLift and the replacement for
        leave-one-out (pad/unk ids with special tokens kept in place; a black image).
    units_mask: [B,U] bool, True for real, rankable units (False: special tokens, padding).
    layer: the module attributed against (token / patch / source embedding).
    grid: (rows, cols) of the patch grid (classifier).
    pad_id: id appended when a token is deleted (leave-one-out "delete").
    """

    model: nn.Module
    kind: str
    inputs: Tensor
    targets: Tensor
    layer: nn.Module
    positions: Tensor | None = None
    decoder_inputs: Tensor | None = None
    baselines: Tensor | None = None
    units_mask: Tensor | None = None
    grid: tuple[int, int] | None = None
    pad_id: int = 0
    cls_token: bool = True  # classifier: key 0 of every attention map is CLS
    last_only: bool = field(default=False, init=False)  # lm: every position is the last one

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown query kind {self.kind!r}; one of {KINDS}")
        B = self.inputs.shape[0]
        if self.targets.shape != (B,):
            raise ValueError(f"targets must be [B] = [{B}], got {tuple(self.targets.shape)}")
        if self.kind != "classifier" and (self.positions is None or self.positions.shape != (B,)):
            raise ValueError(f"{self.kind} queries need positions [B] = [{B}]")
        if self.kind == "seq2seq" and self.decoder_inputs is None:
            raise ValueError("seq2seq queries need decoder_inputs [B,T_out]")
        if self.kind == "lm":
            T = self.inputs.shape[1]
            self.last_only = bool((self.positions == T - 1).all()) and _accepts(self.model, "last_only")
        if self.units_mask is None:
            self.units_mask = torch.ones(B, self.n_units, dtype=torch.bool, device=self.inputs.device)

    @property
    def batch_size(self) -> int:
        return int(self.inputs.shape[0])

    @property
    def n_units(self) -> int:
        """Input units per example: tokens, source tokens or patches."""
        if self.kind == "classifier":
            if self.grid is None:
                raise ValueError("classifier queries need grid=(rows, cols)")
            return self.grid[0] * self.grid[1]
        return int(self.inputs.shape[1])

    @property
    def device(self) -> torch.device:
        return self.inputs.device

    def select(self, index: Tensor | list[int]) -> Query:
        """The sub-batch of the given example indices."""
        idx = torch.as_tensor(index, dtype=torch.long, device=self.device)

        def pick(t: Tensor | None) -> Tensor | None:
            return None if t is None else t.index_select(0, idx)

        return replace(self, inputs=pick(self.inputs), targets=pick(self.targets), positions=pick(self.positions),
                       decoder_inputs=pick(self.decoder_inputs), baselines=pick(self.baselines),
                       units_mask=pick(self.units_mask))

    def forward_args(self) -> tuple[Tensor, ...]:
        """Extra arguments of :func:`score_forward` after the inputs (captum's additional_forward_args)."""
        if self.kind == "lm":
            return (self.positions, self.targets)  # type: ignore[return-value]
        if self.kind == "classifier":
            return (self.targets,)
        return (self.decoder_inputs, self.positions, self.targets)  # type: ignore[return-value]

    def forward_fn(self):
        """F as a function ``f(inputs, *forward_args()) -> [B]`` (what captum wraps)."""
        model, kind, last_only = self.model, self.kind, self.last_only

        if kind == "lm":
            def f_lm(ids: Tensor, positions: Tensor, targets: Tensor) -> Tensor:
                return _log_prob(_lm_rows(model, ids, positions, last_only), targets)
            return f_lm
        if kind == "classifier":
            def f_cls(images: Tensor, targets: Tensor) -> Tensor:
                logits = model(images)  # [B,C]
                return logits.gather(1, targets[:, None])[:, 0]
            return f_cls

        def f_s2s(src: Tensor, tgt_in: Tensor, positions: Tensor, targets: Tensor) -> Tensor:
            logits = model(src, tgt_in)  # [B,T,V]
            rows = logits[torch.arange(src.shape[0], device=src.device), positions]  # [B,V]
            return _log_prob(rows, targets)
        return f_s2s

    def score(self, inputs: Tensor | None = None) -> Tensor:
        """F for every example [B] (no gradient)."""
        with torch.no_grad():
            return self.forward_fn()(self.inputs if inputs is None else inputs, *self.forward_args())

    def output_rows(self, inputs: Tensor, positions: Tensor | None = None) -> Tensor:
        """The output logits being explained, [N,V] (or [N,classes]), for N inputs of this query's kind.

        ``positions`` overrides the query positions (leave-one-out "delete" shifts them);
        ``inputs`` may hold N = k·B rows: positions / decoder inputs are tiled to match.
        """
        n = inputs.shape[0]
        reps = n // self.batch_size
        if self.kind == "classifier":
            return self.model(inputs)
        pos = positions if positions is not None else self.positions.repeat(reps)  # type: ignore[union-attr]
        if self.kind == "lm":
            last = self.last_only and positions is None
            return _lm_rows(self.model, inputs, pos, last)
        tgt_in = self.decoder_inputs.repeat(reps, 1)  # type: ignore[union-attr]
        logits = self.model(inputs, tgt_in)  # [N,T,V]
        return logits[torch.arange(n, device=inputs.device), pos]

    def probs(self, inputs: Tensor | None = None, positions: Tensor | None = None) -> Tensor:
        """Output distribution being explained, [N,V] (softmax of :meth:`output_rows`), no gradient."""
        with torch.no_grad():
            return self.output_rows(self.inputs if inputs is None else inputs, positions).float().softmax(-1)


def _accepts(model: nn.Module, name: str) -> bool:
    try:
        return name in inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return False


def _lm_rows(model: nn.Module, ids: Tensor, positions: Tensor, last_only: bool) -> Tensor:
    """Logits at each example's position: [B,V]."""
    if last_only:
        return model(ids, last_only=True)[:, -1]  # [B,V]
    logits = model(ids)  # [B,T,V]
    return logits[torch.arange(ids.shape[0], device=ids.device), positions]


def _log_prob(rows: Tensor, targets: Tensor) -> Tensor:
    return rows.float().log_softmax(-1).gather(1, targets[:, None])[:, 0]  # [B]


def check_same_kind(*queries: Query) -> None:
    kinds = {q.kind for q in queries}
    if len(kinds) > 1:
        raise PlaygroundError(f"Cannot combine queries of different kinds {sorted(kinds)}.")
