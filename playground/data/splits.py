"""Deterministic train/validation splits: shuffled indices for example sets, head/tail for text."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import TypeVar

from playground.errors import ConfigError, DataError

__all__ = ["split_indices", "split_text", "min_tokens_for_block"]

T = TypeVar("T")


def _check_fraction(val_fraction: float) -> None:
    if not 0.0 <= val_fraction < 1.0:
        raise ConfigError(f"val_fraction must be in [0, 1), got {val_fraction}")


def split_indices(n: int, val_fraction: float, seed: int) -> tuple[list[int], list[int]]:
    """Seeded random split of ``range(n)`` into (train, val) index lists, each sorted.

    n_val = round(n * val_fraction), at least 1 when val_fraction > 0; train keeps at least one.
    """
    _check_fraction(val_fraction)
    if n < 0:
        raise ConfigError(f"n must be >= 0, got {n}")
    n_val = 0 if val_fraction == 0 else max(1, round(n * val_fraction))
    if n_val >= n and n_val > 0:
        raise DataError(f"only {n} examples: cannot keep {n_val} for validation and still train; "
                        f"add examples or lower val_fraction")
    perm = list(range(n))
    random.Random(seed).shuffle(perm)
    return sorted(perm[n_val:]), sorted(perm[:n_val])


def _n_train(n: int, val_fraction: float) -> int:
    return int(n * (1.0 - val_fraction))


def min_tokens_for_block(block_size: int, val_fraction: float) -> int:
    """Smallest corpus length whose head/tail split gives each non-empty part block_size + 1 items."""
    _check_fraction(val_fraction)
    need = block_size + 1
    if val_fraction == 0:
        return need
    # lower bounds: train <= n * (1 - f) and val <= n * f + 1; step up from there
    n = max(math.floor(need / (1 - val_fraction)), math.floor((need - 1) / val_fraction)) - 2
    n = max(n, need)
    while not (_n_train(n, val_fraction) >= need and n - _n_train(n, val_fraction) >= need):
        n += 1
    return n


def split_text(data: Sequence[T] | str, val_fraction: float = 0.1,
               block_size: int | None = None) -> tuple[Sequence[T] | str, Sequence[T] | str]:
    """Head/tail split like nanoGPT: the first int(N * (1 - val_fraction)) items train, the rest val.

    ``data`` is a string (characters), a list of token ids or a 1-D tensor; the parts have the same
    type. With ``block_size`` set, each non-empty part must hold at least block_size + 1 items
    (one input block plus its shifted target) or a DataError says how much text is missing.
    """
    _check_fraction(val_fraction)
    n = len(data)
    cut = _n_train(n, val_fraction)
    train, val = data[:cut], data[cut:]
    if block_size is not None:
        if block_size < 1:
            raise ConfigError(f"block_size must be >= 1, got {block_size}")
        need = block_size + 1
        if len(train) < need or (val_fraction > 0 and len(val) < need):
            unit = "characters" if isinstance(data, str) else "tokens"
            least = min_tokens_for_block(block_size, val_fraction)
            raise DataError(
                f"corpus has {n} {unit}; block size {block_size} needs at least {least} "
                f"({need} in the training part and {need if val_fraction > 0 else 0} in the "
                f"validation part at val_fraction {val_fraction}); lower block_size or add text")
    return train, val
