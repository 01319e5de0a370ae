"""Logits filters: small pure functions over logits `[..., V]` (x-transformers style).

Each returns new logits in which removed tokens are `-inf`, so `softmax` of the result is the
distribution sampled from. They are the lesson, so they are hand-written; the tests check
each against an independent computation (sorted numpy, `torch.topk`, Hugging Face's
logits processors).

Order used by the decoders (the same as Hugging Face `generate`): penalties on the raw
logits (repetition, then frequency/presence), then temperature, top-k, top-p, min-p.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from typing import Any

import torch
from torch import Tensor

from playground.errors import ConfigError

NEG_INF = float("-inf")

__all__ = [
    "SamplingConfig",
    "temperature",
    "top_k",
    "top_p",
    "min_p",
    "repetition_penalty",
    "frequency_presence_penalty",
    "apply_filters",
    "filter_stages",
    "make_warpers",
    "draw",
]


def temperature(logits: Tensor, t: float) -> Tensor:
    """Divide logits by `t`; `t = 0` means greedy: only the argmax survives (first on ties)."""
    if t < 0 or math.isnan(t):
        raise ConfigError(f"temperature must be >= 0 (0 = greedy), got {t}.")
    if t == 0:
        keep = logits.argmax(dim=-1, keepdim=True)  # [..., 1]
        out = torch.full_like(logits, NEG_INF)
        return out.scatter(-1, keep, logits.gather(-1, keep))
    if t == 1:
        return logits
    return logits / t


def top_k(logits: Tensor, k: int | None) -> Tensor:
    """Keep the `k` largest logits (exactly k, as `torch.topk` picks them); `None`/0 = all."""
    if not k or k >= logits.shape[-1]:
        return logits
    if k < 0:
        raise ConfigError(f"top-k must be >= 1 (or 0 / empty for no limit), got {k}.")
    values, index = torch.topk(logits, k, dim=-1)  # [..., k]
    return torch.full_like(logits, NEG_INF).scatter(-1, index, values)


def top_p(logits: Tensor, p: float | None) -> Tensor:
    """Nucleus: keep the smallest set of most likely tokens whose probability reaches `p`.

    A token is dropped when the tokens ranked above it already hold at least `p`; the most
    likely token is always kept. `p >= 1` or `None` keeps everything.
    """
    if p is None or p >= 1:
        return logits
    if not p > 0:
        raise ConfigError(f"top-p must be in (0, 1], got {p}.")
    sorted_logits, order = torch.sort(logits, dim=-1, descending=True)  # [..., V]
    probs = sorted_logits.softmax(dim=-1)
    mass_before = probs.cumsum(dim=-1) - probs  # probability of the tokens ranked above
    drop_sorted = mass_before >= p
    drop_sorted[..., 0] = False
    drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
    return logits.masked_fill(drop, NEG_INF)


def min_p(logits: Tensor, p: float | None) -> Tensor:
    """Keep tokens whose probability is at least `p` times the top token's; `None`/0 = all."""
    if not p:
        return logits
    if not 0 < p <= 1:
        raise ConfigError(f"min-p must be in [0, 1], got {p}.")
    probs = logits.softmax(dim=-1)
    threshold = p * probs.amax(dim=-1, keepdim=True)  # [..., 1]
    return logits.masked_fill(probs < threshold, NEG_INF)


def draw(probs: Tensor, u: Tensor) -> Tensor:
    """One token per row by the inverse CDF: the first index whose running total exceeds
    `u · total`. probs [B, V] (rows need not be normalised; zero entries are never drawn),
    u [B] uniform in [0, 1) -> ids [B].

    Same distribution as `torch.multinomial(probs, 1)` (a test checks it), but the randomness
    is one number per row drawn by the caller: rows of many users sampled in one call each
    take their number from their own generator, so a user's tokens do not depend on who else
    is in the batch.
    """
    cdf = probs.cumsum(-1)  # [B, V]
    target = (u.to(cdf.dtype) * cdf[:, -1]).unsqueeze(1)  # [B, 1]
    picked = torch.searchsorted(cdf, target, right=True).squeeze(1)  # [B]; V only by rounding at u ~ 1
    last_kept = (probs > 0).cumsum(-1).argmax(-1)  # [B] the last token with probability > 0
    return torch.minimum(picked, last_kept)


def repetition_penalty(logits: Tensor, seen: Tensor, penalty: float) -> Tensor:
    """CTRL (Keskar et al. 2019): for tokens already in the context, divide positive logits
    by `penalty` and multiply negative ones by it (both make the token less likely when > 1).

    `seen` is a bool mask `[..., V]` (or counts: > 0 counts as seen).
    """
    if penalty == 1:
        return logits
    if not penalty > 0:
        raise ConfigError(f"repetition penalty must be > 0 (1 = off), got {penalty}.")
    penalised = torch.where(logits > 0, logits / penalty, logits * penalty)
    return torch.where(seen.bool() if seen.dtype != torch.bool else seen, penalised, logits)


def frequency_presence_penalty(logits: Tensor, counts: Tensor, frequency: float = 0.0, presence: float = 0.0) -> Tensor:
    """OpenAI style: `logits - counts * frequency - (counts > 0) * presence`.

    `counts` `[..., V]` holds how often each token was generated so far.
    """
    if not frequency and not presence:
        return logits
    counts = counts.to(logits.dtype)
    return logits - counts * frequency - (counts > 0).to(logits.dtype) * presence


@dataclass(frozen=True)
class SamplingConfig:
    """The knobs of sampling. Defaults sample from the model's plain distribution.

    `temperature = 0` is greedy decoding; `top_k = 0`, `top_p = 1`, `min_p = 0`, penalties
    1 / 0 / 0 switch the corresponding filter off.
    """

    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    min_p: float = 0.0
    repetition_penalty: float = 1.0
    frequency_penalty: float = 0.0
    presence_penalty: float = 0.0

    def __post_init__(self) -> None:
        checks = [
            (self.temperature >= 0, f"temperature must be >= 0 (0 = greedy), got {self.temperature}."),
            (self.top_k >= 0, f"top-k must be >= 0 (0 = no limit), got {self.top_k}."),
            (0 < self.top_p <= 1, f"top-p must be in (0, 1] (1 = off), got {self.top_p}."),
            (0 <= self.min_p <= 1, f"min-p must be in [0, 1] (0 = off), got {self.min_p}."),
            (self.repetition_penalty > 0, f"repetition penalty must be > 0 (1 = off), got {self.repetition_penalty}."),
        ]
        for ok, message in checks:
            if not ok:
                raise ConfigError(message)
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, float) and not math.isfinite(value):
                raise ConfigError(f"{f.name.replace('_', ' ')} must be a finite number, got {value}.")

    @property
    def greedy(self) -> bool:
        """True when decoding is deterministic argmax."""
        return self.temperature == 0 or self.top_k == 1

    @property
    def uses_penalties(self) -> bool:
        return self.repetition_penalty != 1 or bool(self.frequency_penalty) or bool(self.presence_penalty)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SamplingConfig:
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ConfigError(f"Unknown sampling option(s) {unknown}; valid: {sorted(names)}.")
        return cls(**d)


Warper = Callable[[Tensor], Tensor]


def make_warpers(cfg: SamplingConfig) -> list[Warper]:
    """The active (non no-op) filters after the penalties, in order; built once per call so the
    per-token loop runs no checks for switched-off knobs."""
    warpers: list[Warper] = []
    if cfg.temperature not in (0, 1):
        warpers.append(lambda x, t=cfg.temperature: x / t)
    if cfg.top_k:
        warpers.append(lambda x, k=cfg.top_k: top_k(x, k))
    if cfg.top_p < 1:
        warpers.append(lambda x, p=cfg.top_p: top_p(x, p))
    if cfg.min_p > 0:
        warpers.append(lambda x, p=cfg.min_p: min_p(x, p))
    return warpers


def apply_penalties(logits: Tensor, cfg: SamplingConfig, seen: Tensor | None, generated_counts: Tensor | None) -> Tensor:
    """Repetition penalty over `seen` (context tokens), frequency/presence over generated counts."""
    if cfg.repetition_penalty != 1 and seen is not None:
        logits = repetition_penalty(logits, seen, cfg.repetition_penalty)
    if (cfg.frequency_penalty or cfg.presence_penalty) and generated_counts is not None:
        logits = frequency_presence_penalty(logits, generated_counts, cfg.frequency_penalty, cfg.presence_penalty)
    return logits


def apply_filters(
    logits: Tensor,
    cfg: SamplingConfig,
    seen: Tensor | None = None,
    generated_counts: Tensor | None = None,
) -> Tensor:
    """All filters of `cfg` in order; `softmax` of the result is the sampling distribution.

    Temperature 0 (greedy) leaves only the argmax of the penalised logits.
    """
    logits = apply_penalties(logits, cfg, seen, generated_counts)
    if cfg.temperature == 0:
        return temperature(logits, 0)
    for warp in make_warpers(cfg):
        logits = warp(logits)
    return logits


def filter_stages(
    logits: Tensor,
    cfg: SamplingConfig,
    seen: Tensor | None = None,
    generated_counts: Tensor | None = None,
) -> dict[str, Tensor]:
    """Probabilities after each stage, for showing what each knob does.

    Keys (in order): "raw" (model, T = 1), "penalties", "temperature", "top_k", "top_p",
    "min_p" (= the final sampling distribution). A switched-off stage repeats the previous one.
    """
    stages: dict[str, Tensor] = {"raw": logits.softmax(-1)}
    x = apply_penalties(logits, cfg, seen, generated_counts)
    stages["penalties"] = x.softmax(-1)
    x = temperature(x, cfg.temperature)
    stages["temperature"] = x.softmax(-1)
    x = top_k(x, cfg.top_k)
    stages["top_k"] = x.softmax(-1)
    x = top_p(x, cfg.top_p)
    stages["top_p"] = x.softmax(-1)
    x = min_p(x, cfg.min_p)
    stages["min_p"] = x.softmax(-1)
    return stages
