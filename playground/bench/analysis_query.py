"""The per-input analysis as `bench analyze` times it on one of our GPTs: the query and the whole set
of methods the app runs (shared by the tiny and the GPT-2-sized benches)."""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import torch

from playground.analysis.explain import attention as am
from playground.analysis.explain import attributions as at
from playground.analysis.query import Query
from playground.families import get_family

BASELINE_ID = 0


def gpt_query(model: torch.nn.Module, ids: torch.Tensor, target: int) -> Any:
    """The analyzer's query for the next token `target` after `ids` [1,T] on one of our GPTs."""
    gpt = get_family("gpt")
    T = ids.shape[1]
    return Query(model, gpt.explainer, ids, torch.tensor([target], device=ids.device), gpt.input_embedding(model),
                 positions=torch.tensor([T - 1], device=ids.device), baselines=torch.full_like(ids, BASELINE_ID),
                 pad_id=BASELINE_ID)


def whole_analysis(q: Any, steps: int, parts: dict[str, tuple[float, float]] | None = None) -> Callable[[], None]:
    """Our per-input set on one query, as the app runs it: attention + rollout + IG + LOO.

    ``parts``, when given, receives each run's (wall, CPU) seconds of "attention + rollout"
    (the recorded forward and both views), "ig" and "loo": what the like-for-like lines print.
    """
    def timed(name: str, fn: Callable[[], Any]) -> None:
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        if parts is not None:
            parts[name] = (time.perf_counter() - t0, time.process_time() - c0)

    def views() -> None:
        r = am.record(q)
        am.attention(q, r)
        am.rollout(q, r)

    def whole() -> None:
        timed("attention + rollout", views)
        timed("ig", lambda: at.integrated_gradients(q, steps, auto_steps=False))
        timed("loo", lambda: at.leave_one_out(q, "replace"))

    return whole
