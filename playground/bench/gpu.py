"""`python -m playground bench gpu`: every CUDA path of the engine exercised once, with figures.

On a CUDA GPU, for a preset (default `nanogpt-shakespeare-char`), it checks and prints:

- the switches the engine picks there: bf16 autocast, TF32, fused AdamW, pinned memory,
  deferred loss read-back (what `DeviceCaps` says and what the built optimizer really is);
- flash attention: our attention forced onto SDPA's flash kernel (is_causal) in bf16, forward
  and backward, beside the math kernel (largest difference);
- tokens/s and MFU of short runs of the real engine, side by side in the same process: loss read
  back every step vs at log steps only (the deferred read-back), and eager vs `torch.compile`.

DDP is the CLI's: `torchrun --nproc_per_node 1 -m playground train PRESET --device cuda` (one
process joins an NCCL group and trains through DistributedDataParallel). Time to quality is
`bench quality --recipe gpu`; the engine beside transformers' GPT-2 is `bench train --device cuda`.
"""
from __future__ import annotations

import argparse
import math
import shutil
import tempfile
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("gpu", help="the engine's CUDA paths exercised once, with tokens/s and MFU")
    parser.add_argument("--preset", default="nanogpt-shakespeare-char")
    parser.add_argument("--steps", type=int, default=200, help="measured steps of each short run (default 200)")
    parser.add_argument("--warmup", type=int, default=30, help="unmeasured steps first (compilation happens here)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="preset override for every run, e.g. model.dropout=0 (repeatable)")
    parser.set_defaults(func=run)


def _line(ok: bool, what: str, detail: str = "") -> bool:
    print(f"{'ok    ' if ok else 'FAILED'}  {what}" + (f": {detail}" if detail else ""), flush=True)
    return ok


def short_run(preset: str, overrides: dict[str, str], steps: int, warmup: int,
              device: str = "cuda") -> tuple[float, float | None, float, bool]:
    """(tokens/s, MFU, last loss, fused AdamW) of engine steps between the first log step at or
    after `warmup` and the first at or after `warmup + steps`, timed by the engine's own clock
    (a read-back at every log step, so the device's queued work is inside the window)."""
    from playground.config import load_preset
    from playground.families import get_family
    from playground.training.engine import DistInfo, _loop, _setup
    from playground.training.flops import device_peak, mfu
    from playground.workspace import Workspace

    total = warmup + steps
    overrides = {"train.log_interval": "1", **overrides, "train.max_steps": str(2 * total),
                 "train.eval_interval": str(10 * total), "train.preview": "false", "train.save_optimizer": "false"}
    root = Path(tempfile.mkdtemp(prefix="playground-bench-gpu-"))
    try:
        run, _ = _setup(load_preset(preset), Workspace(root), "bench-gpu", overrides, device, False, None, DistInfo())
        events = _loop(run, [], None)
        first = last = None
        for ev in events:
            if ev.kind != "step":
                continue
            if first is None and ev.step >= warmup:
                first = ev
            if ev.step >= total:
                last = ev
                break
        events.close()
        if first is None or last is None or last.step == first.step:
            raise SystemExit(f"bench gpu: no log steps around steps {warmup}..{total}; lower train.log_interval")
        cfg, mc = run.spec.train, run.prep.model_config
        tokens = (last.step - first.step) * cfg.batch_size * cfg.grad_accum * mc.block_size
        rate = tokens / (last.elapsed_s - first.elapsed_s)
        flops = get_family(run.spec.family).sizes.train_flops_per_unit(mc)
        peak = device_peak(run.caps.device, run.caps.autocast_dtype, run.caps.tf32)
        return rate, mfu(rate, flops, peak), last.train_loss, bool(run.optimizer.defaults.get("fused"))
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run(args: argparse.Namespace) -> int:
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from playground.config import load_preset, parse_overrides
    from playground.families import build_model, get_family
    from playground.training.device import device_caps
    from playground.training.spec import resolve_run

    if not torch.cuda.is_available():
        raise SystemExit("bench gpu needs a CUDA GPU; none is visible here")
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, CUDA {torch.version.cuda}; preset {args.preset}")
    overrides = parse_overrides(args.overrides)
    ok = True

    caps = device_caps("cuda")
    ok &= _line(caps.autocast_dtype == torch.bfloat16 and torch.cuda.is_bf16_supported(), "bf16 autocast",
                caps.describe())
    caps.apply_backend_flags()
    ok &= _line(torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32, "TF32 matmuls and convolutions")
    ok &= _line(caps.pin_memory and caps.defer_readback, "pinned host batches, loss read back at log steps only")

    # flash attention: our model's attention on the flash kernel (is_causal), bf16, forward + backward
    spec = resolve_run(load_preset(args.preset), overrides)
    prep = get_family(spec.family).adapter.prepare(spec.data, spec.preset.model, None)
    mc = prep.model_config
    model = build_model(spec.family, mc).cuda().eval()
    x = torch.randint(0, mc.vocab_size, (8, mc.block_size), device="cuda")  # [B,T]
    outs = {}
    for backend in (SDPBackend.FLASH_ATTENTION, SDPBackend.MATH):
        model.zero_grad(set_to_none=True)
        with sdpa_kernel([backend]), torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(x)  # [B,T,V]
            loss = F.cross_entropy(logits.flatten(0, 1).float(), x.roll(-1, 1).flatten())
        loss.backward()
        outs[backend] = (logits.float(), model.tok_emb.weight.grad.float().clone())
    flash, math_ = outs[SDPBackend.FLASH_ATTENTION], outs[SDPBackend.MATH]
    diff = (flash[0] - math_[0]).abs().max().item()
    gdiff = ((flash[1] - math_[1]).abs().max() / math_[1].abs().max()).item()
    ok &= _line(diff < 0.1 and gdiff < 0.05, "flash SDPA (is_causal, bf16) forward and backward",
                f"largest logit difference to the math kernel {diff:.3g}, gradient {gdiff:.2%} of its largest")
    del model

    # the engine: per-step read-back vs deferred, eager vs compiled
    runs = {
        "eager, loss read back every step": {**overrides, "train.log_interval": "1"},
        "eager, deferred read-back (log every 50)": {**overrides, "train.log_interval": "50"},
        "torch.compile, deferred read-back": {**overrides, "train.log_interval": "50", "train.compile": "true"},
    }
    results = {}
    for label, ov in runs.items():
        rate, mfu, loss, fused = short_run(args.preset, ov, args.steps, args.warmup)
        results[label] = rate
        shown = f", MFU {100 * mfu:.1f}%" if mfu is not None else ""
        ok &= _line(fused and math.isfinite(loss), label,
                    f"{rate:,.0f} tokens/s{shown}, loss {loss:.3f}, fused AdamW {fused}")
    names = list(results)
    print(f"deferred / per-step read-back: {results[names[1]] / results[names[0]]:.2f}x; "
          f"compiled / eager: {results[names[2]] / results[names[1]]:.2f}x "
          f"({args.steps} measured steps each after {args.warmup} warm-up)")
    return 0 if ok else 1
