"""`python -m playground bench train`: this engine vs Hugging Face GPT2LMHeadModel, same work.

Both train the `nanogpt-cpu-tiny` configuration (4 layers, 4 heads, d 128, context 64, batch 12,
fp32, AdamW with the preset's groups, lr schedule and grad clipping) on the same batches from
the same corpus. Ours is the real engine (`playground.training.engine.train`, its step time
as it reports it, evaluation excluded); the peer is a plain loop around `GPT2LMHeadModel` of the
same size (tied embeddings, gelu_new, learned positions, SDPA attention) with the same loss.
The two are interleaved in rounds, so a busy machine slows both alike; tokens/s of each and the
ratio are printed. `--device cuda` runs both on the GPU with the engine's CUDA switches (bf16
autocast, TF32, fused AdamW; both read the loss back every step), e.g. `--device cuda --preset
nanogpt-shakespeare-char --set model.dropout=0` (the peer has no dropout).
"""
from __future__ import annotations

import argparse
import math
import statistics
import tempfile
import time


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("train", help="training tokens/s: this engine vs transformers' GPT-2, same config")
    parser.add_argument("--preset", default="nanogpt-cpu-tiny")
    parser.add_argument("--corpus", default="python-docs",
                        help="corpus name or text file (default python-docs: built in, no download)")
    parser.add_argument("--steps", type=int, default=120, help="measured steps of each (after warmup)")
    parser.add_argument("--warmup", type=int, default=10, help="unmeasured steps of each first")
    parser.add_argument("--rounds", type=int, default=6, help="interleaved rounds the steps are split into")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0 = torch's default)")
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"),
                        help="cuda: both train with the engine's CUDA switches (bf16 autocast where the preset's "
                             "precision allows, TF32, fused AdamW, SDPA); default cpu")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="preset override for every contender, e.g. model.ffn=gelu (repeatable)")
    parser.set_defaults(func=run)


# our ffn -> the HF activation computed by the same torch kernel
HF_ACTIVATIONS = {"gelu": "gelu_pytorch_tanh", "gelu_exact": "gelu", "relu": "relu"}


def hf_model(cfg, activation: str = "gelu_new", attn_implementation: str = "sdpa"):
    """GPT2LMHeadModel with the same shape as our GPTConfig `cfg` (fp32, no dropout, tied
    embeddings, learned positions, SDPA attention). GPT-2's own activation is gelu_new (tanh)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    hf_cfg = GPT2Config(
        vocab_size=cfg.vocab_size, n_positions=cfg.block_size, n_embd=cfg.d_model, n_layer=cfg.n_layer,
        n_head=cfg.n_head, n_inner=cfg.d_ff or 4 * cfg.d_model, activation_function=activation,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, layer_norm_epsilon=1e-5, tie_word_embeddings=True,
        use_cache=False, attn_implementation=attn_implementation, bos_token_id=None, eos_token_id=None,
    )
    return GPT2LMHeadModel(hf_cfg)


def run(args: argparse.Namespace) -> int:
    import torch
    import torch.nn.functional as F

    from playground.config import load_preset, parse_overrides
    from playground.families import get_family
    from playground.training.device import device_caps
    from playground.training.engine import make_optimizer, train
    from playground.training.schedules import make_scheduler
    from playground.training.spec import resolve_run
    from playground.workspace import Workspace

    if args.threads:
        torch.set_num_threads(args.threads)
    total = args.warmup + args.steps
    overrides = {"data.corpus": args.corpus, "train.max_steps": str(total), "train.eval_interval": str(10 * total),
                 "train.log_interval": "1", "train.preview": "false", "train.save_optimizer": "false",
                 "train.eval_iters": "1", **parse_overrides(args.overrides)}
    preset = load_preset(args.preset)
    spec = resolve_run(preset, overrides)
    cfg = spec.train
    adapter = get_family(spec.family).adapter
    prep = adapter.prepare(spec.data, spec.preset.model, None)
    mc = prep.model_config
    caps = device_caps(args.device, cfg.precision)
    caps.apply_backend_flags()
    print(f"config {args.preset}: {mc.n_layer} layers, {mc.n_head} heads, d {mc.d_model}, context {mc.block_size}, "
          f"batch {cfg.batch_size}, vocab {mc.vocab_size}, ffn {mc.ffn}; optimizer {cfg.optimizer} "
          f"{caps.optimizer_kwargs(cfg.optimizer) or ''}; {caps.describe()}; torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads")

    # ours: the engine itself, stepped in rounds
    workspace = Workspace(tempfile.mkdtemp(prefix="playground-bench-"))
    engine = train(preset, workspace, "bench", overrides=overrides, device=args.device)
    next(engine)  # start

    # peers: GPT2LMHeadModel, same optimizer groups / schedule / clipping, same batches and loss
    matched = HF_ACTIVATIONS.get(mc.ffn)
    activations = {"transformers GPT2LMHeadModel (GPT-2's gelu_new)": "gelu_new"}
    if matched:
        activations[f"transformers GPT2LMHeadModel ({matched}: our activation)"] = matched
    peers = {}  # label -> (model, optimizer, scheduler, measured step times)
    for label, activation in activations.items():
        torch.manual_seed(cfg.seed)
        model = hf_model(mc, activation).train().to(caps.device)
        opt = make_optimizer(model, cfg, caps)
        peers[label] = (model, opt, make_scheduler(opt, cfg), [])
    tokens_per_step = cfg.batch_size * mc.block_size

    def peer_step(label: str, step: int) -> float:
        model, opt, sched, _ = peers[label]
        t0 = time.perf_counter()
        batch = {k: caps.to_device(v) for k, v in adapter.batch(prep, cfg.seed, step, 0, cfg.batch_size,
                                                                   cfg.batch_size).items()}
        with caps.autocast():
            logits = model(input_ids=batch["x"]).logits  # [B,T,V]
            loss = F.cross_entropy(logits.flatten(0, 1), batch["y"].flatten())
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        if not math.isfinite(loss.item()):  # a read-back every step, like ours at log_interval 1 (a sync on CUDA)
            raise RuntimeError("peer loss is not finite")
        return time.perf_counter() - t0

    ours_t: list[float] = []
    ours_loss = 0.0
    last_elapsed = 0.0
    per_round = max(1, args.steps // args.rounds)
    step = 0
    for r, n in enumerate([args.warmup] + [per_round] * args.rounds):
        for _ in range(n):
            ev = next(engine)
            while ev.kind != "step":
                ev = next(engine)
            if r > 0:
                ours_t.append(ev.elapsed_s - last_elapsed)
            last_elapsed = ev.elapsed_s
            ours_loss = ev.train_loss
        for label in peers:
            for i in range(n):
                dt = peer_step(label, step + i)
                if r > 0:
                    peers[label][3].append(dt)
        step += n
    engine.close()

    ours_rate = tokens_per_step * len(ours_t) / sum(ours_t)
    print(f"{'ours (playground engine)':<58}: {ours_rate:9,.0f} tokens/s  "
          f"(median step {1000 * statistics.median(ours_t):.1f} ms, loss {ours_loss:.3f})")
    for label, (*_, times) in peers.items():
        rate = tokens_per_step * len(times) / sum(times)
        print(f"{'peer: ' + label:<58}: {rate:9,.0f} tokens/s  (median step "
              f"{1000 * statistics.median(times):.1f} ms)  ratio ours/peer {ours_rate / rate:.2f}x")
    print(f"({len(ours_t)} measured steps each after {args.warmup} warmup, {args.rounds} interleaved rounds; "
          "the first peer is the baseline)")
    return 0
