"""`python -m playground bench analyze --model gpt2-sized`: the per-input analysis on a real-sized model.

GPT-2 small's shape (12 layers x 12 heads, d 768, vocabulary 50,257, 1,024 positions: 124 M
parameters) with random weights (nothing downloaded), for each input length in --lengths:

- ours: record attention + head-mean attention + rollout + integrated gradients (--ig-steps,
  not auto-raised, in the memory-capped chunks the app uses) + leave-one-out (each variant
  recomputed from its replaced token on the unchanged prefix's KV cache), on the playground's GPT;
- captum: LayerIntegratedGradients on ``wte`` (same steps, one batch) + FeatureAblation (one
  feature per token, one batch) on the same weights exported as transformers' GPT2LMHeadModel;
- inseq (when installed): its ``integrated_gradients`` on that GPT2LMHeadModel for the same
  next token (same steps, one batch).

Each round runs the sides in turn (interleaved, so load drift on a shared machine hits all
alike); one warm-up round on an 8-token input first. Every round is printed (wall and CPU
seconds, load average), then a like-for-like line (our IG alone, timed inside our set, beside
inseq's IG) and the estimated FLOPs of each side (:func:`flops`); the table keeps the best of
--repeats rounds and is printed again at the end.
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


def ours_whole(model: torch.nn.Module, ids: torch.Tensor, target: int, steps: int,
               parts: dict[str, tuple[float, float]] | None = None) -> Callable[[], None]:
    """Our set: attention + rollout + IG + LOO on the playground's GPT (``parts``: each part's
    (wall, CPU) seconds of the latest run)."""
    return whole_analysis(gpt_query(model, ids, target), steps, parts)


def flops(n: int, steps: int, shape: dict[str, int]) -> dict[str, float]:
    """Estimated forward/backward FLOPs of each side for an n-token input, GPT-2-style shape.

    Per token a forward of the blocks costs 24·d²·L (the weights, twice) + 2·n·d·L (causal
    attention, n/2 keys on average, QKᵀ and AV); the LM head 2·d·V. A backward to the input
    embeddings only (no weight gradients) costs about one forward more. ours: IG steps·n
    token fwd+bwd with the head at the last position only, plus six n-token forwards (F(x),
    F(x'), captum's layer pass and convergence delta on both), plus leave-one-out's n(n+1)/2
    token-forwards on the prefix cache and its n-token cache fill, plus the recorded forward.
    inseq: steps·n token fwd+bwd through transformers' GPT2LMHeadModel, whose head runs at every
    position. captum: the same IG as inseq plus FeatureAblation's n whole n-token forwards.
    """
    d, L, V = shape["d_model"], shape["n_layer"], shape["vocab_size"]
    body, head = 24 * d * d * L + 2 * n * d * L, 2 * d * V
    ours = steps * n * 2 * body + (6 * n + n * (n + 1) // 2 + n + n) * body
    inseq = steps * n * 2 * (body + head)
    return {"ours": float(ours), "captum": float(inseq + n * n * (body + head)), "inseq": float(inseq)}


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


def interleaved(fns: dict[str, Callable[[], None]], repeats: int,
                report: Callable[[int, dict[str, tuple[float, float]]], None] | None = None,
                ) -> dict[str, tuple[float, float]]:
    """Best (wall, CPU) seconds of each fn over ``repeats`` rounds, the fns in turn within each
    round; ``report(round, {name: (wall, CPU)})`` after every round."""
    best = {k: (float("inf"), float("inf")) for k in fns}
    for r in range(repeats):
        this: dict[str, tuple[float, float]] = {}
        for k, fn in fns.items():
            t0, c0 = time.perf_counter(), time.process_time()
            fn()
            this[k] = (time.perf_counter() - t0, time.process_time() - c0)
            best[k] = (min(best[k][0], this[k][0]), min(best[k][1], this[k][1]))
        if report is not None:
            report(r, this)
    return best


def _load() -> float:
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


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
    load = _load()
    has_inseq = importlib.util.find_spec("inseq") is not None
    print(f"analyze bench, gpt2-sized: {'GPT-2 small' if shape == GPT2_SMALL else 'a test'}'s shape, "
          f"random weights ({model.num_parameters() / 1e6:.1f} M parameters), IG {args.ig_steps} steps, "
          f"{args.threads} threads, best of {args.repeats} interleaved rounds "
          f"(load average {load:.1f}); inseq {'installed' if has_inseq else 'not installed'}")
    print("| tokens | ours (attention + rollout + IG + LOO) | captum (IG + LOO) | inseq (IG) | ours / captum | ours / inseq |")
    print("|---|---|---|---|---|---|")

    parts: dict[str, tuple[float, float]] = {}

    def sides(length: int) -> dict[str, Callable[[], None]]:
        ids = torch.randint(2, shape["vocab_size"], (1, length), generator=torch.Generator().manual_seed(length))
        with torch.no_grad():
            target = int(model(ids)[0, -1].argmax())
        fns = {"ours": ours_whole(model, ids, target, args.ig_steps, parts),
               "captum": captum_whole(hf, ids, target, args.ig_steps)}
        peer = inseq_whole(hf, ids, target, args.ig_steps)
        if peer is not None:
            fns["inseq"] = peer
        return fns

    interleaved(sides(8), 1)  # warm-up on a short input: imports, allocator, inseq's set-up
    table: list[str] = []
    for length in lengths:
        fns = sides(length)
        ig_rounds: list[tuple[float, float]] = []  # our IG part of each round

        def report(r: int, this: dict[str, tuple[float, float]], length: int = length,
                   ig_rounds: list[tuple[float, float]] = ig_rounds) -> None:
            ig_rounds.append(parts["ig"])
            cells = ", ".join(f"{k} {w:.2f} s wall / {c:.2f} s CPU" for k, (w, c) in this.items())
            inside = ", ".join(f"{k} {w:.2f} / {c:.2f} s" for k, (w, c) in parts.items())
            print(f"  {length} tokens, round {r + 1}: {cells} (ours: {inside}; load average {_load():.1f})",
                  flush=True)

        best = interleaved(fns, args.repeats, report)
        cell = {k: f"{w:.2f} s wall / {c:.2f} s CPU" for k, (w, c) in best.items()}
        inseq_ratio = f"{best['ours'][0] / best['inseq'][0]:.2f}" if "inseq" in best else "–"
        est = flops(length, args.ig_steps, shape)
        ig_best = (min(w for w, _ in ig_rounds), min(c for _, c in ig_rounds))
        if "inseq" in best:
            print(f"  {length} tokens, like for like: our IG alone {ig_best[0]:.2f} s wall / {ig_best[1]:.2f} s CPU, "
                  f"inseq's IG {cell['inseq']}: ratio {ig_best[0] / best['inseq'][0]:.2f} wall, "
                  f"{ig_best[1] / best['inseq'][1]:.2f} CPU (best rounds)")
        print(f"  {length} tokens, estimated GFLOPs: ours {est['ours'] / 1e9:.0f}, captum {est['captum'] / 1e9:.0f}, "
              f"inseq {est['inseq'] / 1e9:.0f}: ours / inseq {est['ours'] / est['inseq']:.2f}, "
              f"ours / captum {est['ours'] / est['captum']:.2f}")
        row = (f"| {length} | {cell['ours']} | {cell['captum']} | {cell.get('inseq', '–')} | "
               f"{best['ours'][0] / best['captum'][0]:.2f} | {inseq_ratio} |")
        table.append(row)
        print(row, flush=True)
    print(f"best of {args.repeats} interleaved rounds (load average now {_load():.1f}):")
    print("| tokens | ours (attention + rollout + IG + LOO) | captum (IG + LOO) | inseq (IG) | ours / captum | ours / inseq |")
    print("|---|---|---|---|---|---|")
    print("\n".join(table))
    return 0
