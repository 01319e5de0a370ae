"""The induction known result's tooling: a 2-layer attention-only GPT trained on repeated random
spans (mixed with plain text), and :func:`find_heads`, the Heads view's previous-token and
induction scores beside head patching on induction pairs. Olsson et al. (2022) find a
previous-token head in layer 0 and an induction head in layer 1; docs/causal.md ("Induction
heads") has the recipe, the runs, and the shipped checkpoint ``gpt-induction-2l``.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from playground.analysis.causal.pairs import induction_pair
from playground.analysis.causal.patching import clean_and_corrupted, patch_grids
from playground.analysis.heads.report import family_data, gpt_induction, recorded_positional
from playground.analysis.heads.scores import uniform_causal_baseline
from playground.analysis.inputs import special_id_set
from playground.bundle import Bundle
from playground.errors import PlaygroundError
from playground.models.gpt import GPT, GPTConfig
from playground.workspace import Workspace


@dataclass
class Recipe:
    """How :func:`train_induction` trains: the model's shape and the optimisation. Each step sees
    ``repeat_rows`` random sequences with a repeated span (loss on the copied tokens) and
    ``text_rows`` windows of plain text (loss on every token); AdamW (``weight_decay`` on every
    trained tensor, as torch applies it), linear warmup, then constant."""

    block_size: int = 32
    n_head: int = 4
    d_model: int = 64
    pos_encoding: str = "rope"
    min_span: int = 4
    steps: int = 1000
    repeat_rows: int = 64
    text_rows: int = 64
    lr: float = 3e-3
    warmup: int = 200
    weight_decay: float = 0.0
    seed: int = 0

    def to_dict(self) -> dict:
        return asdict(self)


def attention_only_gpt(vocab_size: int, recipe: Recipe | None = None) -> GPT:
    """A 2-layer GPT that is attention only: each MLP's output projection is zero and frozen, so
    every block adds exactly attn(ln(x)); it stays a plain GPT (a bundle, the Heads view, export)."""
    r = recipe or Recipe()
    torch.manual_seed(r.seed)
    model = GPT(GPTConfig(vocab_size=vocab_size, block_size=r.block_size, n_layer=2, n_head=r.n_head,
                          d_model=r.d_model, d_ff=4, pos_encoding=r.pos_encoding))  # type: ignore[arg-type]
    for block in model.blocks:
        proj: nn.Module = block.mlp.proj  # type: ignore[union-attr,assignment]
        for p in proj.parameters():
            nn.init.zeros_(p)
            p.requires_grad_(False)
    return model


def induction_batch(pool: Tensor, block: int, batch: int, g: torch.Generator,
                    min_span: int = 4) -> tuple[Tensor, Tensor]:
    """Random tokens of ``pool`` [B, block] where, in each row, a span of n tokens (n drawn per row,
    ``min_span`` .. block / 2) after a random prefix of p tokens (0 .. block - 2n) is repeated right
    after itself: neither the copy's distance nor its position can be guessed, only found by
    matching tokens. Returns (tokens, copied [B, block]: True at the second copy's tokens after
    its first, the ones copying predicts)."""
    if not 1 <= min_span <= block // 2:
        raise PlaygroundError(f"min_span must be between 1 and block / 2 = {block // 2}, got {min_span}.")
    x = pool[torch.randint(len(pool), (batch, block), generator=g)]  # [B,T]
    n = torch.randint(min_span, block // 2 + 1, (batch,), generator=g)  # [B]
    p = (torch.rand(batch, generator=g) * (block - 2 * n + 1)).long()  # [B]: 0 .. T-2n
    t = torch.arange(block)[None, :]  # [1,T]
    second = (t >= (p + n)[:, None]) & (t < (p + 2 * n)[:, None])  # [B,T]: the second copy
    src = (t - n[:, None]).clamp(min=0)  # [B,T]: the column each second-copy token copies
    x = torch.where(second, x.gather(1, src), x)  # the first copy is never overwritten: one gather is exact
    copied = second & (t > (p + n)[:, None])  # its first token is not predictable
    return x, copied


def text_windows(ids: Tensor, block: int, rows: int, g: torch.Generator) -> Tensor:
    """``rows`` random windows of block + 1 tokens of ``ids`` [N] -> [rows, block + 1]."""
    starts = torch.randint(0, len(ids) - block - 1, (rows,), generator=g)  # [R]
    return ids[starts[:, None] + torch.arange(block + 1)[None, :]]


def train_induction(vocab_size: int, pool: Sequence[int], text: Tensor | None = None, recipe: Recipe | None = None,
                    progress: Callable[[int, float], None] | None = None) -> GPT:
    """Train :func:`attention_only_gpt` by ``recipe`` on :func:`induction_batch` sequences drawn
    from ``pool`` (the vocabulary without specials) plus windows of ``text`` (training token ids;
    none: repeats only). ``progress(step, loss)`` every 50 steps. Returns it in eval mode."""
    r = recipe or Recipe()
    model = attention_only_gpt(vocab_size, r)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=r.lr, betas=(0.9, 0.99),
                            weight_decay=r.weight_decay)
    g = torch.Generator().manual_seed(r.seed)
    pool_t = torch.as_tensor(list(pool), dtype=torch.long)
    model.train()
    for step in range(1, r.steps + 1):
        for group in opt.param_groups:
            group["lr"] = r.lr * min(1.0, step / max(1, r.warmup))
        x, copied = induction_batch(pool_t, r.block_size, r.repeat_rows, g, r.min_span)  # [B,T] each
        logits = model(x)  # [B,T,V]: position t predicts token t+1
        loss = F.cross_entropy(logits[:, :-1][copied[:, 1:]], x[:, 1:][copied[:, 1:]])
        if text is not None and r.text_rows:
            w = text_windows(text, r.block_size, r.text_rows, g)  # [R,T+1]
            loss = loss + F.cross_entropy(model(w[:, :-1]).flatten(0, 1), w[:, 1:].flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
        if progress is not None and step % 50 == 0:
            progress(step, float(loss.detach()))
    return model.eval()


# A head of the circuit puts at least half its attention on its key: 5x what uniform attention
# scores on previous-token (0.098 on windows of 32) and 11x on induction (0.045 on 16 tokens
# repeated); and restoring it alone brings back at least half the clean-corrupted difference.
SCORE_MIN = 0.5
EFFECT_MIN = 0.5


@dataclass
class HeadsFound:
    """Per layer x head: the Heads view's scores and the mean denoising head-patching effect."""

    previous: np.ndarray  # [L,H]: attention to key q-1 on validation windows
    induction: np.ndarray  # [L,H]: attention to key q-L+1 on random tokens repeated
    patching: np.ndarray  # [L,H]: normalised effect, mean over the pairs
    pairs: int  # induction pairs that moved the answer (the mean's count)
    in_context_drop: float  # loss on the first copy minus the second
    uniform: dict[str, float]  # what uniform attention scores

    def named(self) -> dict[str, tuple[int, int]]:
        """(layer, head) of the top previous-token head in layer 0, the top induction head in
        layer 1, and the top patched head of each layer."""
        return {"previous": (0, int(self.previous[0].argmax())), "induction": (1, int(self.induction[1].argmax())),
                "patched_0": (0, int(self.patching[0].argmax())), "patched_1": (1, int(self.patching[1].argmax()))}

    def agree(self) -> bool:
        """Whether patching ranks first in each layer the head the score ranks first."""
        n = self.named()
        return n["previous"] == n["patched_0"] and n["induction"] == n["patched_1"]

    def verdict(self) -> list[str]:
        """What keeps this model from the known result (empty: it shows it): patching must rank
        first in layer 0 the top previous-token head and in layer 1 the top induction head, each
        head's score at least :data:`SCORE_MIN` and its mean patching effect at least :data:`EFFECT_MIN`."""
        if self.pairs == 0:
            return ["no induction pair changes the model's answer: it has not learned induction"]
        out = []
        for (layer, head), score, what in ((self.named()["previous"], self.previous, "previous-token"),
                                           (self.named()["induction"], self.induction, "induction")):
            patched = int(self.patching[layer].argmax())
            if patched != head:
                out.append(f"layer {layer}: the top {what} head is H{head} but patching ranks H{patched} first")
            if score[layer, head] < SCORE_MIN:
                out.append(f"layer {layer}: the top {what} score is {score[layer, head]:.2f} < {SCORE_MIN}")
            if self.patching[layer, head] < EFFECT_MIN:
                out.append(f"layer {layer}: H{head}'s patching effect is {self.patching[layer, head]:.2f} < {EFFECT_MIN}")
        return out

    def to_dict(self) -> dict:
        return {"previous": self.previous.round(4).tolist(), "induction": self.induction.round(4).tolist(),
                "patching": self.patching.round(4).tolist(), "pairs": self.pairs,
                "in_context_drop": round(self.in_context_drop, 4), "uniform": self.uniform,
                "named": {k: list(v) for k, v in self.named().items()}, "agree": self.agree(),
                "verdict": self.verdict()}


def patching_effects(model: GPT, pool: Sequence[int], pairs: int = 8, length: int = 12,
                     seed: int = 0) -> tuple[np.ndarray, int]:
    """Mean denoising head-patching effect [L,H] over ``pairs`` induction pairs (random distinct
    tokens of ``pool``, ``length`` then a repeat up to a varying answer), and how many pairs
    moved the answer (a pair whose corruption does not change it has nothing to patch; with
    none, zeros and 0)."""
    effects = []
    for s in range(pairs):
        pair = induction_pair(pool, length, answer_at=1 + s % (length - 1), seed=seed + s)
        try:
            runs = clean_and_corrupted(model, pair.clean_ids, pair.corrupted_ids, pair.metric, ("heads",))
        except PlaygroundError:
            continue
        effects.append(patch_grids(model, runs, ("heads",), "denoise")["heads"].effect)
    if not effects:  # nothing to patch: no effect anywhere (verdict() fails it)
        return np.zeros((model.config.n_layer, model.config.n_head)), 0
    return np.mean(effects, axis=0), len(effects)


@torch.no_grad()
def find_heads(model: GPT, inputs: list[tuple], pool: Sequence[int], specials: set[int] | None = None, n: int = 64,
               seed: int = 0, pairs: int = 8) -> HeadsFound:
    """The Heads view's scores, computed by its own functions on its own inputs (previous-token on
    ``inputs``, its batches of validation windows [B,T]; induction on ``n`` random sequences of
    block_size / 2 tokens repeated, drawn with ``seed``), beside head patching on ``pairs``
    induction pairs of tokens from ``pool``."""
    names = [f"blocks.{i}.attn" for i in range(len(model.blocks))]
    prev = recorded_positional(model, inputs)["previous"]
    V, T = model.config.vocab_size, model.config.block_size
    length = T // 2
    ind, in_context = gpt_induction(model, V, set(specials or ()), length, n, seed)
    effects, used = patching_effects(model, pool, pairs, seed=seed)
    uniform = {"previous": uniform_causal_baseline(int(inputs[0][0].shape[1]), -1),
               "induction": uniform_causal_baseline(2 * length, first_query=length)}
    return HeadsFound(np.array([prev[m] for m in names]), np.array([ind[m] for m in names]), effects, used,
                      in_context["drop"], uniform)


def bundle_heads(bundle: Bundle, workspace: Workspace | None = None, n: int = 64, seed: int = 0,
                 pairs: int = 8) -> HeadsFound:
    """:func:`find_heads` on a GPT bundle, with the Heads view's inputs: ``n`` validation windows
    drawn with ``seed`` (:func:`family_data`, as ``analyse_heads`` does) and its vocabulary
    without the tokenizer's special tokens."""
    model = bundle.model
    if not isinstance(model, GPT):
        raise PlaygroundError(f"{bundle.name!r} is a {bundle.family} model; the induction check reads a GPT's heads.")
    _, inputs = family_data(bundle, n, seed, workspace=workspace)
    specials = special_id_set(bundle.tokenizer) if bundle.tokenizer is not None else set()
    pool = [i for i in range(model.config.vocab_size) if i not in specials]
    return find_heads(model, inputs, pool, specials, n, seed, pairs)
