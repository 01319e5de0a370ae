"""Train the 2-layer attention-only GPT of the induction known result and ship it.

    python scripts/train_induction_checkpoint.py [--steps 2000] [--out checkpoints/causal/induction-2l]

Writes model.safetensors and config.json (the GPTConfig, how it was trained, and find_heads'
scores beside head patching); load it with playground.analysis.causal.induction.load_induction.
docs/causal.md ("Known results") has what three runs gave.
"""
from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict
from pathlib import Path

import torch
from safetensors.torch import save_model

from playground.analysis.causal.induction import find_heads, train_induction


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--pos", default="learned", help="position encoding (learned, rope)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="/tmp/induction-2l")
    args = ap.parse_args()
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    model = train_induction(steps=args.steps, seed=args.seed, lr=args.lr, pos_encoding=args.pos)
    spent = time.perf_counter() - t0
    found = find_heads(model)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    save_model(model, str(out / "model.safetensors"))
    info = {"config": asdict(model.config), "steps": args.steps, "seed": args.seed, "lr": args.lr, "train_s": round(spent, 1),
            "attention_only": "each block's mlp.proj is zero and frozen", "heads": found.named(),
            "in_context_drop": found.in_context_drop}
    (out / "config.json").write_text(json.dumps(info, indent=1), encoding="utf-8")
    print(json.dumps(info, indent=1))
    print("previous", found.previous.round(3).tolist())
    print("induction", found.induction.round(3).tolist())
    print("patching", found.patching.round(3).tolist())


if __name__ == "__main__":
    main()
