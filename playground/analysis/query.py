"""What to explain: a batch of inputs, each with its output position and target.

A :class:`Query` is the one object every method takes. It is batched (B examples, each with
its own position and target), so the dataset-level experiments can reuse the per-input
methods on many examples at once; the per-input analysis is simply B = 1 (or B = number of
output tokens for the seq2seq target x source matrices).

The scalar F explained for each example is the family's (playground.analysis.explainer):
the query carries its family's :class:`~playground.analysis.explainer.FamilyExplainer`, which
says what F is (log p(target) at a position, a class logit, a teacher-forced log p(y_t)) and
what the input units are (tokens, patches, source tokens).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

import torch
from torch import Tensor, nn

from playground.analysis.divergences import wide
from playground.analysis.explainer import FamilyExplainer


@dataclass
class Query:
    """B examples to explain (all tensors on the model's device).

    explainer: the model's family's (``get_family(name).explainer``): what F and the units are.
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
    explainer: FamilyExplainer
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
    last_only: bool = field(default=False, init=False)  # every position is the last one (lm)

    def __post_init__(self) -> None:
        B = self.inputs.shape[0]
        if self.targets.shape != (B,):
            raise ValueError(f"targets must be [B] = [{B}], got {tuple(self.targets.shape)}")
        self.explainer.check(self)
        self.last_only = self.explainer.last_only(self)
        if self.units_mask is None:
            self.units_mask = torch.ones(B, self.n_units, dtype=torch.bool, device=self.inputs.device)

    @property
    def kind(self) -> str:
        """The task ("lm", "classifier", "seq2seq"), as results record it."""
        return self.explainer.kind

    @property
    def batch_size(self) -> int:
        return int(self.inputs.shape[0])

    @property
    def n_units(self) -> int:
        """Input units per example: tokens, source tokens or patches."""
        return self.explainer.n_units(self)

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
        """Extra arguments of :meth:`forward_fn` after the inputs (captum's additional_forward_args)."""
        return self.explainer.forward_args(self)

    def forward_fn(self) -> Callable[..., Tensor]:
        """F as a function ``f(inputs, *forward_args()) -> [B]`` (what captum wraps)."""
        return self.explainer.score_fn(self)

    def score(self, inputs: Tensor | None = None) -> Tensor:
        """F for every example [B] (no gradient)."""
        with torch.no_grad():
            return self.forward_fn()(self.inputs if inputs is None else inputs, *self.forward_args())

    def output_rows(self, inputs: Tensor, positions: Tensor | None = None) -> Tensor:
        """The output logits being explained, [N,V] (or [N,classes]), for N inputs like this query's.

        ``positions`` overrides the query positions (leave-one-out "delete" shifts them);
        ``inputs`` may hold N = k·B rows: positions / decoder inputs are tiled to match.
        """
        reps = inputs.shape[0] // self.batch_size
        pos = positions if positions is not None else None if self.positions is None else self.positions.repeat(reps)
        dec = None if self.decoder_inputs is None else self.decoder_inputs.repeat(reps, 1)
        return self.explainer.output_rows(self, inputs, pos, dec, self.last_only and positions is None)

    def probs(self, inputs: Tensor | None = None, positions: Tensor | None = None) -> Tensor:
        """Output distribution being explained, [N,V] (softmax of :meth:`output_rows`), no gradient."""
        with torch.no_grad():
            return wide(self.output_rows(self.inputs if inputs is None else inputs, positions)).softmax(-1)
