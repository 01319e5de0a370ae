"""`python -m playground bench analyze --model gpt2-sized`: the per-input analysis on a real-sized model.

GPT-2 small's shape (12 layers x 12 heads, d 768, vocabulary 50,257, 1,024 positions: 124 M
parameters) with random weights (nothing downloaded), for each input length in --lengths:

- ours: record attention + head-mean attention + rollout + integrated gradients (--ig-steps,
  one batch, not auto-raised) + leave-one-out (every variant in one batched forward), on the
  playground's GPT;
- captum: LayerIntegratedGradients on ``wte`` (same steps, one batch) + FeatureAblation (one
  feature per token, one batch) on the same weights exported as transformers' GPT2LMHeadModel;
- inseq (when installed): its ``integrated_gradients`` on that GPT2LMHeadModel for the same
  next token (same steps, one batch).

Each round runs the sides in turn (interleaved, so load drift on a shared machine hits all
alike); one warm-up round on an 8-token input first. Wall and CPU seconds, the best of --repeats.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import tempfile
import time
from collections.abc import Callable
from typing import Any

import torch

from playground.bench.analysis_query import BASELINE_ID, gpt_query, whole_analysis

GPT2_SMALL = {"vocab_size": 50257, "block_size": 1024, "n_layer": 12, "n_head": 12, "d_model": 768}


def ours_whole(model: torch.nn.Module, ids: torch.Tensor, target: int, steps: int) -> Callable[[], None]:
    """Our set: attention + rollout + IG + LOO on the playground's GPT."""
    return whole_analysis(gpt_query(model, ids, target), steps)


def captum_whole(hf: Any, ids: torch.Tensor, target: int, steps: int) -> Callable[[], None]:
    """captum's IG + LOO on transformers' GPT2LMHeadModel."""
    from captum.attr import FeatureAblation, LayerIntegratedGradients

    T = ids.shape[1]
    with torch.no_grad():
        ref = hf(input_ids=ids).logits[:, T - 1].float().softmax(-1)  # [1,V]

    def log_prob(x: torch.Tensor) -> torch.Tensor:
        return hf(input_ids=x).logits[:, T - 1].float().log_softmax(-1)[:, target]  # [B]

    def tvd(x: torch.Tensor) -> torch.Tensor:
        return 0.5 * (hf(input_ids=x).logits[:, T - 1].float().softmax(-1) - ref).abs().sum(-1)  # [B]

    lig, ablation = LayerIntegratedGradients(log_prob, hf.transformer.wte), FeatureAblation(tvd)
    base, mask = torch.full_like(ids, BASELINE_ID), torch.arange(T)[None]

    def whole() -> None:
        lig.attribute(ids, baselines=base, n_steps=steps, internal_batch_size=steps)
        with torch.no_grad():
            ablation.attribute(ids, baselines=BASELINE_ID, feature_mask=mask, perturbations_per_eval=T)

    return whole


def inseq_whole(hf: Any, ids: torch.Tensor, target: int, steps: int) -> Callable[[], None] | None:
    """inseq's integrated gradients for the same next token (None when inseq is not installed)."""
    if importlib.util.find_spec("inseq") is None:
        return None
    import inseq  # optional: only this peer needs it
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    V = hf.config.vocab_size
    vocab = {"<unk>": 0, "<eos>": 1, **{f"t{i}": i for i in range(2, V)}}  # one word per id: text <-> ids exactly
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", pad_token="<unk>", eos_token="<eos>",
                                   bos_token="<eos>")
    hf.config.bos_token_id = hf.config.eos_token_id = hf.config.pad_token_id = 1  # inseq reads them
    hf.generation_config.bos_token_id = hf.generation_config.eos_token_id = hf.generation_config.pad_token_id = 1
    model = inseq.load_model(hf, "integrated_gradients", tokenizer=fast)
    text = " ".join(f"t{i}" for i in ids[0].tolist())

    def whole() -> None:
        model.attribute(text, f"{text} t{target}", n_steps=steps, internal_batch_size=steps, show_progress=False)

    return whole


def interleaved(fns: dict[str, Callable[[], None]], repeats: int) -> dict[str, tuple[float, float]]:
    """Best (wall, CPU) seconds of each fn over ``repeats`` rounds, the fns in turn within each round."""
    best = {k: (float("inf"), float("inf")) for k in fns}
    for _ in range(repeats):
        for k, fn in fns.items():
            t0, c0 = time.perf_counter(), time.process_time()
            fn()
            best[k] = (min(best[k][0], time.perf_counter() - t0), min(best[k][1], time.process_time() - c0))
    return best


def run_real(args: argparse.Namespace, shape: dict[str, int] | None = None) -> int:
    """Print one table row per input length: ours, captum, inseq (wall / CPU seconds) and the ratios.
    ``shape``: the GPT's (default GPT-2 small's; tests pass a tiny one)."""
    shape = shape or GPT2_SMALL
    from transformers import GPT2LMHeadModel

    from playground.models.export_hf import export_hf_gpt2
    from playground.models.gpt import GPT, GPTConfig

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = GPT(GPTConfig(**shape)).eval()
    for p in model.parameters():
        p.requires_grad_(False)
    with tempfile.TemporaryDirectory() as tmp:
        export_hf_gpt2(model, model.config, tmp)
        hf = GPT2LMHeadModel.from_pretrained(tmp).eval()
    lengths = [int(x) for x in str(args.lengths).split(",") if x.strip()]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    has_inseq = importlib.util.find_spec("inseq") is not None
    print(f"analyze bench, gpt2-sized: {'GPT-2 small' if shape == GPT2_SMALL else 'a test'}'s shape, "
          f"random weights ({model.num_parameters() / 1e6:.1f} M parameters), IG {args.ig_steps} steps, "
          f"{args.threads} threads, best of {args.repeats} interleaved rounds "
          f"(load average {load:.1f}); inseq {'installed' if has_inseq else 'not installed'}")
    print("| tokens | ours (attention + rollout + IG + LOO) | captum (IG + LOO) | inseq (IG) | ours / captum | ours / inseq |")
    print("|---|---|---|---|---|---|")

    def sides(length: int) -> dict[str, Callable[[], None]]:
        ids = torch.randint(2, shape["vocab_size"], (1, length), generator=torch.Generator().manual_seed(length))
        with torch.no_grad():
            target = int(model(ids)[0, -1].argmax())
        fns = {"ours": ours_whole(model, ids, target, args.ig_steps), "captum": captum_whole(hf, ids, target, args.ig_steps)}
        peer = inseq_whole(hf, ids, target, args.ig_steps)
        if peer is not None:
            fns["inseq"] = peer
        return fns

    interleaved(sides(8), 1)  # warm-up on a short input: imports, allocator, inseq's set-up
    for length in lengths:
        fns = sides(length)
        best = interleaved(fns, args.repeats)
        cell = {k: f"{w:.2f} s wall / {c:.2f} s CPU" for k, (w, c) in best.items()}
        inseq_ratio = f"{best['ours'][0] / best['inseq'][0]:.2f}" if "inseq" in best else "–"
        print(f"| {length} | {cell['ours']} | {cell['captum']} | {cell.get('inseq', '–')} | "
              f"{best['ours'][0] / best['captum'][0]:.2f} | {inseq_ratio} |", flush=True)
    return 0
