"""Torch ops per batch step: what a step costs on a GPU, counted on any device.

On a GPU a decode step of the demo GPT is bound by kernel launches, not arithmetic: its
matrices are tiny, so each op costs about one launch whatever the number of rows. What then
decides whether twenty users cost about what one does is how many ops a step dispatches, and
whether that grows with the users. This counts them, on the CPU as well as on a GPU: every
aten op a batch step dispatches on the worker's thread, views (which launch nothing)
excluded, for steps that ran only the decode pass and the draw (no window prefilled).

Not counted: the host-to-device copies of a step's tokens, positions and random numbers, made
by `torch.tensor(..., device=...)` outside the dispatcher (one each per step, whatever the
number of users), and prefills handed to the worker's helper thread (a decode-only step has none).
"""
from __future__ import annotations

import contextlib
import statistics
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from tokenizers import Tokenizer
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

from playground.generation.batching import GPTBatcher, stream_batched


class OpCounter(TorchDispatchMode):
    """Counts the aten ops dispatched inside it on this thread, views excluded (a dispatch mode:
    the hook torch's own FlopCounterMode is built on)."""

    def __init__(self) -> None:
        super().__init__()
        self.ops = 0

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        if not func.is_view:
            self.ops += 1
        return func(*args, **(kwargs or {}))


@dataclass
class StepOps:
    """Ops of the decode-only steps of one batch of users, and its forward passes."""

    users: int
    decode_ops: list[int] = field(default_factory=list)  # per step that prefilled no window
    decode_passes: int = 0  # one token per row, for every row in the batch
    prefill_passes: int = 0  # passes over windows: the prompts, and the windows after each jump

    @property
    def median_ops(self) -> float:
        return statistics.median(self.decode_ops) if self.decode_ops else 0.0


def count_step_ops(model: nn.Module, tokenizer: Tokenizer | None, requests: Sequence[dict[str, Any]]) -> StepOps:
    """Run `requests` (keyword arguments of `stream_batched`) at once through a fresh batcher of
    `model` and count the ops of each of its steps."""
    figures = StepOps(users=len(requests))
    batcher: GPTBatcher

    @contextlib.contextmanager
    def counted() -> Iterator[None]:
        before = batcher.prefill_passes
        with OpCounter() as counter:
            yield
        if batcher.prefill_passes == before:
            figures.decode_ops.append(counter.ops)

    batcher = GPTBatcher(model, idle_s=5.0, step_context=counted)

    def one(request: dict[str, Any]) -> None:
        for _ in stream_batched(model, tokenizer, batcher=batcher, **request):
            pass

    try:
        with ThreadPoolExecutor(max_workers=len(requests)) as pool:
            list(pool.map(one, requests))
    finally:
        batcher.close()
    figures.decode_passes, figures.prefill_passes = batcher.decode_passes, batcher.prefill_passes
    return figures
