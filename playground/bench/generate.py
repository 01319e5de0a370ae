"""`python -m playground bench generate`: tokens/s of our GPT decoding beside Hugging Face.

For each size (nanogpt-cpu-tiny: 4 layers, 4 heads, d 128, block 64; and the same at block
256), with a char vocabulary of 65 and random weights, it generates N new tokens (default
1000) with top-k sampling:

- ours, KV cache, the full streaming path (events with top-5 alternatives and text pieces);
- ours, KV cache, ids only (no alternatives, no text): the bare decode loop;
- ours without the cache (each step recomputes its window);
- transformers `GPT2LMHeadModel.generate` on a model of the same size (do_sample, same top-k,
  min_new_tokens = max_new_tokens = N). Its position table must hold prompt + N positions,
  so it gets n_positions >= P + N (it attends over the whole history; ours over its window).

Prints tokens/s of each and the ratios. Threads: --threads (default 2, the target machine).
Each round runs every contender once and the best round is kept (--repeats), so a change in
machine load hits all of them alike. On a machine shared with other busy processes, single-
token decoding with 2 intra-op threads stalls in OpenMP regions (addmm, attention) for
milliseconds per op; compare with --threads 1 there.
"""
from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import torch

SIZES = {
    "tiny-block64": dict(n_layer=4, n_head=4, d_model=128, block_size=64),
    "block256": dict(n_layer=4, n_head=4, d_model=128, block_size=256),
}
VOCAB = 65
PROMPT_LEN = 8


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("generate", help="tokens/s of our decoding (cache / no cache) vs transformers")
    parser.add_argument("--new-tokens", type=int, default=1000, help="tokens to generate per run (default 1000)")
    parser.add_argument("--top-k", type=int, default=40, help="top-k for every sampler (default 40)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    parser.add_argument("--repeats", type=int, default=2, help="runs per measurement; the best is kept (default 2)")
    parser.add_argument("--sizes", nargs="*", default=list(SIZES), choices=list(SIZES), help="model sizes")
    parser.add_argument("--device", default="cpu", help="device (default cpu)")
    parser.add_argument("--no-hf", action="store_true", help="skip the transformers peer")
    parser.set_defaults(func=run)


def _char_tokenizer() -> Any:
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers

    chars = "\n !$&',-.3:;?ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
    assert len(chars) == VOCAB
    tok = Tokenizer(models.WordLevel({c: i for i, c in enumerate(chars)}, unk_token="\n"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    tok.decoder = decoders.Fuse()
    return tok


def _rate(fn: Callable[[], int]) -> float:
    """tokens/s of one run of fn() -> tokens produced."""
    t0 = time.perf_counter()
    n = fn()
    return n / (time.perf_counter() - t0)


def _interleaved_best(runs: dict[str, Callable[[], int]], repeats: int) -> dict[str, float]:
    """Best tokens/s of each run over `repeats` rounds; each round runs every contender once,
    so a change in machine load during the benchmark hits all of them alike."""
    best = {k: 0.0 for k in runs}
    for _ in range(repeats):
        for key, fn in runs.items():
            best[key] = max(best[key], _rate(fn))
    return best


def measure(size: dict[str, int], new_tokens: int, top_k: int, repeats: int, device: str, hf: bool) -> dict[str, float]:
    """tokens/s of each decoder for one model size."""
    from playground.generation.filters import SamplingConfig
    from playground.generation.lm import generate_lm
    from playground.models.gpt import GPT, GPTConfig

    tok = _char_tokenizer()
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=VOCAB, **size)).to(device).eval()
    prompt = tok.encode("ROMEO:\nO").ids[:PROMPT_LEN]
    cfg = SamplingConfig(top_k=top_k)

    def ours(use_cache: bool, full: bool) -> Callable[[], int]:
        def go() -> int:
            done = generate_lm(model, tok, prompt, max_new_tokens=new_tokens, sampling=cfg, seed=0,
                               use_cache=use_cache, n_alternatives=5 if full else 0, decode_text=full)
            return done.new_tokens
        return go

    generate_lm(model, tok, prompt, max_new_tokens=32, sampling=cfg, seed=0)  # warm up
    runs = {
        "ours_cache_stream": ours(True, True),
        "ours_cache_ids": ours(True, False),
        "ours_nocache": ours(False, False),
    }
    if hf:
        runs["hf_generate"] = _hf_runner(size, new_tokens, top_k, device, prompt)
    return _interleaved_best(runs, repeats)


def _hf_runner(size: dict[str, int], new_tokens: int, top_k: int, device: str, prompt: list[int]) -> Callable[[], int]:
    from transformers import GPT2Config, GPT2LMHeadModel
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    cfg = GPT2Config(vocab_size=VOCAB, n_positions=max(1024, len(prompt) + new_tokens + 8), n_embd=size["d_model"],
                     n_layer=size["n_layer"], n_head=size["n_head"], bos_token_id=None, eos_token_id=None,
                     pad_token_id=0)
    torch.manual_seed(0)
    model = GPT2LMHeadModel(cfg).to(device).eval()
    ids = torch.tensor([prompt], device=device)
    mask = torch.ones_like(ids)

    def go() -> int:
        with torch.inference_mode():
            out = model.generate(ids, attention_mask=mask, do_sample=True, top_k=top_k, top_p=1.0,
                                 temperature=1.0, max_new_tokens=new_tokens, min_new_tokens=new_tokens,
                                 pad_token_id=0)
        return out.shape[1] - ids.shape[1]

    with torch.inference_mode():  # warm up
        model.generate(ids, attention_mask=mask, do_sample=True, top_k=top_k, max_new_tokens=16, pad_token_id=0)
    return go


def run(args: argparse.Namespace) -> int:
    torch.set_num_threads(args.threads)
    print(f"bench generate: {args.new_tokens} new tokens, top-k {args.top_k}, {args.threads} threads, "
          f"device {args.device}, torch {torch.__version__}, best of {args.repeats} interleaved rounds")
    for name in args.sizes:
        size = SIZES[name]
        r = measure(size, args.new_tokens, args.top_k, args.repeats, args.device, not args.no_hf)
        print(f"\n{name}: layers {size['n_layer']}, heads {size['n_head']}, d {size['d_model']}, "
              f"block {size['block_size']}, vocab {VOCAB}")
        for key, label in [("ours_cache_stream", "ours, KV cache, streaming events"),
                           ("ours_cache_ids", "ours, KV cache, ids only"),
                           ("ours_nocache", "ours, no cache"),
                           ("hf_generate", "transformers GPT2 generate")]:
            if key in r:
                print(f"  {label:<36} {r[key]:9.1f} tok/s")
        print(f"  cache / no cache (streaming)         {r['ours_cache_stream'] / r['ours_nocache']:9.2f}x")
        if "hf_generate" in r:
            print(f"  ours streaming / transformers        {r['ours_cache_stream'] / r['hf_generate']:9.2f}x")
            print(f"  ours ids only / transformers         {r['ours_cache_ids'] / r['hf_generate']:9.2f}x")
    return 0
