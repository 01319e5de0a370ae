"""`python -m playground bench analyze`: our per-input analysis beside captum on Hugging Face GPT-2.

A nanogpt-cpu-tiny-sized GPT (4 layers, 4 heads, d 128, block 128, char vocabulary of 65,
random weights) explains the next token after a 128-token input. Timed, each as the best of
--repeats runs after one warm-up:

- ours: record attention (one forward) + head-mean attention + rollout + integrated gradients
  (captum LayerIntegratedGradients, --ig-steps steps, completeness-checked but not raised so
  both sides do the same work) + leave-one-out (replace by the baseline id, every variant in
  one batched forward); printed per method.
- peer: the same model exported with `export_hf_gpt2`, loaded as transformers'
  GPT2LMHeadModel, attributed by captum directly: LayerIntegratedGradients on `wte` (same
  steps, all steps in one batch) and FeatureAblation with the baseline id, one feature per
  token, all perturbations in one batch (its output is the TVD to the unperturbed
  distribution, so its attribution is −LOO).

The whole sets (ours: attention + rollout + IG + LOO; peer: IG + LOO) are then timed in turn
within each repeat, so load drift on a shared machine hits both alike. Prints both, the
ratio ours / peer (goal <= 1.2) and the largest difference between the two
sides' IG and leave-one-out vectors.
"""
from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from typing import Any

import torch

from playground.analysis.explain import attention as am
from playground.analysis.explain import attributions as at
from playground.bench.analysis_query import BASELINE_ID, gpt_query, whole_analysis

SIZE = {"n_layer": 4, "n_head": 4, "d_model": 128, "block_size": 128}
VOCAB = 65


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("analyze", help="attention + rollout + IG + leave-one-out vs captum on HF GPT-2")
    parser.add_argument("--length", type=int, default=128, help="input tokens (default 128)")
    parser.add_argument("--ig-steps", type=int, default=50, help="IG steps (default 50)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per measurement; the best is kept (default 3)")
    parser.add_argument("--device", default="cpu", help="device (default cpu)")
    parser.add_argument("--no-hf", action="store_true", help="skip the transformers peer")
    parser.add_argument("--model", choices=("tiny", "gpt2-sized"), default="tiny",
                        help="tiny (default) or gpt2-sized: GPT-2 small's shape, random weights, beside captum and "
                             "inseq (playground.bench.analyze_real)")
    parser.add_argument("--lengths", default="16,64,256", help="gpt2-sized: input lengths (default 16,64,256)")
    parser.set_defaults(func=run)


def _best(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    fn()  # warm-up (imports, allocator)
    best, out = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def ours(model: torch.nn.Module, ids: torch.Tensor, target: int, steps: int, repeats: int) -> dict[str, Any]:
    """Time each of our methods; returns seconds per method plus the IG and LOO vectors."""
    q = gpt_query(model, ids, target)
    times: dict[str, float] = {}
    times["record"], rec = _best(lambda: am.record(q), repeats)
    times["attention"], _ = _best(lambda: am.attention(q, rec), repeats)
    times["rollout"], _ = _best(lambda: am.rollout(q, rec), repeats)
    times["ig"], ig = _best(lambda: at.integrated_gradients(q, steps, auto_steps=False), repeats)
    times["loo"], loo = _best(lambda: at.leave_one_out(q, "replace"), repeats)
    return {"times": times, "ig": ig.values[0].cpu(), "ig_delta": float(ig.delta[0]),
            "ig_ok": bool(ig.converged[0]), "loo": loo.values[0].cpu(), "whole": whole_analysis(q, steps)}


def peer(model: torch.nn.Module, ids: torch.Tensor, target: int, steps: int, repeats: int) -> dict[str, Any]:
    """captum directly on the Hugging Face GPT-2 export of the same model."""
    from captum.attr import FeatureAblation, LayerIntegratedGradients
    from transformers import GPT2LMHeadModel

    from playground.models.export_hf import export_hf_gpt2

    with tempfile.TemporaryDirectory() as tmp:
        export_hf_gpt2(model, model.config, tmp)
        hf = GPT2LMHeadModel.from_pretrained(tmp).to(ids.device).eval()
    T = ids.shape[1]

    def log_prob(x: torch.Tensor) -> torch.Tensor:
        return hf(input_ids=x).logits[:, T - 1].float().log_softmax(-1)[:, target]  # [B]

    with torch.no_grad():
        ref = hf(input_ids=ids).logits[:, T - 1].float().softmax(-1)  # [1,V]

    def tvd(x: torch.Tensor) -> torch.Tensor:
        p = hf(input_ids=x).logits[:, T - 1].float().softmax(-1)
        return 0.5 * (p - ref).abs().sum(-1)  # [B]

    lig = LayerIntegratedGradients(log_prob, hf.transformer.wte)
    base = torch.full_like(ids, BASELINE_ID)
    times: dict[str, float] = {}
    times["ig"], ig = _best(lambda: lig.attribute(ids, baselines=base, n_steps=steps, internal_batch_size=steps), repeats)
    ablation = FeatureAblation(tvd)
    mask = torch.arange(T, device=ids.device)[None]

    def loo() -> torch.Tensor:
        with torch.no_grad():
            return ablation.attribute(ids, baselines=BASELINE_ID, feature_mask=mask, perturbations_per_eval=T)

    times["loo"], ab = _best(loo, repeats)

    def whole() -> None:
        lig.attribute(ids, baselines=base, n_steps=steps, internal_batch_size=steps)
        loo()

    return {"times": times, "ig": ig.sum(-1)[0].detach().cpu(), "loo": -ab[0].detach().cpu(), "whole": whole}


def alternate(fns: dict[str, Callable[[], Any]], repeats: int) -> dict[str, tuple[float, float]]:
    """Best (wall, CPU) seconds of each fn, the fns run in turn within every repeat (load drift hits all alike).

    CPU time (all threads of this process) is the steadier figure on a shared machine.
    """
    for fn in fns.values():
        fn()  # warm-up
    best = {k: (float("inf"), float("inf")) for k in fns}
    for _ in range(repeats):
        for k, fn in fns.items():
            t0, c0 = time.perf_counter(), time.process_time()
            fn()
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            best[k] = (min(best[k][0], wall), min(best[k][1], cpu))
    return best


def run(args: argparse.Namespace) -> int:
    if args.model == "gpt2-sized":
        # function-level: start-up time (inseq and its imports, only for this model)
        from playground.bench.analyze_real import run_real

        return run_real(args)
    from playground.models.gpt import GPT, GPTConfig
    from playground.settings import resolve_device

    torch.set_num_threads(args.threads)
    device = resolve_device(args.device)
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=VOCAB, **{**SIZE, "block_size": max(SIZE["block_size"], args.length)})).to(device).eval()
    for p in model.parameters():
        p.requires_grad_(False)
    ids = torch.randint(1, VOCAB, (1, args.length), generator=torch.Generator().manual_seed(1)).to(device)
    with torch.no_grad():
        target = int(model(ids)[0, -1].argmax())
    import os

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"analyze bench: GPT 4 layers x 4 heads, d 128, {args.length}-token input, IG {args.ig_steps} steps, "
          f"device {device}, {args.threads} threads, best of {args.repeats} (load average {load:.1f})")
    mine = ours(model, ids, target, args.ig_steps, args.repeats)
    for name, sec in mine["times"].items():
        print(f"  ours  {name:<10} {sec * 1000:8.1f} ms")
    print(f"  ours  IG delta {mine['ig_delta']:+.2e} ({'within' if mine['ig_ok'] else 'ABOVE'} 5% of F(x) - F(x'))")
    if args.no_hf:
        wall, cpu = alternate({"ours": mine["whole"]}, args.repeats)["ours"]
        print(f"  ours  whole set  {wall * 1000:8.1f} ms wall, {cpu * 1000:.1f} ms CPU")
        return 0
    other = peer(model, ids, target, args.ig_steps, args.repeats)
    for name, sec in other["times"].items():
        print(f"  peer  {name:<10} {sec * 1000:8.1f} ms   (captum on transformers GPT2LMHeadModel)")
    whole = alternate({"ours": mine["whole"], "peer": other["whole"]}, args.repeats)
    (ow, oc), (pw, pc) = whole["ours"], whole["peer"]
    print(f"  whole set, run in turn: ours (attention + rollout + IG + LOO) {ow * 1000:.1f} ms wall / {oc * 1000:.1f} ms CPU; "
          f"peer (IG + LOO) {pw * 1000:.1f} ms wall / {pc * 1000:.1f} ms CPU")
    print(f"  ratio ours / peer = {ow / pw:.2f} wall, {oc / pc:.2f} CPU  (goal <= 1.2)")
    print(f"  same IG and LOO as the peer: max |diff| IG {float((mine['ig'] - other['ig']).abs().max()):.1e}, "
          f"LOO {float((mine['loo'] - other['loo']).abs().max()):.1e}")
    return 0
