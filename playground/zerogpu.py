"""ZeroGPU on Hugging Face Spaces: what the `spaces` package does, and the GPU time a job asks for.

Read from the `spaces` package's source (spaces/zero/wrappers.py, client.py): on a ZeroGPU Space
(SPACES_ZERO_GPU set) `spaces.GPU(fn, duration=...)` returns a wrapper that, when called,

1. reads the gradio request from gradio's context variable (`LocalContext.request`, no default
   outside a request) and with it the visitor's `X-IP-Token`;
2. evaluates `duration` — a number, or a callable given the call's own arguments — and asks the
   scheduler for that many seconds, checked against what is left of the visitor's daily quota;
3. pickles the arguments into its own forked worker, runs `fn` there with the GPU attached, and
   pickles back the return value or, for a generator function, each yield (a closed generator
   closes the worker's after its next yield).

Off ZeroGPU `spaces.GPU` returns `fn` itself. So the served app makes such calls only from a
handler's thread (never from its child processes, which have no request), passes and yields only
picklable plain data, asks for a duration computed from the job's cost and capped by the quota,
and makes the job stop (and save) before that duration ends (`playground.ui.gpu_calls`).

This module is pure (no gradio, no torch): the quotas, the estimates, and `gpu()`, which decorates
with `spaces.GPU` where the package is installed.
"""
from __future__ import annotations

import importlib
import importlib.util
import math
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

# Daily ZeroGPU quotas of a Space's visitors (huggingface.co/docs/hub/spaces-zerogpu): an anonymous
# visitor has 120 s a day, a signed-in free account 300 s (Pro accounts more: not counted on).
ANON_QUOTA_S = 120
SIGNED_IN_QUOTA_S = 300
MIN_CALL_S = 5  # the shortest duration asked for
STARTUP_S = 15.0  # a call's fixed cost: the worker's start, CUDA init, loading data and model
SAVE_MARGIN_S = 10.0  # a training stops this long before its GPU time ends, so its checkpoint is written
STEP_FLOOR_S = 0.025  # a small model's training step (its share of evaluations included) is bound by
# kernel launches and Python, not FLOPs: a generous guess until this Space has measured the model
GPU_FLOPS = 2e13  # FLOP/s a small fp32 training reaches on a ZeroGPU slice (a conservative guess)
GENERATE_START_S = 3.0  # a generation's fixed cost (the worker is warm; the model is small)
GENERATE_TOKEN_S = 0.02  # one generated token of one row, beam or sample (launch-bound, generous)
ANALYSIS_S = 20.0  # one per-input analysis (the methods over one input)
EXPERIMENT_EXAMPLE_S = 2.0  # one example of an attention-explanation experiment


def spaces_module() -> Any | None:
    """The `spaces` module when it is installed, else None (never raises)."""
    try:
        if importlib.util.find_spec("spaces") is None:
            return None
        return importlib.import_module("spaces")
    except Exception:  # noqa: BLE001 - a broken or partial install behaves as absent
        return None


def gpu(duration: int | Callable[..., int]) -> Callable[[F], F]:
    """Decorator: `spaces.GPU(duration=duration)` where `spaces` is importable, else the identity.
    `duration` is seconds, or a callable given the decorated call's arguments that returns them."""
    if not callable(duration) and (not isinstance(duration, int) or duration <= 0):
        raise ValueError(f"gpu(duration=...) takes a positive number of seconds or a callable, got {duration!r}")
    spaces = spaces_module()
    if spaces is None or not hasattr(spaces, "GPU"):
        return _identity
    return spaces.GPU(duration=duration)


def _identity(fn: F) -> F:
    return fn


def quota_s(user_key: str | None) -> int:
    """The daily GPU seconds of whoever owns the space `user_key`: a login (`u-…`, Hugging Face or
    --auth) has the signed-in quota, anyone else the anonymous one."""
    return SIGNED_IN_QUOTA_S if isinstance(user_key, str) and user_key.startswith("u-") else ANON_QUOTA_S


def call_seconds(estimate_s: float, quota: int) -> int:
    """The duration to ask for: the estimate rounded up, at least MIN_CALL_S, at most the quota."""
    return max(MIN_CALL_S, min(int(quota), math.ceil(estimate_s)))


def step_seconds(flops_per_step: float | None, measured_s: float | None = None) -> float:
    """Seconds per training step: a measured time where there is one, else FLOPs over GPU_FLOPS,
    never below the launch-bound floor."""
    if measured_s is not None and measured_s > 0:
        return max(STEP_FLOOR_S, measured_s)
    return max(STEP_FLOOR_S, (flops_per_step or 0.0) / GPU_FLOPS)


def training_seconds(steps: int, step_s: float) -> float:
    """GPU seconds a training of `steps` steps needs, start-up and the final save included."""
    return STARTUP_S + max(0, steps) * step_s + SAVE_MARGIN_S


def steps_within(quota: int, step_s: float) -> int:
    """How many steps fit in one call of `quota` seconds (the rest waits for a Resume)."""
    return max(0, int((quota - STARTUP_S - SAVE_MARGIN_S) / step_s))


def generate_seconds(max_new_tokens: int, rows: int, quota: int) -> int:
    """The duration of one generation: `rows` (samples x beams) rows of `max_new_tokens` tokens."""
    return call_seconds(GENERATE_START_S + max(1, max_new_tokens) * max(1, rows) * GENERATE_TOKEN_S, quota)


def experiment_seconds(examples: int, quota: int) -> int:
    """The duration of one experiment over `examples` examples."""
    return call_seconds(STARTUP_S + max(1, examples) * EXPERIMENT_EXAMPLE_S, quota)


__all__ = ["ANALYSIS_S", "ANON_QUOTA_S", "SAVE_MARGIN_S", "SIGNED_IN_QUOTA_S", "STARTUP_S", "call_seconds",
           "experiment_seconds", "generate_seconds", "gpu", "quota_s", "spaces_module", "step_seconds",
           "steps_within", "training_seconds"]
