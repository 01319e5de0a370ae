"""The measurement behind loss-per-position: mean next-token loss at each position of a language
model, also past block_size (used by the position-extrapolation claim and `analysis.length`)."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn


def loss_by_position(model: nn.Module, tokens: Tensor, length: int, windows: int, batch: int = 16) -> list[float]:
    """Mean next-token loss at each position 0 .. length - 1: `windows` windows of length + 1
    tokens spread evenly over `tokens` [N], each read from position 0 (``forward_beyond``, so
    past block_size when the positions allow)."""
    device = next(model.parameters()).device
    starts = torch.linspace(0, len(tokens) - length - 2, windows).long()  # [W], evenly spread
    idx = starts[:, None] + torch.arange(length + 1)  # [W, L+1]
    total = torch.zeros(length, dtype=torch.float64)
    with torch.inference_mode():
        for chunk in idx.split(batch):
            seq = tokens[chunk].to(device)  # [b, L+1]
            logits = model.forward_beyond(seq[:, :-1])  # [b, L, V]
            loss = F.cross_entropy(logits.float().transpose(1, 2), seq[:, 1:], reduction="none")  # [b, L]
            total += loss.double().sum(0).cpu()
    return (total / windows).tolist()
