"""Evaluation batches for head analysis, built from a family's prepared validation data.

Each family's explainer says which builder fits its payload (`FamilyExplainer.head_data`);
these functions only batch and name the loss: (HeadData, the model's inputs per batch).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from playground.analysis.experiments.core import make_generator
from playground.analysis.heads.ablation import HeadData
from playground.errors import PlaygroundError

HeadBatches = tuple[HeadData, list[tuple]]


def chunks(n: int, size: int) -> list[slice]:
    """Consecutive slices of at most ``size`` covering 0..n-1."""
    return [slice(lo, min(n, lo + size)) for lo in range(0, n, size)]


def _lm_loss(model: nn.Module, batch: tuple[Tensor, Tensor]) -> Tensor:
    x, y = batch  # [B,T] each
    return F.cross_entropy(model(x).flatten(0, 1).float(), y.flatten())


def _class_loss(model: nn.Module, batch: tuple[Tensor, Tensor]) -> Tensor:
    inputs, labels = batch  # images [B,C,H,W] or token ids [B,T]; labels [B]
    return F.cross_entropy(model(inputs).float(), labels)


def lm_windows(payload: Any, n: int, seed: int, batch_size: int, device: str) -> HeadBatches:
    """``n`` seeded validation windows of the block size (next-token loss)."""
    T = payload.block_size
    high = len(payload.val) - T - 1
    if high < 1:
        raise PlaygroundError(f"The validation text has {len(payload.val)} tokens, too few for windows of {T}.")
    starts = torch.randint(high, (n,), generator=make_generator(seed))
    x, y = payload.windows("val", starts)  # [N,T] each
    batches = [(x[s].to(device), y[s].to(device)) for s in chunks(n, batch_size)]
    return HeadData(batches, _lm_loss), [(b[0],) for b in batches]


def labelled(inputs: Sequence[Tensor], labels: Sequence[Tensor]) -> HeadBatches:
    """Classification batches (inputs [B,...], labels [B]) with cross-entropy."""
    batches = list(zip(inputs, labels))
    return HeadData(batches, _class_loss), [(b[0],) for b in batches]


def seq2seq_pairs(payload: Any, n: int, batch_size: int, device: str) -> HeadBatches:
    """The first ``n`` validation pairs, teacher-forced (padding ignored in the loss)."""
    pad = payload.pad_id
    m = min(n, len(payload.val_src))
    batches = []
    for s in chunks(m, batch_size):
        b = payload.collate(payload.val_src[s], payload.val_tgt[s])
        batches.append(tuple(b[k].to(device) for k in ("src", "tgt_in", "tgt_out")))

    def loss(model: nn.Module, batch: tuple[Tensor, Tensor, Tensor]) -> Tensor:
        src, tgt_in, tgt_out = batch
        logits = model(src, tgt_in).float()  # [B,T,V]
        return F.cross_entropy(logits.flatten(0, 1), tgt_out.flatten(), ignore_index=pad)

    return HeadData(batches, loss), [b[:2] for b in batches]
