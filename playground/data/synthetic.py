"""Synthetic sequence tasks over a small alphabet: copy, reverse, sort.

Strings are written without separators and tokenized per character, so the gold alignment is
exact: target position t came from source position ``alignment[t][1]``.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from playground.data.types import PairExample
from playground.errors import ConfigError

__all__ = ["make_copy", "make_reverse", "make_sort", "DEFAULT_ALPHABET"]

DEFAULT_ALPHABET = "abcdefghij"


def _check(n: int, min_len: int, max_len: int, alphabet: str) -> None:
    if n < 0:
        raise ConfigError(f"n must be >= 0, got {n}")
    if not 1 <= min_len <= max_len:
        raise ConfigError(f"need 1 <= min_len <= max_len, got min_len={min_len}, max_len={max_len}")
    if len(alphabet) < 2 or len(set(alphabet)) != len(alphabet):
        raise ConfigError(f"alphabet needs at least 2 distinct characters and no repeats, got {alphabet!r}")
    if any(c.isspace() for c in alphabet):
        raise ConfigError("alphabet must not contain whitespace (the task is tokenized per character)")


def _make(n: int, seed: int, min_len: int, max_len: int, alphabet: str,
          order: Callable[[str], list[int]]) -> list[PairExample]:
    """Build pairs where target[t] = source[order(source)[t]]."""

    _check(n, min_len, max_len, alphabet)
    rng = random.Random(seed)
    out: list[PairExample] = []
    for _ in range(n):
        length = rng.randint(min_len, max_len)
        src = "".join(rng.choice(alphabet) for _ in range(length))
        perm = order(src)
        tgt = "".join(src[i] for i in perm)
        out.append(PairExample(src=src, tgt=tgt, alignment=[(t, s) for t, s in enumerate(perm)]))
    return out


def make_copy(n: int, seed: int, min_len: int = 3, max_len: int = 12,
              alphabet: str = DEFAULT_ALPHABET) -> list[PairExample]:
    """Copy task: target = source; gold alignment is the diagonal."""
    return _make(n, seed, min_len, max_len, alphabet, lambda s: list(range(len(s))))


def make_reverse(n: int, seed: int, min_len: int = 3, max_len: int = 12,
                 alphabet: str = DEFAULT_ALPHABET) -> list[PairExample]:
    """Reverse task: target = source reversed; gold alignment is the anti-diagonal."""
    return _make(n, seed, min_len, max_len, alphabet, lambda s: list(range(len(s) - 1, -1, -1)))


def make_sort(n: int, seed: int, min_len: int = 3, max_len: int = 12,
              alphabet: str = DEFAULT_ALPHABET) -> list[PairExample]:
    """Sort task: target = characters sorted by their rank in ``alphabet``.

    Gold alignment follows a stable sort: equal characters keep their source order.
    """
    rank = {c: i for i, c in enumerate(alphabet)}
    return _make(n, seed, min_len, max_len, alphabet,
                 lambda s: sorted(range(len(s)), key=lambda i: (rank[s[i]], i)))
