"""The induction known result's tooling: a 2-layer attention-only GPT trained on repeated random
spans, and :func:`find_heads`, the Heads view's previous-token and induction scores beside head
patching on induction pairs. Olsson et al. (2022) find a previous-token head in layer 0 and an
induction head in layer 1; whether a model trained here forms them, and whether patching names
the same heads, is what find_heads reports (docs/causal.md: not yet on this machine's budget).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.torch import load_model
from torch import Tensor, nn

from playground.analysis.causal.pairs import induction_pair
from playground.analysis.causal.patching import clean_and_corrupted, patch_grids
from playground.analysis.heads.scores import (
    induction_scores,
    positional_scores,
    repeated_random_tokens,
)
from playground.errors import PlaygroundError
from playground.models.attention import record_attention
from playground.models.gpt import GPT, GPTConfig


def attention_only_gpt(vocab: int = 32, length: int = 16, n_head: int = 4, d_model: int = 64, seed: int = 0,
                       pos_encoding: str = "learned") -> GPT:
    """A 2-layer GPT that is attention only: each MLP's output projection is zero and frozen, so
    every block adds exactly attn(ln(x)); it stays a plain GPT (a bundle, the Heads view, export)."""
    torch.manual_seed(seed)
    model = GPT(GPTConfig(vocab_size=vocab, block_size=2 * length, n_layer=2, n_head=n_head, d_model=d_model, d_ff=4,
                          pos_encoding=pos_encoding))
    for block in model.blocks:
        for p in block.mlp.proj.parameters():
            nn.init.zeros_(p)
            p.requires_grad_(False)
    return model


def induction_batch(vocab: int, block: int, batch: int, g: torch.Generator) -> tuple[Tensor, Tensor]:
    """Random tokens [B, block] where a random span of n tokens (one n per batch, 2 .. block / 2 - 2)
    is repeated right after itself, starting at a random offset per row: neither the copy's
    distance nor its absolute position can be guessed, only found by an induction circuit. Spans
    as short as 2 leave no room for a circuit that matches a token k > 1 positions back (which
    longer spans alone let a model learn instead of the previous-token head).
    Returns (tokens, copied [B, block]: True at the second copy's tokens after its first)."""
    x = torch.randint(vocab, (batch, block), generator=g)  # [B,T]
    n = int(torch.randint(2, block // 2 - 1, (1,), generator=g))
    starts = torch.randint(0, block - 2 * n + 1, (batch,), generator=g)  # [B]
    cols = starts[:, None] + torch.arange(n)[None, :]  # [B,n]: the first copy's columns
    x.scatter_(1, cols + n, x.gather(1, cols))  # second copy right after the first
    copied = torch.zeros(batch, block, dtype=torch.bool)
    copied.scatter_(1, cols[:, 1:] + n, True)  # predictable by copying (the copy's first token is not)
    return x, copied


def train_induction(vocab: int = 32, length: int = 16, steps: int = 3000, batch: int = 64, lr: float = 1e-3,
                    seed: int = 0, pos_encoding: str = "learned") -> GPT:
    """Train :func:`attention_only_gpt` (context 2 x ``length``) on :func:`induction_batch`
    sequences, the loss on the copied tokens only (the rest is unpredictable noise that would
    drown the signal); returns it in eval mode."""
    model = attention_only_gpt(vocab, length, seed=seed, pos_encoding=pos_encoding)
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=lr)
    g = torch.Generator().manual_seed(seed)
    model.train()
    for _ in range(steps):
        x, copied = induction_batch(vocab, 2 * length, batch, g)  # [B,2L] each
        logits = model(x[:, :-1])  # [B,2L-1,V]: position t predicts token t+1
        loss = F.cross_entropy(logits[copied[:, 1:]], x[:, 1:][copied[:, 1:]])
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model.eval()


@dataclass
class HeadsFound:
    """Per layer x head: the attention scores and the mean denoising head-patching effect."""

    previous: np.ndarray  # [L,H]
    induction: np.ndarray  # [L,H]
    patching: np.ndarray  # [L,H]
    in_context_drop: float  # loss on the first copy minus the second

    def named(self) -> dict[str, tuple[int, int]]:
        """(layer, head) of the top previous-token head in layer 0, the top induction head in
        layer 1, and the top patched head of each layer."""
        return {"previous": (0, int(self.previous[0].argmax())), "induction": (1, int(self.induction[1].argmax())),
                "patched_0": (0, int(self.patching[0].argmax())), "patched_1": (1, int(self.patching[1].argmax()))}


@torch.no_grad()
def find_heads(model: GPT, vocab: int = 32, length: int = 12, pairs: int = 8, seed: int = 0) -> HeadsFound:
    """Heads view scores on repeated random tokens beside head patching on induction pairs."""
    g = torch.Generator().manual_seed(seed)
    x = repeated_random_tokens(range(vocab), length, 32, g)  # [B,2L]
    with record_attention(model) as maps:
        logits = model(x)
    names = [f"blocks.{i}.attn" for i in range(len(model.blocks))]
    prev = positional_scores({n: maps[n] for n in names})["previous"]
    ind = induction_scores({n: maps[n] for n in names}, length)
    loss = F.cross_entropy(logits[:, :-1].flatten(0, 1), x[:, 1:].flatten(), reduction="none").view(32, -1)
    drop = float(loss[:, : length - 1].mean() - loss[:, length:].mean())
    effects = []
    for s in range(pairs):
        pair = induction_pair(range(vocab), length, answer_at=1 + s % (length - 1), seed=seed + s)
        try:
            runs = clean_and_corrupted(model, pair.clean_ids, pair.corrupted_ids, pair.metric, ("heads",))
        except PlaygroundError:  # this pair's corruption does not move the answer: nothing to patch
            continue
        effects.append(patch_grids(model, runs, ("heads",), "denoise")["heads"].effect)
    if not effects:
        raise PlaygroundError("No induction pair changes this model's answer: it has not learned induction.")
    return HeadsFound(np.array([prev[n] for n in names]), np.array([ind[n] for n in names]),
                      np.mean(effects, axis=0), drop)


def load_induction(folder: str | Path) -> GPT:
    """The shipped attention-only model (scripts/train_induction_checkpoint.py): safetensors, never a pickle."""
    folder = Path(folder)
    info = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    model = GPT(GPTConfig(**info["config"]))
    load_model(model, str(folder / "model.safetensors"))
    return model.eval()
