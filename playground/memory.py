"""Give freed memory back to the operating system on a long-running, many-threaded server.

glibc's malloc gives each thread that allocates its own arena (up to 8 per core) and keeps
freed pages in them, so a server whose worker threads each trained a model once holds that
memory long after the jobs ended: RSS only grows. Two standard remedies, no-ops where the C
library is not glibc:

- `limit_arenas(n)` (mallopt M_ARENA_MAX, what MALLOC_ARENA_MAX=n does) before threads start;
- `release_free_memory()` (malloc_trim(0)) after a big job, returning free heap pages.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
import logging

M_ARENA_MAX = -8  # glibc's mallopt parameter number
log = logging.getLogger(__name__)


@functools.cache
def _libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    if not name:
        return None
    try:
        libc = ctypes.CDLL(name)
        libc.malloc_trim  # noqa: B018 - the lookup raises AttributeError where only glibc has it
        libc.mallopt  # noqa: B018 - as above
    except (OSError, AttributeError):
        return None
    return libc


def limit_arenas(n: int = 2) -> bool:
    """Cap malloc arenas at `n` (call before worker threads start); True if it took effect."""
    libc = _libc()
    return bool(libc is not None and libc.mallopt(M_ARENA_MAX, int(n)) == 1)


def release_free_memory() -> bool:
    """Return free heap pages to the OS (glibc malloc_trim); True if any memory was released."""
    libc = _libc()
    if libc is None:
        return False
    try:
        return bool(libc.malloc_trim(0))
    except OSError:  # pragma: no cover - a libc without it was ruled out above
        log.debug("malloc_trim failed", exc_info=True)
        return False
