"""Shuffled training labels: the data side of Adebayo et al.'s (2018) data-label randomisation.

A model retrained on the training inputs with their labels permuted can only memorise; its
validation accuracy falls to chance. An explanation method whose maps look the same for that
model as for the trained one does not reflect what the model learned from its labels.

Only training labels are permuted (a seeded permutation, so every class keeps its count);
validation labels stay true, which is what shows the retrain worked (accuracy ≈ chance).
"""
from __future__ import annotations

import torch
from torch import Tensor

LABEL_SHUFFLE_SALT = 7919  # keeps the permutation apart from the split, which uses data.seed itself


def shuffled_labels(labels: Tensor, seed: int) -> Tensor:
    """``labels`` [N] in a seeded random order (a permutation of the same values, a new tensor)."""
    g = torch.Generator().manual_seed(int(seed) * 1_000_003 + LABEL_SHUFFLE_SALT)
    order = torch.randperm(labels.shape[0], generator=g)  # [N]
    return labels[order.to(labels.device)].clone()


__all__ = ["shuffled_labels"]
