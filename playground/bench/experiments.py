"""`python -m playground bench experiments`: speed of the dataset-level permutation experiment, beside a peer measured in the same run.

Model: nanogpt-cpu-tiny-sized GPT (4 layers, 4 heads, d 128, block 64, a 65-symbol character
vocabulary, random weights); N windows of 64 tokens; the last position is explained.

- ours: ``experiments.jain_wallace.permutation`` — per example, the 63-token prefix runs once (KV cache)
  and the 100 permuted rows go through one batched single-token forward (+ the reference row).
- peer: ``bench.permutation_peer.permutation_test`` (the per-input analyzer's former building block) — per
  example one batched forward of the full 64-token window for the 100 permutations, which
  is what ``override_attention`` gives without reusing the prefix.

Both compute the same statistic (median TVD of the next-token distribution over 100
permutations of the last layer's row); the report prints seconds, examples per second, the
ratio and the largest difference between the two sides' median TVDs (different random
permutations, so they agree in distribution, not number by number).
"""
from __future__ import annotations

import argparse
import time
from typing import Any

import torch

from playground.analysis.experiments.data import lm_queries
from playground.analysis.experiments.jain_wallace import adversarial, permutation
from playground.analysis.query import Query
from playground.bench import permutation_peer
from playground.families import build_model, get_family

__all__ = ["bench_adversarial", "bench_permutation", "format_bench", "register"]

SIZE = dict(vocab_size=65, block_size=64, n_layer=4, n_head=4, d_model=128)


def bench_permutation(n: int = 200, n_perm: int = 100, threads: int = 2, peer_n: int | None = None,
                      seed: int = 0) -> dict[str, Any]:
    """Time ours on ``n`` examples and the peer on ``peer_n`` (default n); returns the figures."""

    old_threads = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        g = torch.Generator().manual_seed(seed)
        model = build_model("gpt", SIZE).eval()
        for p in model.parameters():
            p.requires_grad_(False)
        windows = torch.randint(0, SIZE["vocab_size"], (n, SIZE["block_size"]), generator=g)
        queries = lm_queries(model, windows)
        permutation(queries[:2], n_perm=n_perm)  # warm-up
        t0 = time.perf_counter()
        ours = permutation(queries, n_perm=n_perm, seed=seed)
        t_ours = time.perf_counter() - t0

        peer_n = n if peer_n is None else min(peer_n, n)
        gpt = get_family("gpt")
        batch = Query(model, gpt.explainer, windows[:peer_n], torch.stack([q.targets[0] for q in queries[:peer_n]]),
                      gpt.input_embedding(model),
                      positions=torch.full((peer_n,), SIZE["block_size"] - 1), baselines=torch.zeros_like(windows[:peer_n]))
        permutation_peer.permutation_test(batch.select([0, 1]), n=n_perm)  # warm-up
        t0 = time.perf_counter()
        peer = permutation_peer.permutation_test(batch, n=n_perm, seed=seed)
        t_peer = time.perf_counter() - t0
        ours_med = torch.tensor([r.median_tvd for r in ours.rows[:peer_n]])
        diff = float((ours_med - peer.median.float()).abs().max())
        return {"n": n, "n_perm": n_perm, "threads": threads, "ours_s": t_ours, "ours_per_s": n / t_ours,
                "peer_n": peer_n, "peer_s": t_peer, "peer_per_s": peer_n / t_peer,
                "ratio_per_example": (t_ours / n) / (t_peer / peer_n), "max_abs_median_tvd_diff": diff,
                "ours_median_tvd": float(ours_med.median()), "peer_median_tvd": float(peer.median.median())}
    finally:
        torch.set_num_threads(old_threads)


def bench_adversarial(n: int = 3, steps: int = 500, threads: int = 2, seed: int = 0) -> dict[str, Any]:
    """Seconds per example of the adversarial search (k = 5, ``steps`` Adam steps) on the same model size."""

    old_threads = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        g = torch.Generator().manual_seed(seed)
        model = build_model("gpt", SIZE).eval()
        for p in model.parameters():
            p.requires_grad_(False)
        queries = lm_queries(model, torch.randint(0, SIZE["vocab_size"], (n + 1, SIZE["block_size"]), generator=g))
        adversarial(queries[:1], steps=2)  # warm-up (optimizer import)
        t0 = time.perf_counter()
        res = adversarial(queries[1:], steps=steps, seed=seed)
        dt = time.perf_counter() - t0
        return {"n": n, "steps": steps, "threads": threads, "seconds": dt, "per_example_s": dt / n,
                "median_max_jsd": res.stats()["max_jsd"]["median"]}
    finally:
        torch.set_num_threads(old_threads)


def format_bench(r: dict[str, Any]) -> str:
    """The lines the bench command prints."""
    return "\n".join([
        f"permutation test, nanogpt-cpu-tiny size (4L/4H/d128/block 64), {r['n_perm']} permutations, {r['threads']} thread(s)",
        f"ours  (prefix cached, one single-token batch)   : {r['n']} examples in {r['ours_s']:.2f} s "
        f"({r['ours_per_s']:.1f} examples/s)   goal: 200 in < 60 s",
        f"peer  (permutation_peer.permutation_test, full) : {r['peer_n']} examples in {r['peer_s']:.2f} s "
        f"({r['peer_per_s']:.1f} examples/s)",
        f"ratio ours / peer per example: {r['ratio_per_example']:.3f}",
        f"median TVD over examples: ours {r['ours_median_tvd']:.3e}, peer {r['peer_median_tvd']:.3e} "
        f"(largest per-example difference {r['max_abs_median_tvd_diff']:.2e}; random permutations differ)",
    ] + ([f"adversarial search (k = 5, {a['steps']} steps): {a['per_example_s']:.2f} s per example over {a['n']} examples "
          f"(median max JSD {a['median_max_jsd']:.3f})"] if (a := r.get("adversarial")) else []))


def register(targets: argparse._SubParsersAction) -> None:
    """Mount the speed check as ``python -m playground bench experiments`` (a `bench` targets object)."""
    parser = targets.add_parser("experiments", help="permutation test (ours vs the per-input building block) "
                                                     "and adversarial search speed")
    parser.add_argument("--n", type=int, default=200, help="examples (default 200)")
    parser.add_argument("--n-perm", type=int, default=100, help="permutations per example (default 100)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    parser.add_argument("--peer-n", type=int, default=None, help="examples for the peer (default: --n)")
    parser.add_argument("--steps", type=int, default=500, help="adversarial steps; 0 skips it (default 500)")
    parser.add_argument("--seed", type=int, default=0)
    parser.set_defaults(func=run_bench)


def run_bench(args: argparse.Namespace) -> int:
    """Print the permutation (and adversarial) speed figures."""
    figures = bench_permutation(args.n or 200, args.n_perm, args.threads, args.peer_n, args.seed)
    if args.steps:
        figures["adversarial"] = bench_adversarial(3, args.steps, args.threads, args.seed)
    print(format_bench(figures))
    return 0
