"""The plain records the data modules pass around (kept apart so the makers and loaders can
import them without importing each other)."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from playground.errors import DataError


@dataclass
class PairExample:
    """One source/target pair, optionally with gold (target index, source index) alignment."""

    src: str
    tgt: str
    alignment: list[tuple[int, int]] | None = None


@dataclass
class ImageSet:
    """Images [N, C, H, W] float32 in [0, 1], labels [N] int64, optional object masks [N, H, W] bool."""

    images: torch.Tensor
    labels: torch.Tensor
    class_names: list[str]
    masks: torch.Tensor | None = None

    def __post_init__(self) -> None:
        if self.images.ndim != 4 or self.images.shape[0] != self.labels.shape[0]:
            raise DataError(f"images must be [N, C, H, W] with one label each, got "
                            f"{tuple(self.images.shape)} and {tuple(self.labels.shape)} labels")

    @property
    def n(self) -> int:
        return int(self.images.shape[0])

    @property
    def channels(self) -> int:
        return int(self.images.shape[1])

    @property
    def image_size(self) -> int:
        return int(self.images.shape[2])

    def subset(self, idx: Sequence[int]) -> ImageSet:
        """The examples at ``idx``, in that order (class_names unchanged)."""
        index = torch.as_tensor(list(idx), dtype=torch.long)
        return ImageSet(images=self.images[index], labels=self.labels[index],
                        class_names=list(self.class_names),
                        masks=None if self.masks is None else self.masks[index])
