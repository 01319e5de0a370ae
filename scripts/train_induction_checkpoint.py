"""Train the 2-layer attention-only GPT of the induction known result and ship it as a bundle.

    python scripts/train_induction_checkpoint.py                       # checkpoints/models/gpt-induction-2l
    python scripts/train_induction_checkpoint.py --seed 1 --workspace /tmp/ws --name try

Tokens: the shipped shakespeare-bpe tokenizer (1,024 byte-level BPE tokens); data: each step 64
random sequences of its 1,022 non-special tokens with a span repeated (loss on the copied tokens)
plus 64 windows of Tiny Shakespeare's training split (loss on every token). The bundle's data
section is Tiny Shakespeare with that tokenizer, so the Heads view rebuilds its validation
windows; retraining it with the trainer would train an ordinary GPT on the text (its MLPs too),
not this recipe: retrain with this script. config.json's "induction" entry has the recipe and
what bundle_heads found. docs/causal.md ("Induction heads") has the runs.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from playground.analysis.causal.induction import Recipe, bundle_heads, train_induction  # noqa: E402
from playground.analysis.inputs import special_id_set  # noqa: E402
from playground.bundle import load_bundle, save_bundle  # noqa: E402
from playground.data.corpora import tinyshakespeare_text  # noqa: E402
from playground.data.splits import split_text  # noqa: E402
from playground.settings import SHIPPED_LIBRARY  # noqa: E402
from playground.training.data import encode_text  # noqa: E402
from playground.workspace import Workspace  # noqa: E402

NAME = "gpt-induction-2l"
TOKENIZER = "shakespeare-bpe"
VAL_FRACTION = 0.1
DESCRIPTION = ("2-layer attention-only GPT (each MLP's output projection zero and frozen) trained by "
               "scripts/train_induction_checkpoint.py on random BPE tokens with a span repeated, mixed with Tiny "
               "Shakespeare: a previous-token head in layer 0 and induction heads in layer 1 (docs/causal.md). "
               "The trainer's retrain would train an ordinary GPT on the text; rerun the script instead.")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    defaults = Recipe()
    for key, value in defaults.to_dict().items():
        ap.add_argument(f"--{key.replace('_', '-')}", type=type(value), default=value)
    ap.add_argument("--workspace", default=str(SHIPPED_LIBRARY))
    ap.add_argument("--name", default=NAME)
    args = ap.parse_args(argv)
    recipe = Recipe(**{k: getattr(args, k) for k in defaults.to_dict()})
    torch.set_num_threads(1)
    tokenizer = Workspace(SHIPPED_LIBRARY).load_tokenizer(TOKENIZER)
    specials = special_id_set(tokenizer)
    pool = [i for i in range(tokenizer.get_vocab_size()) if i not in specials]
    train_ids, _ = split_text(encode_text(tokenizer, tinyshakespeare_text()), VAL_FRACTION, recipe.block_size)
    t0 = time.perf_counter()
    model = train_induction(tokenizer.get_vocab_size(), pool, train_ids, recipe,
                            progress=lambda s, loss: print(f"step {s} loss {loss:.3f}", flush=True) if s % 250 == 0
                            else None)
    spent = time.perf_counter() - t0
    workspace = Workspace(args.workspace)
    model_cfg = model.config.to_dict()
    data = {"corpus": "tinyshakespeare", "tokenizer": TOKENIZER, "val_fraction": VAL_FRACTION}
    train = {"max_steps": recipe.steps, "batch_size": recipe.repeat_rows + recipe.text_rows, "optimizer": "adamw",
             "lr": recipe.lr, "min_lr": recipe.lr, "schedule": "constant", "warmup_steps": recipe.warmup,
             "beta1": 0.9, "beta2": 0.99, "weight_decay": recipe.weight_decay, "seed": recipe.seed, "save_optimizer": False}
    sections = {"family": "gpt", "description": DESCRIPTION, "model": model_cfg, "data": data, "train": train}
    extra = {"sections": sections, "run": {"status": "finished", "elapsed_s": round(spent, 1), "device": "cpu (fp32)",
                                           "script": "scripts/train_induction_checkpoint.py"},
             "induction": {"recipe": recipe.to_dict()}}
    path = save_bundle(workspace, args.name, model, "gpt", model.config, train_config=train, preset=None,
                       data=data, step=recipe.steps, metrics={"status": "finished"}, tokenizer=tokenizer, extra=extra)
    found = bundle_heads(load_bundle(path), workspace)
    config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    config["induction"]["found"] = found.to_dict()
    config["induction"]["train_s"] = round(spent, 1)
    (path / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    print(json.dumps(config["induction"], indent=1))
    print(f"wrote {path} in {spent:.0f} s of training; agree = {found.agree()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
