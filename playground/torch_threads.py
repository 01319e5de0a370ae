"""Torch's intra-op thread count for one Python thread, leaving every other thread's as it is.

`torch.set_num_threads(n)` does two things: it sets the calling thread's own OpenMP/MKL count,
and it sets the process-wide count that a thread adopts the first time it runs a parallel op.
A server thread that wants one thread for itself (a generation worker, a timing lesson) must
not leave that second one changed: every request thread started later would run on one thread
too. `set_here(n)` sets the calling thread's count, then puts the process-wide count back from
a short-lived thread of its own (whose own count does not matter: it ends at once).

What is left: a thread that runs its very first parallel op in the instant between the two
calls starts with `n`. The calls are serialised by a lock, so two threads setting their counts
at once cannot restore each other's value as the default.
"""
from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import torch

_lock = threading.Lock()


def process_default() -> int:
    """The intra-op count a new thread starts with (read from a fresh thread)."""
    box: list[int] = []
    reader = threading.Thread(target=lambda: box.append(torch.get_num_threads()), name="torch-threads-read")
    reader.start()
    reader.join()
    return box[0]


def set_here(n: int) -> int:
    """Give the calling thread `n` intra-op threads; the process-wide default is left unchanged.
    Returns the calling thread's previous count."""
    if n < 1:
        raise ValueError(f"a thread needs at least 1 intra-op thread, got {n}")
    with _lock:
        default = process_default()
        before = torch.get_num_threads()
        torch.set_num_threads(n)  # this thread's count (and, for the moment, the default)
        if n != default:
            restorer = threading.Thread(target=torch.set_num_threads, args=(default,), name="torch-threads-restore")
            restorer.start()
            restorer.join()
    return before


@contextmanager
def threads_here(n: int) -> Iterator[None]:
    """The calling thread on `n` intra-op threads for the block, then back to its own count."""
    before = set_here(n)
    try:
        yield
    finally:
        set_here(before)
