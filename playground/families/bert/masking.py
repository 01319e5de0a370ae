"""BERT's masked-language-model corruption (the 80/10/10 rule), seeded.

Of the positions that are not special tokens, each is *selected* with probability
``select`` (15%). A selected position becomes [MASK] with probability ``to_mask`` (80%), a token
drawn uniformly from ``candidates`` (the non-special vocabulary) with probability ``to_random``
(10%), and stays itself otherwise (10%). The loss reads only the selected positions: their labels
are the original ids, every other label is ``IGNORE`` (-100, what cross-entropy skips).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from playground.errors import ConfigError

IGNORE = -100


@dataclass(frozen=True)
class MaskRule:
    """The selection probability and how a selected position is corrupted."""

    select: float = 0.15
    to_mask: float = 0.8
    to_random: float = 0.1

    def __post_init__(self) -> None:
        if not 0.0 < self.select < 1.0:
            raise ConfigError(f"data.mask_prob must be in (0, 1), got {self.select}.")
        if self.to_mask < 0 or self.to_random < 0 or self.to_mask + self.to_random > 1.0:
            raise ConfigError("data.mask_token_share and data.random_token_share must be >= 0 and sum to at most 1 "
                              f"(the rest stays unchanged), got {self.to_mask} and {self.to_random}.")


def mask_tokens(ids: Tensor, special: Tensor, mask_id: int, candidates: Tensor, generator: torch.Generator,
                rule: MaskRule = MaskRule()) -> tuple[Tensor, Tensor]:
    """Corrupt ``ids`` [B,T] by the rule; ``special`` [B,T] bool marks positions never selected
    ([CLS], [SEP], [PAD]); ``candidates`` [K] are the ids a random replacement is drawn from.

    Returns (inputs [B,T], labels [B,T]: the original id where selected, IGNORE elsewhere).
    A row with eligible positions but none drawn gets one selected at random, so every batch
    has a loss."""
    u = torch.rand(ids.shape, generator=generator)  # [B,T] selection draws
    eligible = ~special
    selected = (u < rule.select) & eligible
    empty = eligible.any(1) & ~selected.any(1)  # [B]
    if empty.any():
        pick = torch.rand(ids.shape, generator=generator).masked_fill(~eligible, -1.0).argmax(1)  # [B]
        rows = empty.nonzero().flatten()
        selected[rows, pick[rows]] = True
    how = torch.rand(ids.shape, generator=generator)  # [B,T] which corruption
    to_mask = selected & (how < rule.to_mask)
    to_random = selected & (how >= rule.to_mask) & (how < rule.to_mask + rule.to_random)
    random_ids = candidates[torch.randint(len(candidates), ids.shape, generator=generator)]  # [B,T]
    inputs = torch.where(to_mask, torch.full_like(ids, mask_id), ids)
    inputs = torch.where(to_random, random_ids, inputs)
    labels = torch.where(selected, ids, torch.full_like(ids, IGNORE))
    return inputs, labels
