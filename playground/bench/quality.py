"""`python -m playground bench quality`: wall time to val loss <= 1.88 on Tiny Shakespeare,
nanoGPT's CPU recipe beside one of our presets (default `nanogpt-cpu-fast`), in the same run.

The peer is nanoGPT's CPU recipe (its README's `python train.py config/train_shakespeare_char.py
--device=cpu --compile=False --eval_iters=20 --log_interval=1 --block_size=64 --batch_size=12
--n_layer=4 --n_head=4 --n_embd=128 --max_iters=2000 --lr_decay_iters=2000 --dropout=0.0`):
:class:`NanoGPT` re-implements its model.py (pre-LN GPT-2 block, bias=False, exact GELU, tied
embeddings, N(0, 0.02) init with the residual projections scaled by 1/sqrt(2 n_layer)) and the
loop re-implements its train.py (AdamW (0.9, 0.99), weight decay 0.1 on matrices and
embeddings, lr 1e-3 warmed up over 100 steps then cosine to 1e-4 at step 2000, grad clip 1.0,
random windows). `--nanogpt PATH` uses the `model.py` of a nanoGPT checkout instead (its GPT,
GPTConfig and configure_optimizers), driven by the same loop.

Ours is the real engine (`playground.training.engine`) on the preset. Both are evaluated every
100 steps on the whole validation split (the last 10% of the text, 111,540 characters): every
character of it is predicted once, from consecutive windows of 64 (a last, shorter window takes
the remainder), so "val <= 1.88" means the same thing for both and is no lucky draw of batches.
(`--eval-iters N` evaluates on N fixed random batches instead, as nanoGPT's train.py estimates;
the earlier default of 20 such batches read 1.8667 where the whole split reads 1.9005.) Each contender
is timed over its training steps only (batches, forward,
backward, clipping, optimizer); the evaluations are not timed. The two run interleaved, 100
steps at a time, the first of each round alternating, so a busy machine slows both alike while
both run. Once one is there the other runs on alone under whatever load the machine has then, so
the bench also prints a same-load estimate: the peer's steps to the threshold at the time per
step it took in the rounds both ran.

`--recipe gpu` races nanoGPT's Shakespeare-char GPU recipe instead (6 layers, 6 heads, d 384,
context 256, batch 64, dropout 0.2, 5000 iterations, bf16 autocast, fused AdamW, torch.compile,
nanoGPT's own evaluation of 200 batches every 250 steps; its README: val 1.4697 in about 3
minutes on an A100) against `nanogpt-shakespeare-char` on the GPU, to val <= 1.47. On a GPU both
are timed to a device sync; the wall time including evaluations and compilation is printed too,
and each contender's model FLOPs utilisation (playground.training.flops).

Several presets can race one nanoGPT run (`--preset A --preset B`). A preset on another
tokenizer (e.g. `nanogpt-bpe`) is compared per character: its loss per
token on its own validation windows divided by the validation split's characters per token is
nats per character, the unit of the character-level threshold.
"""
from __future__ import annotations

import argparse
import importlib.util
import math
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

THRESHOLD = 1.88
RECIPE = {"n_layer": 4, "n_head": 4, "n_embd": 128, "block_size": 64, "batch_size": 12, "lr": 1e-3,
          "min_lr": 1e-4, "warmup": 100, "max_iters": 2000, "betas": (0.9, 0.99), "weight_decay": 0.1,
          "grad_clip": 1.0, "seed": 1337, "dropout": 0.0, "compile": False, "log_interval": 1,
          "threshold": THRESHOLD, "eval_interval": 100, "eval_iters": 0, "preset": "nanogpt-cpu-fast",
          "name": "nanoGPT CPU recipe", "device": "cpu"}
# config/train_shakespeare_char.py on a GPU: train.py's defaults (bf16, compile, fused AdamW, bias off)
GPU_RECIPE = {**RECIPE, "n_layer": 6, "n_head": 6, "n_embd": 384, "block_size": 256, "batch_size": 64,
              "max_iters": 5000, "dropout": 0.2, "compile": True, "log_interval": 10, "threshold": 1.47,
              "eval_interval": 250, "eval_iters": 200, "preset": "nanogpt-shakespeare-char",
              "name": "nanoGPT GPU recipe", "device": "cuda"}
RECIPES = {"cpu": RECIPE, "gpu": GPU_RECIPE}


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "quality", help="wall time to val loss <= 1.88 on Tiny Shakespeare: nanoGPT's CPU recipe vs our preset")
    parser.add_argument("--preset", dest="presets", action="append", default=None, metavar="PRESET",
                        help="ours (default nanogpt-cpu-fast); repeat to race several against one nanoGPT run, "
                             "e.g. --preset nanogpt-cpu-fast --preset nanogpt-bpe")
    parser.add_argument("--recipe", choices=sorted(RECIPES), default="cpu",
                        help="cpu: nanoGPT's CPU recipe vs nanogpt-cpu-fast to 1.88 (default); gpu: its "
                             "Shakespeare-char GPU recipe vs nanogpt-shakespeare-char to 1.47, on CUDA")
    parser.add_argument("--threshold", type=float, default=None,
                        help="val loss to reach, nats per character (default: the recipe's, 1.88 or 1.47); "
                             "0 = just run --max-steps")
    parser.add_argument("--eval-interval", type=int, default=None,
                        help="steps between evaluations (default: the recipe's, 100 or 250)")
    parser.add_argument("--eval-iters", type=int, default=None,
                        help="fixed random validation batches; 0 = the whole validation split "
                             "(default: the recipe's, 0 = whole split or nanoGPT's 200 batches)")
    parser.add_argument("--no-compile", action="store_true", help="gpu recipe: no torch.compile for the peer")
    parser.add_argument("--device", default=None, choices=("cpu", "cuda"),
                        help="where both train (default: the recipe's, cpu or cuda)")
    parser.add_argument("--max-steps", type=int, default=0,
                        help="stop each contender after this many steps (default: the preset's max_steps, and for "
                             "nanoGPT twice its scheduled iterations (4000 on the CPU recipe): past its 2000 at min_lr, "
                             "as its get_lr does, if not there yet)")
    parser.add_argument("--nanogpt", default=None, metavar="PATH",
                        help="a nanoGPT checkout: use its model.py as the peer instead of the re-implementation")
    parser.add_argument("--only", choices=("both", "ours", "peer"), default="both",
                        help="run one contender alone (exploring a preset; prints no ratio)")
    parser.add_argument("--threads", type=int, default=0,
                        help="torch threads (0 = torch's default); use 1 on a machine others are busy on: "
                             "there two threads wait on each other (measured: 1-2.5 s a step instead of 70-90 ms)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override of our preset, e.g. train.lr=3e-3 (repeatable)")
    parser.set_defaults(func=run)


# ---------------------------------------------------------------------------------------------
# nanoGPT's model.py, re-implemented (the parts its CPU recipe uses)


def _nanogpt_classes():
    import torch
    import torch.nn.functional as F
    from torch import nn

    @dataclass
    class GPTConfig:
        block_size: int = 1024
        vocab_size: int = 50304
        n_layer: int = 12
        n_head: int = 12
        n_embd: int = 768
        dropout: float = 0.0
        bias: bool = True

    class LayerNorm(nn.Module):
        def __init__(self, ndim: int, bias: bool) -> None:
            super().__init__()
            self.weight = nn.Parameter(torch.ones(ndim))
            self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None

        def forward(self, x):
            return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)

    class CausalSelfAttention(nn.Module):
        def __init__(self, c: GPTConfig) -> None:
            super().__init__()
            self.c_attn = nn.Linear(c.n_embd, 3 * c.n_embd, bias=c.bias)
            self.c_proj = nn.Linear(c.n_embd, c.n_embd, bias=c.bias)
            self.resid_dropout = nn.Dropout(c.dropout)
            self.n_head, self.n_embd, self.dropout = c.n_head, c.n_embd, c.dropout

        def forward(self, x):
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
            k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
            q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=None,
                                               dropout_p=self.dropout if self.training else 0, is_causal=True)
            y = y.transpose(1, 2).contiguous().view(B, T, C)
            return self.resid_dropout(self.c_proj(y))

    class MLP(nn.Module):
        def __init__(self, c: GPTConfig) -> None:
            super().__init__()
            self.c_fc = nn.Linear(c.n_embd, 4 * c.n_embd, bias=c.bias)
            self.gelu = nn.GELU()
            self.c_proj = nn.Linear(4 * c.n_embd, c.n_embd, bias=c.bias)
            self.dropout = nn.Dropout(c.dropout)

        def forward(self, x):
            return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))

    class Block(nn.Module):
        def __init__(self, c: GPTConfig) -> None:
            super().__init__()
            self.ln_1 = LayerNorm(c.n_embd, bias=c.bias)
            self.attn = CausalSelfAttention(c)
            self.ln_2 = LayerNorm(c.n_embd, bias=c.bias)
            self.mlp = MLP(c)

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self, c: GPTConfig) -> None:
            super().__init__()
            self.config = c
            self.transformer = nn.ModuleDict(dict(
                wte=nn.Embedding(c.vocab_size, c.n_embd), wpe=nn.Embedding(c.block_size, c.n_embd),
                drop=nn.Dropout(c.dropout), h=nn.ModuleList([Block(c) for _ in range(c.n_layer)]),
                ln_f=LayerNorm(c.n_embd, bias=c.bias)))
            self.lm_head = nn.Linear(c.n_embd, c.vocab_size, bias=False)
            self.transformer.wte.weight = self.lm_head.weight  # tied
            self.apply(self._init_weights)
            for pn, p in self.named_parameters():
                if pn.endswith("c_proj.weight"):
                    torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * c.n_layer))

        def _init_weights(self, module):
            if isinstance(module, nn.Linear):
                torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
                if module.bias is not None:
                    torch.nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Embedding):
                torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

        def forward(self, idx, targets=None):
            b, t = idx.size()
            pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
            x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
            for block in self.transformer.h:
                x = block(x)
            x = self.transformer.ln_f(x)
            if targets is not None:
                logits = self.lm_head(x)
                loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
            else:
                logits, loss = self.lm_head(x[:, [-1], :]), None
            return logits, loss

        def configure_optimizers(self, weight_decay, learning_rate, betas, device_type):
            params = [p for p in self.parameters() if p.requires_grad]
            groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": weight_decay},
                      {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
            fused = device_type == "cuda" and "fused" in torch.optim.AdamW.__init__.__code__.co_varnames
            return torch.optim.AdamW(groups, lr=learning_rate, betas=betas, **({"fused": True} if fused else {}))

    return GPT, GPTConfig


def nanogpt_classes(path: str | None = None):
    """(GPT, GPTConfig): nanoGPT's own from `path`/model.py, else the re-implementation."""
    if path is None:
        return _nanogpt_classes()
    model_py = Path(path).expanduser() / "model.py"
    if not model_py.is_file():
        raise SystemExit(f"--nanogpt {path}: no model.py there (give the folder of a nanoGPT checkout)")
    spec = importlib.util.spec_from_file_location("nanogpt_model", model_py)
    module = importlib.util.module_from_spec(spec)
    sys.modules["nanogpt_model"] = module
    spec.loader.exec_module(module)
    return module.GPT, module.GPTConfig


def recipe_lr(it: int, r: dict[str, Any] = RECIPE) -> float:
    """nanoGPT train.py's get_lr with a recipe's numbers (default: the CPU recipe's)."""
    if it < r["warmup"]:
        return r["lr"] * (it + 1) / (r["warmup"] + 1)
    if it > r["max_iters"]:
        return r["min_lr"]
    ratio = (it - r["warmup"]) / (r["max_iters"] - r["warmup"])
    return r["min_lr"] + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (r["lr"] - r["min_lr"])


# ---------------------------------------------------------------------------------------------
# contenders: each trains `n` more steps (timed) and evaluates (not timed)


@dataclass
class Contender:
    label: str
    short: str
    max_steps: int
    train_steps: Callable[[int], int]  # run up to n steps; returns steps actually run
    evaluate: Callable[[], float]  # val loss, nats per character
    close: Callable[[], None] = lambda: None
    tokens_per_step: int = 0
    flops_per_token: int = 0  # PaLM's 6 N + 12 L d T, for MFU
    step: int = 0
    seconds: float = 0.0  # training steps only
    wall: float = 0.0  # training, evaluations and compilation
    reached: tuple[int, float, float, float] | None = None  # (step, seconds, val, wall)
    curve: list[tuple[int, float, float]] = field(default_factory=list)
    done: bool = False
    peer_when_done: tuple[int, float] | None = None  # the peer's (steps, seconds) when this one finished


def _sync(device: str) -> None:
    """Wait for the device's queued work (a GPU's clock stops only when its work is done)."""
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def make_peer(prep: Any, windows: list, args: argparse.Namespace, r: dict[str, Any]) -> Contender:
    import torch

    from playground.families import get_family
    from playground.models.gpt import GPTConfig as OurGPTConfig
    from playground.training.device import device_caps

    device = args.device
    GPT, GPTConfig = nanogpt_classes(args.nanogpt)
    torch.manual_seed(r["seed"])
    conf = GPTConfig(block_size=r["block_size"], vocab_size=prep.model_config.vocab_size, n_layer=r["n_layer"],
                     n_head=r["n_head"], n_embd=r["n_embd"], dropout=r["dropout"], bias=False)
    model = GPT(conf).train().to(device)
    caps = device_caps(device)  # nanoGPT on CUDA: bf16 autocast where supported, TF32 on, fused AdamW
    caps.apply_backend_flags()
    opt = model.configure_optimizers(r["weight_decay"], r["lr"], r["betas"], caps.device_type)
    compiled = torch.compile(model) if r["compile"] and not args.no_compile and caps.device_type == "cuda" else model
    train_ids = prep.payload.train
    g = torch.Generator().manual_seed(r["seed"])
    T, B = r["block_size"], r["batch_size"]
    max_steps = args.max_steps or 2 * r["max_iters"]
    state: dict[str, Any] = {"it": 0, "batch": None}

    def get_batch():
        ix = torch.randint(len(train_ids) - T, (B,), generator=g)
        x = torch.stack([train_ids[i:i + T] for i in ix])
        y = torch.stack([train_ids[i + 1:i + 1 + T] for i in ix])
        return caps.to_device(x), caps.to_device(y)

    def train_steps(n: int) -> int:
        done = 0
        X, Y = state["batch"] or get_batch()
        while done < n and state["it"] < max_steps:
            lr = recipe_lr(state["it"], r)
            for group in opt.param_groups:
                group["lr"] = lr
            with caps.autocast():
                _, loss = compiled(X, Y)
            X, Y = get_batch()  # nanoGPT fetches the next batch while the device works
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), r["grad_clip"])
            opt.step()
            opt.zero_grad(set_to_none=True)
            if state["it"] % r["log_interval"] == 0 and not math.isfinite(loss.item()):  # nanoGPT's read-back
                raise RuntimeError("nanoGPT recipe: loss is not finite")
            state["it"] += 1
            done += 1
        state["batch"] = (X, Y)
        _sync(device)
        return done

    def evaluate() -> float:
        model.eval()
        with torch.no_grad(), caps.autocast():
            losses = [(model(x.to(device), y.to(device))[1].item(), y.numel()) for x, y in windows]
        model.train()
        return token_mean(losses)

    # nanoGPT's model is our GPT with bias off and exact GELU (tests/bench/test_quality.py): the
    # family's own FLOPs estimate counts it
    same_shape = OurGPTConfig(vocab_size=conf.vocab_size, block_size=T, n_layer=r["n_layer"], n_head=r["n_head"],
                              d_model=r["n_embd"], bias=False, ffn="gelu_exact")
    flops = get_family("gpt").sizes.train_flops_per_unit(same_shape)
    label = r["name"] + (f" ({args.nanogpt}/model.py)" if args.nanogpt else " (re-implemented)")
    label += f", {caps.describe()}" + (", torch.compile" if compiled is not model else "")
    return Contender(label, r["name"], max_steps, train_steps, evaluate, tokens_per_step=B * T, flops_per_token=flops)


def make_ours(args: argparse.Namespace, preset_name: str, peer_prep: Any, peer_windows: list,
              r: dict[str, Any]) -> Contender:
    import torch
    import torch.nn.functional as F

    from playground.config import load_preset, parse_overrides
    from playground.families import get_family
    from playground.settings import DEFAULT_WORKSPACE
    from playground.training.engine import DistInfo, _loop, _setup
    from playground.training.spec import resolve_run
    from playground.workspace import Workspace

    preset = load_preset(preset_name)
    spec = resolve_run(preset, parse_overrides(args.overrides))
    max_steps = min(args.max_steps, spec.train.max_steps) if args.max_steps else spec.train.max_steps
    overrides = {"train.max_steps": str(spec.train.max_steps), "train.eval_interval": str(spec.train.max_steps + 1),
                 "train.log_interval": str(args.eval_interval), "train.preview": "false",
                 "train.save_optimizer": "false", **parse_overrides(args.overrides)}
    overrides["train.max_steps"] = str(max_steps)
    root = Path(tempfile.mkdtemp(prefix="playground-bench-quality-"))
    workspace = Workspace(root)
    tok = spec.data.tokenizer
    if tok != "char":  # a workspace tokenizer: copy it into the scratch workspace the run writes to
        shipped = Workspace(DEFAULT_WORKSPACE)
        if shipped.exists("tokenizers", tok):
            shutil.copytree(shipped.path("tokenizers", tok), workspace.path("tokenizers", tok))
    run, _ = _setup(preset, workspace, "bench-quality", overrides, args.device, False, None, DistInfo())
    gen = _loop(run, [], None)
    next(gen)  # "start"
    prep = run.prep
    val = prep.payload.val
    same = (tok == "char" and val.shape == peer_prep.payload.val.shape and bool((val == peer_prep.payload.val).all()))
    if same:
        windows, per_char = peer_windows, 1.0
    else:  # its own fixed windows, loss converted to nats per character
        windows = eval_windows(prep.payload, args.eval_iters, r["batch_size"], r["block_size"])
        chars = len(prep.tokenizer.decode(val.tolist(), skip_special_tokens=False))
        per_char = len(val) / chars  # tokens per character
    state = {"step": 0, "over": False}

    def train_steps(n: int) -> int:
        target = min(state["step"] + n, max_steps)
        start = state["step"]
        while state["step"] < target:
            ev = next(gen)
            if ev.kind in ("step", "done", "stopped"):
                state["step"] = ev.step
            if ev.kind in ("done", "stopped"):
                break
        _sync(args.device)
        return state["step"] - start

    def evaluate() -> float:
        model = run.model
        model.eval()
        with torch.no_grad(), run.caps.autocast():
            losses = [(F.cross_entropy(model(x.to(args.device)).flatten(0, 1).float(),
                                       y.to(args.device).flatten()).item(), y.numel()) for x, y in windows]
        model.train()
        return token_mean(losses) * per_char

    def close() -> None:
        gen.close()
        shutil.rmtree(root, ignore_errors=True)

    mc = prep.model_config
    cfg = run.spec.train
    unit = "" if same else f"; per character: loss per token x {per_char:.3f} tokens/char"
    label = (f"ours ({preset_name}: {mc.n_layer}L {mc.n_head}H d{mc.d_model} ctx {mc.block_size}, "
             f"batch {cfg.batch_size}, {cfg.optimizer}, {run.caps.describe()}{unit})")
    flops = get_family(spec.family).sizes.train_flops_per_unit(mc) or 0
    return Contender(label, f"ours {preset_name}", max_steps, train_steps, evaluate, close,
                     tokens_per_step=cfg.batch_size * cfg.grad_accum * mc.block_size, flops_per_token=flops)


def token_mean(losses: list[tuple[float, int]]) -> float:
    """The mean loss per predicted token over batches given as (mean loss, tokens)."""
    return sum(loss * n for loss, n in losses) / sum(n for _, n in losses)


def split_windows(val: Any, block: int, windows_per_batch: int = 256) -> list:
    """The whole validation split as (x, y) batches: consecutive windows of `block` tokens, then one
    shorter window for the remainder, so every token after the first is a target exactly once."""
    import torch  # function-level, as in the rest of this module: the CLI registers it without torch

    n_targets = len(val) - 1
    full = n_targets // block
    starts = torch.arange(full) * block
    idx = starts[:, None] + torch.arange(block + 1)  # [full, block + 1]
    chunks = val[idx]
    out = [(c[:, :-1].contiguous(), c[:, 1:].contiguous()) for c in chunks.split(windows_per_batch)]
    if n_targets % block:
        rest = val[full * block:]
        out.append((rest[None, :-1].contiguous(), rest[None, 1:].contiguous()))
    return out


def eval_windows(payload: Any, n_batches: int, batch_size: int, block: int) -> list:
    """The evaluation batches: the whole validation split when `n_batches` is 0, else fixed random ones."""
    return split_windows(payload.val, block) if n_batches == 0 else fixed_windows(payload, n_batches, batch_size, block)


def fixed_windows(payload: Any, n_batches: int, batch_size: int, block: int) -> list:
    """`n_batches` fixed (x, y) validation batches of `block` tokens (the engine's own seed)."""
    import torch

    high = len(payload.val) - block
    g = torch.Generator().manual_seed(12345)
    out = []
    for _ in range(n_batches):
        starts = torch.randint(high, (batch_size,), generator=g)
        idx = starts[:, None] + torch.arange(block + 1)
        chunk = payload.val[idx]
        out.append((chunk[:, :-1].contiguous(), chunk[:, 1:].contiguous()))
    return out


def _eval_text(n_batches: int, r: dict[str, Any], n_val: int) -> str:
    if n_batches == 0:
        return f"the whole validation split ({n_val - 1:,} predicted characters, windows of {r['block_size']})"
    return f"{n_batches} fixed batches of {r['batch_size']} x {r['block_size']} characters"


def _mfu_text(c: Contender, peak: float | None) -> str:
    """Model FLOPs utilisation over the contender's fastest round of steps (compilation excluded)."""
    from playground.training.flops import mfu

    rounds = [(s1 - s0, t1 - t0) for (s0, t0, _), (s1, t1, _) in zip([(0, 0.0, 0.0), *c.curve], c.curve)]
    rates = [steps * c.tokens_per_step / secs for steps, secs in rounds if steps and secs > 0]
    value = mfu(max(rates, default=None), c.flops_per_token, peak)
    return f", MFU {100 * value:.1f}%" if value is not None else ""


def run(args: argparse.Namespace) -> int:
    import torch

    from playground.config import load_preset
    from playground.families import get_family
    from playground.training.flops import device_peak
    from playground.training.device import device_caps
    from playground.training.spec import resolve_run

    r = RECIPES[args.recipe]
    args.device = getattr(args, "device", None) or r["device"]
    for key in ("threshold", "eval_interval", "eval_iters"):
        if getattr(args, key) is None:
            setattr(args, key, r[key])
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit("bench quality --recipe gpu needs a CUDA GPU; none is visible here")
    if args.threads:
        torch.set_num_threads(args.threads)
    # the character data of nanoGPT's recipes (= nanogpt-cpu-tiny's: Tiny Shakespeare, last 10% held out)
    spec = resolve_run(load_preset("nanogpt-cpu-tiny"), {"data.corpus": "tinyshakespeare", "data.tokenizer": "char"})
    prep = get_family(spec.family).adapter.prepare(spec.data, spec.preset.model, None)
    windows = eval_windows(prep.payload, args.eval_iters, r["batch_size"], r["block_size"])
    caps = device_caps(args.device)
    peak = device_peak(caps.device, caps.autocast_dtype, caps.tf32)
    where = (torch.cuda.get_device_name() if args.device.startswith("cuda") else f"{torch.get_num_threads()} threads")
    print(f"Tiny Shakespeare, {prep.info['chars']:,} characters, vocab {prep.model_config.vocab_size}; "
          f"val loss on {_eval_text(args.eval_iters, r, len(prep.payload.val))} every {args.eval_interval} steps; "
          f"threshold {args.threshold}; torch {torch.__version__}, {where}")

    contenders: list[Contender] = []
    if args.only in ("both", "peer"):
        contenders.append(make_peer(prep, windows, args, r))
    if args.only in ("both", "ours"):
        for name in args.presets or [r["preset"]]:
            contenders.append(make_ours(args, name, prep, windows, r))
    try:
        rnd = 0
        while not all(c.done for c in contenders):
            order = contenders if rnd % 2 == 0 else contenders[::-1]
            for c in order:
                if c.done:
                    continue
                w0 = t0 = time.perf_counter()
                n = c.train_steps(args.eval_interval)
                c.seconds += time.perf_counter() - t0
                c.step += n
                val = c.evaluate()
                c.wall += time.perf_counter() - w0
                c.curve.append((c.step, c.seconds, val))
                print(f"  {c.short:<24} step {c.step:5d}  {c.seconds:7.1f} s  val {val:.4f}", flush=True)
                if args.threshold and val <= args.threshold and c.reached is None:
                    c.reached = (c.step, c.seconds, val, c.wall)
                    c.done = True
                if n == 0 or c.step >= c.max_steps:
                    c.done = True
                if c.done and c is not contenders[0] and args.only == "both":
                    c.peer_when_done = (contenders[0].step, contenders[0].seconds)
            rnd += 1
    finally:
        for c in contenders:
            c.close()

    print()
    for c in contenders:
        ms = 1000 * c.seconds / max(1, c.step)
        if c.reached:
            step, seconds, val, wall = c.reached
            print(f"{c.label}\n    val {val:.4f} <= {args.threshold} at step {step} after {seconds:.1f} s of training "
                  f"({wall:.1f} s with evaluations; {ms:.1f} ms/step{_mfu_text(c, peak)})")
        else:
            last = c.curve[-1] if c.curve else (0, 0.0, float("nan"))
            print(f"{c.label}\n    did not reach {args.threshold}: val {last[2]:.4f} at step {last[0]} after "
                  f"{last[1]:.1f} s ({ms:.1f} ms/step{_mfu_text(c, peak)})")
    peer = contenders[0] if args.only == "both" else None
    for ours in contenders[1:] if peer else []:
        if not ours.reached:
            continue
        print(f"{ours.short}: ", end="")
        if peer.reached:
            note = "" if peer.reached[0] <= r["max_iters"] else (
                f"; nanoGPT got there after its {r['max_iters']} scheduled iterations, at min_lr")
            print(f"ratio ours/nanoGPT wall time to val <= {args.threshold}: {ours.reached[1] / peer.reached[1]:.2f}x "
                  f"({ours.reached[1]:.1f} s vs {peer.reached[1]:.1f} s; evaluation not timed{note})")
            steps, seconds = ours.peer_when_done or (0, 0.0)
            if steps and peer.reached[0] > steps:  # the peer ran on alone: its later steps saw another load
                peer_est = peer.reached[0] * seconds / steps
                print(f"    same-load estimate: {ours.reached[1] / peer_est:.2f}x (nanoGPT's {peer.reached[0]} steps at "
                      f"the {1000 * seconds / steps:.1f} ms/step it took in the rounds both ran, {peer_est:.1f} s)")
        elif peer.curve:
            print(f"ratio ours/nanoGPT wall time to val <= {args.threshold}: < {ours.reached[1] / peer.seconds:.2f}x "
                  f"(nanoGPT did not get there in {peer.step} steps, {peer.seconds:.1f} s)")
    return 0
