"""ZeroGPU on Hugging Face Spaces: `@gpu(duration=...)` is `@spaces.GPU(duration=...)` where the
`spaces` package is importable, and does nothing anywhere else.

On a ZeroGPU Space a GPU is attached only while a function decorated with `spaces.GPU` runs;
off ZeroGPU (and `spaces` itself is a no-op there) the functions run as they are. Decorate
heavy entry points whose results come back as return values or yields (spaces drops a
generator's `return` value, so decorate a generator only when its callers ignore that).
"""
from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

# Seconds of GPU time asked for per call (ZeroGPU queues shorter requests first).
TRAIN_S = 300  # one training run (demo caps stop at 1000 steps)
EXPERIMENT_S = 240  # one attention-explanation experiment
ANALYSIS_S = 60  # one per-input analysis


def spaces_module() -> Any | None:
    """The `spaces` module when it is installed, else None (never raises)."""
    try:
        if importlib.util.find_spec("spaces") is None:
            return None
        return importlib.import_module("spaces")
    except Exception:  # a broken or partial install behaves as absent
        return None


def gpu(duration: int) -> Callable[[F], F]:
    """Decorator: `spaces.GPU(duration=duration)` when `spaces` is importable, else the identity."""
    if not isinstance(duration, int) or duration <= 0:
        raise ValueError(f"gpu(duration=...) takes a positive number of seconds, got {duration!r}")
    spaces = spaces_module()
    if spaces is None or not hasattr(spaces, "GPU"):
        return _identity
    return spaces.GPU(duration=duration)


def _identity(fn: F) -> F:
    return fn


__all__ = ["ANALYSIS_S", "EXPERIMENT_S", "TRAIN_S", "gpu", "spaces_module"]
