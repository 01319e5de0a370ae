"""Rebuild the demo checkpoints shipped in checkpoints/models/ (Generate and Analyze work right
after install). Each is a preset plus a few overrides, trained on CPU in a few minutes:

    python scripts/make_demo_checkpoints.py                 # all of them, into checkpoints/
    python scripts/make_demo_checkpoints.py --only vit-digits --workspace /tmp/ws

The same runs from the CLI (what this script does, one line each):

    python -m playground train nanogpt-cpu-tiny --name gpt-python-docs-char --set data.corpus=python-docs \
        --set train.save_optimizer=false
    python -m playground train vit-digits --name vit-digits --set train.save_optimizer=false
    python -m playground train vit-shapes --name vit-shapes --set train.save_optimizer=false
    python -m playground train seq2seq-dates-bahdanau --name seq2seq-dates-bahdanau --set train.save_optimizer=false
    python -m playground train seq2seq-toytranslation-bahdanau --name seq2seq-toytranslation-bahdanau \
        --set train.save_optimizer=false
    python -m playground train seq2seq-toytranslation-noattn --name seq2seq-toytranslation-noattn \
        --set train.save_optimizer=false
    python -m playground train textclf-reviews-bilstm-additive --name textclf-reviews-bilstm-additive \
        --set train.save_optimizer=false   # likewise -cnn-additive, -avg-additive, -transformer
    python -m playground train imagegpt-digits --name imagegpt-digits --set train.save_optimizer=false
    python -m playground train bert-mlm-reviews --name bert-mlm-reviews --set train.save_optimizer=false

Optimizer state is left out (train.save_optimizer = false) to keep each bundle a few MB; the
bundles carry their preset sections, so `python -m playground train PRESET` reproduces them
(same seeds, same data) and Analyze can rebuild their validation data.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

# name -> (preset, overrides)
DEMOS: dict[str, tuple[str, dict[str, str]]] = {
    "gpt-python-docs-char": ("nanogpt-cpu-tiny", {"data.corpus": "python-docs"}),
    "vit-digits": ("vit-digits", {}),
    "vit-shapes": ("vit-shapes", {}),
    "seq2seq-dates-bahdanau": ("seq2seq-dates-bahdanau", {}),
    "seq2seq-toytranslation-bahdanau": ("seq2seq-toytranslation-bahdanau", {}),
    # same recipe without attention: the Lessons tab's bottleneck lesson compares the two
    "seq2seq-toytranslation-noattn": ("seq2seq-toytranslation-noattn", {}),
    # Jain & Wallace's text classifiers, one per encoder kind, on generated reviews with rationales
    "textclf-reviews-bilstm-additive": ("textclf-reviews-bilstm-additive", {}),
    "textclf-reviews-cnn-additive": ("textclf-reviews-cnn-additive", {}),
    "textclf-reviews-avg-additive": ("textclf-reviews-avg-additive", {}),
    "textclf-reviews-transformer": ("textclf-reviews-transformer", {}),
    # ImageGPT: completes a digit's lower half in Generate
    "imagegpt-digits": ("imagegpt-digits", {}),
    # BERT pre-trained on review texts: fill-mask in Generate, and the encoder bert-reviews-finetune starts from
    "bert-mlm-reviews": ("bert-mlm-reviews", {}),
}
COMMON = {"train.save_optimizer": "false"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workspace", default=str(REPO / "checkpoints"))
    parser.add_argument("--only", action="append", choices=sorted(DEMOS), help="build only these (repeatable)")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args(argv)

    from playground.cli.train import final_line, format_event
    from playground.training.engine import train
    from playground.workspace import Workspace

    workspace = Workspace(args.workspace)
    for name in args.only or list(DEMOS):
        preset, overrides = DEMOS[name]
        print(f"== {name}: {preset} {' '.join(f'--set {k}={v}' for k, v in {**overrides, **COMMON}.items())}",
              flush=True)
        t0 = time.time()
        last = None
        for ev in train(preset, workspace, name, overrides={**overrides, **COMMON}, device=args.device):
            last = ev
            if ev.kind in ("start", "eval"):
                line = format_event(ev)
                if line:
                    print(line.splitlines()[0], flush=True)
        size = sum(f.stat().st_size for f in workspace.path("models", name).iterdir()) / 1e6
        print(f"{final_line(last)} wall_s={time.time() - t0:.0f} size_mb={size:.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
