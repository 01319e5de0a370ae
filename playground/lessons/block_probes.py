"""Live probes for the block-parts lesson: where the norm sits (pre vs post) at initialisation, and
what attention costs in memory and time as the sequence grows (explicit T×T path vs fused kernel).

Both run small, seeded and capped; everything here is measured on the machine that runs it.
"""
from __future__ import annotations

import math
import time

import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn
from torch.profiler import ProfilerActivity, profile

from playground.families import build_model
from playground.lessons.timing import one_thread

# The pre/post-LN probe: a small GPT of `depth` blocks at init, one batch of random tokens.
PROBE_WIDTH, PROBE_HEADS, PROBE_VOCAB, PROBE_SEQ, PROBE_BATCH = 64, 4, 64, 32, 4
# The attention-cost probe: one sequence, a few heads of a typical size.
COST_BATCH, COST_HEADS, COST_HEAD_DIM = 1, 4, 64
FLOAT_BYTES = 4  # fp32


def _reinit_xavier(model: nn.Module) -> None:
    """Xavier-normal linear weights and unit-variance embeddings (the setting Xiong et al. 2020 analyse)."""
    for module in model.modules():
        if isinstance(module, nn.Linear):
            nn.init.xavier_normal_(module.weight)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, std=1.0)


def norm_placement_probe(depth: int, init: str, seed: int = 0) -> pd.DataFrame:
    """Per block of a fresh GPT (pre- and post-LN, same seed): the RMS of its output and the
    gradient norm of its parameters after one backward pass of a next-token loss on random tokens.

    init: "xavier" (Xavier weights, unit embeddings) or "gpt2" (the app's own GPT-2 init, small
    residual branches). Columns: placement, layer (1-based), activation_rms, grad_norm.
    """
    rows = []
    for placement in ("pre", "post"):
        torch.manual_seed(seed)
        model = build_model("gpt", {"vocab_size": PROBE_VOCAB, "block_size": PROBE_SEQ, "n_layer": depth,
                                    "n_head": PROBE_HEADS, "d_model": PROBE_WIDTH, "norm_placement": placement,
                                    "tie_embeddings": False})
        if init == "xavier":
            _reinit_xavier(model)
        rms: list[float] = []

        def record(_module: nn.Module, _inputs: object, out: torch.Tensor, into: list[float] = rms) -> None:
            into.append(float(out.detach().pow(2).mean().sqrt()))  # out [B,T,D]

        hooks = [block.register_forward_hook(record) for block in model.blocks]
        gen = torch.Generator().manual_seed(seed + 1)
        idx = torch.randint(0, PROBE_VOCAB, (PROBE_BATCH, PROBE_SEQ), generator=gen)  # [B,T]
        target = torch.randint(0, PROBE_VOCAB, (PROBE_BATCH, PROBE_SEQ), generator=gen)  # [B,T]
        logits = model(idx)  # [B,T,V]
        F.cross_entropy(logits.reshape(-1, PROBE_VOCAB), target.reshape(-1)).backward()
        for hook in hooks:
            hook.remove()
        for layer, block in enumerate(model.blocks):
            grad = math.sqrt(sum(float(p.grad.pow(2).sum()) for p in block.parameters() if p.grad is not None))
            rows.append({"placement": f"{placement}-LN", "layer": layer + 1, "activation_rms": rms[layer],
                         "grad_norm": grad})
    return pd.DataFrame(rows)


def _explicit(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """softmax(QKᵀ/√d) V with the T×T scores and weights as tensors: q, k, v [B,h,T,d] -> [B,h,T,d]."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # [B,h,T,T]
    weights = scores.softmax(-1)  # [B,h,T,T]
    return weights @ v  # [B,h,T,d]


def _fused(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """The same through torch's fused kernel (no T×T tensor handed back to Python)."""
    return F.scaled_dot_product_attention(q, k, v)  # [B,h,T,d]


def _allocated_and_seconds(fn, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> tuple[int, float]:
    """Bytes the call allocates in all (torch profiler, top-level ops summed: not the peak) and its
    wall time in seconds (a second, unprofiled call)."""
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn(q, k, v)
    allocated = sum(max(int(e.cpu_memory_usage), 0) for e in prof.events() if e.cpu_parent is None)
    start = time.perf_counter()
    fn(q, k, v)
    return allocated, time.perf_counter() - start


def score_matrix_bytes(batch: int, heads: int, length: int) -> int:
    """One fp32 T×T matrix per head and sequence: B · h · T² · 4 bytes."""
    return batch * heads * length * length * FLOAT_BYTES


def attention_cost(lengths: list[int], seed: int = 0) -> pd.DataFrame:
    """For each T: the bytes of one T×T score matrix (computed), the bytes each path allocates and
    its time (measured here, on one CPU thread). Columns: T, score_matrix_bytes, explicit_bytes, fused_bytes,
    explicit_ms, fused_ms, max_abs_diff (the two outputs agree)."""
    gen = torch.Generator().manual_seed(seed)
    rows = []
    with torch.inference_mode(), one_thread():
        for length in lengths:
            shape = (COST_BATCH, COST_HEADS, length, COST_HEAD_DIM)
            q, k, v = (torch.randn(shape, generator=gen) for _ in range(3))  # [B,h,T,d] each
            explicit_bytes, explicit_s = _allocated_and_seconds(_explicit, q, k, v)
            fused_bytes, fused_s = _allocated_and_seconds(_fused, q, k, v)
            diff = float((_explicit(q, k, v) - _fused(q, k, v)).abs().max())
            rows.append({"T": length, "score_matrix_bytes": score_matrix_bytes(COST_BATCH, COST_HEADS, length),
                         "explicit_bytes": explicit_bytes, "fused_bytes": fused_bytes,
                         "explicit_ms": explicit_s * 1e3, "fused_ms": fused_s * 1e3, "max_abs_diff": diff})
    return pd.DataFrame(rows)
