"""The per-input analysis as `bench analyze` times it on one of our GPTs: the query and the whole set
of methods the app runs (shared by the tiny and the GPT-2-sized benches)."""
from __future__ import annotations

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


def whole_analysis(q: Any, steps: int) -> Callable[[], None]:
    """Our per-input set on one query, as the app runs it: attention + rollout + IG + LOO."""
    def whole() -> None:
        r = am.record(q)
        am.attention(q, r)
        am.rollout(q, r)
        at.integrated_gradients(q, steps, auto_steps=False)
        at.leave_one_out(q, "replace")

    return whole
