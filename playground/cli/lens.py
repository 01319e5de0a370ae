"""`python -m playground lens CHECKPOINT --input TEXT [--position N] [--target TOKEN] [--top K]`.

The logit lens (nostalgebraist 2020): the residual stream after each layer read through the
model's final norm and unembedding, for GPT and BERT-MLM checkpoints:

    python -m playground lens gpt-python-docs-char --input "def __init__(sel" --target f
    python -m playground lens bert-mlm-reviews --input "the film was [MASK] and the acting" --position 3 --csv lens.csv
"""
from __future__ import annotations

import argparse
import json

import torch

from playground.analysis.causal.lens import logit_lens
from playground.analysis.inputs import encode_input, token_label
from playground.bundle import load_bundle
from playground.cli import workspace_from
from playground.cli.patch import _token
from playground.settings import resolve_device


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "lens", help="logit lens: the top tokens and the target's rank after each layer",
        description="Read the residual stream after each layer through the final norm and unembedding (GPT, BERT "
                    "MLM). The tuned lens (a learned affine map per layer) is not built.",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("checkpoint")
    parser.add_argument("--input", required=True)
    parser.add_argument("--position", type=int, default=-1, help="token index (default: the last)")
    parser.add_argument("--target", default=None, help="token text or #id (default: the model's top token)")
    parser.add_argument("--top", type=int, default=5)
    parser.add_argument("--csv", default=None)
    parser.add_argument("--json", default=None)
    parser.add_argument("--device", default="cpu")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    device = resolve_device(args.device)
    bundle = load_bundle(args.checkpoint, workspace_from(args), device=device)
    tok, V = bundle.tokenizer, bundle.model.config.vocab_size
    ids = torch.tensor([encode_input(tok, args.input, V)], device=device)
    res = logit_lens(bundle.model, ids, args.position, _token(tok, args.target, V), args.top,
                     label=lambda i: token_label(tok, i))
    if args.csv:
        res.frame().to_csv(args.csv, index=False)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(res.to_dict(), f, indent=1)
    print(f"position {res.position}, target {res.target_label!r}")
    for i, name in enumerate(res.layers):
        tops = "  ".join(f"{t!r} {p:.2f}" for t, p in zip(res.top_labels[i], res.top_probs[i]))
        print(f"{name:<14} rank {int(res.target_rank[i]):>4}  p {res.target_prob[i]:.3f} | {tops}")
    return 0
