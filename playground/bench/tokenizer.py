"""`python -m playground bench tokenizer --corpus PATH`: our builder beside `tokenizers` called directly.

Both train the same BPE (same normalizer, pre-tokenizer, decoder, trainer options) on the same
text, alternating, a few times; the median times and their ratio are printed, and the learned
merges are compared (byte-level, whitespace and metaspace chunking is exact, so they must match).

The direct peer is what a person would write from the `tokenizers` docs:
``tokenizer.train_from_iterator([text], trainer)``. A second peer feeds the text in the same
chunks the builder uses, which isolates the builder's own overhead (checks, threads, progress)
from the effect of chunking (chunks let `tokenizers` count words on several cores).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time

from playground.tokenization.bpe import (
    FALLBACKS, NORMALIZERS, PRE_TOKENIZERS, TokenizerOptions, build_tokenizer, chunk_text, untrained_tokenizer,
)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("tokenizer", help="BPE builder vs tokenizers directly, same options")
    parser.add_argument("--corpus", required=True, help="a UTF-8 text file, or python-docs / python-code / tinyshakespeare")
    parser.add_argument("--vocab-size", type=int, default=8192)
    parser.add_argument("--min-frequency", type=int, default=2)
    parser.add_argument("--pre-tokenizer", choices=PRE_TOKENIZERS, default="byte-level")
    parser.add_argument("--normalizer", choices=NORMALIZERS, default="none")
    parser.add_argument("--fallback", choices=FALLBACKS, default="bytes")
    parser.add_argument("--repeats", type=int, default=5, help="runs of each (median reported)")
    parser.add_argument("--max-chars", type=int, default=None, help="use only the first N characters")
    parser.set_defaults(func=run)


def _merges(tokenizer) -> list:
    return json.loads(tokenizer.to_str())["model"]["merges"]


def direct_train(text: str, options: TokenizerOptions, chunks: list[str] | None = None):
    """The same BPE trained by `tokenizers` directly (no checks, no thread, no progress)."""
    tokenizer, trainer = untrained_tokenizer(options)
    tokenizer.train_from_iterator(chunks if chunks is not None else [text], trainer)
    return tokenizer


def run(args: argparse.Namespace) -> int:
    from playground.cli import workspace_from
    from playground.data.corpora import load_corpus

    corpus = load_corpus(args.corpus, workspace_from(args))
    text = corpus.text[: args.max_chars] if args.max_chars else corpus.text
    options = TokenizerOptions(vocab_size=args.vocab_size, min_frequency=args.min_frequency,
                               pre_tokenizer=args.pre_tokenizer, normalizer=args.normalizer,
                               fallback=args.fallback).checked()
    if options.byte_fallback:
        print("note: with byte fallback the builder also re-numbers the vocabulary after training; "
              "the peers train 256 fewer tokens and skip that step")
    print(f"corpus: {corpus.description}; using {len(text):,} characters ({len(text.encode('utf-8')) / 1e6:.2f} MB)")
    print(f"options: {options.describe()}; cores: {os.cpu_count()}; "
          f"RAYON_NUM_THREADS={os.environ.get('RAYON_NUM_THREADS', 'unset')}; repeats: {args.repeats}")

    times: dict[str, list[float]] = {"builder": [], "direct, whole text": [], "direct, same chunks": []}
    results = {}
    build_tokenizer(text[:20000], options)  # warm-up (imports, thread pool)
    labels = list(times)
    for rep in range(max(1, args.repeats)):
        for label in labels[rep % 3:] + labels[: rep % 3]:  # rotate the order: no position is favoured
            start = time.perf_counter()
            if label == "builder":
                tok = build_tokenizer(text, options)
            elif label == "direct, whole text":
                tok = direct_train(text, options)
            else:
                tok = direct_train(text, options, chunk_text(text, options.pre_tokenizer))
            times[label].append(time.perf_counter() - start)
            results[label] = tok

    med = {label: statistics.median(v) for label, v in times.items()}
    best = {label: min(v) for label, v in times.items()}
    width = max(len(k) for k in med)
    for label, value in med.items():
        runs = ", ".join(f"{t:.3f}" for t in times[label])
        print(f"{label:<{width}}  median {value:.3f} s  min {best[label]:.3f} s   (runs: {runs})   "
              f"vocab {results[label].get_vocab_size():,}")
    ratio_whole = med["builder"] / med["direct, whole text"]
    ratio_chunks = med["builder"] / med["direct, same chunks"]
    print(f"ratio builder / direct (whole text):  median {ratio_whole:.3f}   min {best['builder'] / best['direct, whole text']:.3f}")
    print(f"ratio builder / direct (same chunks): median {ratio_chunks:.3f}   "
          f"min {best['builder'] / best['direct, same chunks']:.3f}   "
          f"(builder overhead {100 * (ratio_chunks - 1):+.1f}% by medians; goal: at most +10%)")
    if not options.byte_fallback:
        same = _merges(results["builder"]) == _merges(results["direct, whole text"])
        print(f"same merges as the direct whole-text run: {'yes' if same else 'NO'}")
    return 0
