"""Timing helpers for the lessons that measure on the server (attention cost, seq2seq throughput)."""
from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import torch


@contextmanager
def one_thread() -> Iterator[None]:
    """Torch on one CPU thread for the block (restored after): on a busy shared CPU a thread pool
    waits on its slowest thread, which can make a small op 100× slower and the timings noise."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def best_seconds(fn: Callable[[], object], repeats: int = 2) -> float:
    """The fastest of `repeats` calls of `fn`, in seconds."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best
