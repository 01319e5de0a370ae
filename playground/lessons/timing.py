"""Timing helpers for the lessons that measure on the server (attention cost, seq2seq throughput)."""
from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from playground.torch_threads import threads_here


@contextmanager
def one_thread() -> Iterator[None]:
    """Torch on one CPU thread for the block, in the calling thread only (restored after): on a
    busy shared CPU a thread pool waits on its slowest thread, which can make a small op 100×
    slower and the timings noise. Other users' threads keep their counts."""
    with threads_here(1):
        yield


def best_seconds(fn: Callable[[], object], repeats: int = 2) -> float:
    """The fastest of `repeats` calls of `fn`, in seconds."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best
