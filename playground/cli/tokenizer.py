"""`python -m playground tokenizer train|encode|show|walk|compare|sweep`: the Tokenizer tab's functions."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from playground.cli import workspace_from
from playground.data.corpora import load_corpora, read_text_file
from playground.data.policy import data_policy
from playground.errors import PlaygroundError
from playground.settings import make_settings
from playground.tokenization import stats, store
from playground.tokenization.bpe import (
    DEFAULT_SPECIALS,
    FALLBACKS,
    KINDS,
    NORMALIZERS,
    PRE_TOKENIZERS,
    BuildProgress,
    TokenizerOptions,
)
from playground.tokenization.stats import iter_vocab_sweep
from playground.tokenization.vocab import TokenizerInfo, merges_table, readable, vocabulary_table
from playground.tokenization.walk import walk, walk_table
from playground.workspace import validate_name


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("tokenizer", help="build, inspect and compare tokenizers")
    sub = parser.add_subparsers(dest="action", metavar="{train,encode,show,walk,compare,sweep}")

    p = sub.add_parser("train", help="build a tokenizer on a corpus and save it")
    _corpus_args(p)
    p.add_argument("--name", required=True, help="workspace name to save under")
    p.add_argument("--overwrite", action="store_true", help="replace an existing tokenizer of that name")
    p.add_argument("--held-out", type=float, default=0.1, help="fraction of the corpus kept for measuring compression")
    p.set_defaults(func=run_train)

    p = sub.add_parser("encode", help="encode text with a saved tokenizer")
    p.add_argument("name")
    p.add_argument("text")
    p.set_defaults(func=run_encode)

    p = sub.add_parser("show", help="metadata, first tokens and first merges of a saved tokenizer")
    p.add_argument("name")
    p.add_argument("--rows", type=int, default=20, help="how many vocabulary rows and merges to print")
    p.add_argument("--filter", default="", help="only tokens / merges containing this text")
    p.set_defaults(func=run_show)

    p = sub.add_parser("walk", help="the merges BPE applies to a word or line, one by one")
    p.add_argument("name")
    p.add_argument("text")
    p.set_defaults(func=run_walk)

    p = sub.add_parser("compare", help="two saved tokenizers on the same text")
    p.add_argument("name_a")
    p.add_argument("name_b")
    p.add_argument("text", help="text, or @PATH to read a UTF-8 file")
    p.set_defaults(func=run_compare)

    p = sub.add_parser("sweep", help="compression on held-out text for vocabulary sizes up to --vocab-size")
    _corpus_args(p)
    p.set_defaults(func=run_sweep)

    parser.set_defaults(func=lambda args: (parser.print_help(), 2)[1])


def _corpus_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--corpus", nargs="+", required=True, metavar="CORPUS",
                   help="python-docs, python-code, tinyshakespeare, or paths of UTF-8 .txt files")
    p.add_argument("--kind", choices=KINDS, default="bpe")
    p.add_argument("--vocab-size", type=int, default=8192)
    p.add_argument("--min-frequency", type=int, default=2)
    p.add_argument("--normalizer", choices=NORMALIZERS, default="none")
    p.add_argument("--pre-tokenizer", choices=PRE_TOKENIZERS, default="byte-level")
    p.add_argument("--special-tokens", nargs="*", default=list(DEFAULT_SPECIALS), metavar="TOKEN")
    p.add_argument("--fallback", choices=FALLBACKS, default="bytes",
                   help="unseen characters as <0xNN> byte tokens or <unk> (not used by byte-level)")
    p.add_argument("--demo", action="store_true", help="apply the demo caps of a public server")


def options_from(args: argparse.Namespace) -> TokenizerOptions:
    """TokenizerOptions from the parsed flags."""
    return TokenizerOptions(kind=args.kind, vocab_size=args.vocab_size, min_frequency=args.min_frequency,
                            normalizer=args.normalizer, pre_tokenizer=args.pre_tokenizer,
                            special_tokens=tuple(args.special_tokens), fallback=args.fallback)


def _printer(quiet: bool = False):
    last = {"phase": None}

    def show(event: BuildProgress) -> None:
        if quiet:
            return
        if event.phase != last["phase"] or event.phase == "counting":
            print(f"[{event.elapsed:6.1f}s] {event.message}", file=sys.stderr, flush=True)
            last["phase"] = event.phase

    return show


def run_train(args: argparse.Namespace) -> int:
    ws = workspace_from(args)
    settings = make_settings(ws.root, demo=args.demo)
    name = validate_name(args.name)
    if ws.exists("tokenizers", name) and not args.overwrite:
        raise PlaygroundError(f"A tokenizer named {name!r} already exists; choose another --name or add --overwrite.")
    corpus = load_corpora(args.corpus, ws, settings.caps, policy=data_policy(settings, ws))  # paths allowed
    print(f"corpus: {corpus.description}", file=sys.stderr)
    built = store.train(corpus, options_from(args), settings.caps, args.held_out, on_progress=_printer())
    path = store.save(ws, name, built, overwrite=args.overwrite)
    loaded = store.read_folder(path, name)
    print(store.summary_markdown(loaded).replace("**", "").replace("  \n", "\n"))
    print(f"saved: {path}")
    return 0


def run_encode(args: argparse.Namespace) -> int:
    loaded = store.load(workspace_from(args), args.name)
    enc = stats.encode(loaded.tokenizer, args.text)
    info = TokenizerInfo.from_tokenizer(loaded.tokenizer)
    print("tokens:", " ".join(f"[{readable(t, info)}]" for t in enc.tokens))
    print("ids:   ", " ".join(str(i) for i in enc.ids))
    print(f"{enc.n_tokens} tokens for {len(enc.text)} characters ({enc.chars_per_token:.2f} characters/token)")
    return 0


def run_show(args: argparse.Namespace) -> int:
    loaded = store.load(workspace_from(args), args.name)
    info = TokenizerInfo.from_tokenizer(loaded.tokenizer)
    print(store.summary_markdown(loaded).replace("**", "").replace("  \n", "\n"))
    with pd.option_context("display.max_rows", args.rows, "display.width", 140, "display.max_colwidth", 40):
        vocab = vocabulary_table(loaded.tokenizer, loaded.counts, args.filter, info)
        print(f"\nvocabulary ({len(vocab):,} rows{' matching ' + repr(args.filter) if args.filter else ''}):")
        print(vocab.drop(columns=["stored"]).head(args.rows).to_string(index=False))
        merges = merges_table(loaded.tokenizer, args.filter, info)
        print(f"\nmerges in learned order ({len(merges):,}{' matching ' + repr(args.filter) if args.filter else ''}):")
        print(merges.head(args.rows).to_string(index=False) if len(merges) else "(none: not a BPE tokenizer)")
    return 0


def run_walk(args: argparse.Namespace) -> int:
    loaded = store.load(workspace_from(args), args.name)
    info = TokenizerInfo.from_tokenizer(loaded.tokenizer)
    result = walk(loaded.tokenizer, args.text, info)
    print(walk_table(result, loaded.tokenizer, info).to_string(index=False))
    print(f"\n{result.n_merges} merges; tokens: " + " ".join(f"[{readable(t, info)}]" for t in result.tokens))
    return 0


def run_compare(args: argparse.Namespace) -> int:
    ws = workspace_from(args)
    text = read_text_file(Path(args.text[1:])) if args.text.startswith("@") else args.text
    a, b = store.load(ws, args.name_a), store.load(ws, args.name_b)
    result = stats.compare(a.tokenizer, b.tokenizer, text, (a.name, b.name))
    print(result.summary.to_string(index=False))
    print(f"\nwords split differently ({len(result.differences)}):")
    print(result.differences.head(30).to_string(index=False) if len(result.differences) else "(none)")
    return 0


def run_sweep(args: argparse.Namespace) -> int:
    ws = workspace_from(args)
    settings = make_settings(ws.root, demo=args.demo)
    corpus = load_corpora(args.corpus, ws, settings.caps, policy=data_policy(settings, ws))  # paths allowed
    gen = iter_vocab_sweep(corpus.text, options_from(args), args.vocab_size, settings.caps)
    show = _printer()
    while True:
        try:
            show(next(gen))
        except StopIteration as stop:
            print(stop.value.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
            return 0
