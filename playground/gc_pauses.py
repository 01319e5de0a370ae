"""Short garbage-collector pauses on a long-running server.

CPython's cyclic garbage collector stops every thread while it walks the objects it tracks, and
a full (generation-2) collection walks all of them. Most of a server's objects are the ones its
imports and start-up made (gradio, torch, pandas, the app's Blocks: about 390,000 here), which
live as long as the process, so every full collection walked them again for nothing: 273-303 ms
with every request stalled, a few times a minute while twenty users generate (2-core machine,
timed with a `gc.callbacks` hook in the server). `freeze_startup_heap()`, called once the server
is up, moves everything alive at that moment into the permanent generation, which no collection
walks (`gc.freeze`); whatever is made later is collected as before (full collections then took
49-58 ms in the same measurement: modules that handlers import on first use, models, sessions).

A few unreachable objects left over from start-up are frozen with the rest (a full collection at
that point found 252 of them): a one-off few kilobytes, not worth the 0.2 s that collecting them
first would add to a start whose goal is 5 s.
"""
from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


def freeze_startup_heap() -> int:
    """Exempt every object alive now from later collections (cheap: no walk); how many are frozen."""
    gc.freeze()
    return gc.get_freeze_count()


@contextmanager
def frozen_heap() -> Iterator[int]:
    """`freeze_startup_heap()` for the block, then back to normal (`gc.unfreeze`): for a
    benchmark's client process, whose own full collections (~0.2 s with torch and gradio
    imported) would otherwise stall the latencies it measures."""
    try:
        yield freeze_startup_heap()
    finally:
        gc.unfreeze()
