"""Learning-rate schedules as torch LambdaLR multipliers, plus the plain formulas they follow.

Step s counts optimizer updates from 0; the lr used for update s is `base_lr * multiplier(s)`
(LambdaLR evaluates the multiplier at `last_epoch`, which `scheduler.step()` advances after
each update). The multipliers are small callable classes, so `scheduler.state_dict()` holds
plain numbers and a resumed run rebuilds the same schedule.
"""
from __future__ import annotations

import math

import torch
from torch.optim.lr_scheduler import LambdaLR

from playground.errors import ConfigError
from playground.training.config import TrainConfig

# -- formulas (the reference the tests hold the schedulers to) ---------------------------------


def cosine_lr(step: int, lr: float, min_lr: float, warmup: int, decay_steps: int) -> float:
    """nanoGPT's schedule: linear warmup lr·(s+1)/(w+1), cosine from lr to min_lr until
    `decay_steps`, then min_lr."""
    if step < warmup:
        return lr * (step + 1) / (warmup + 1)
    if step >= decay_steps:
        return min_lr
    ratio = (step - warmup) / max(1, decay_steps - warmup)
    coeff = 0.5 * (1.0 + math.cos(math.pi * ratio))  # 1 -> 0
    return min_lr + coeff * (lr - min_lr)


def inverse_sqrt_lr(step: int, d_model: int, warmup: int, scale: float = 1.0) -> float:
    """Vaswani et al. (2017), eq. 3: scale · d^-0.5 · min(t^-0.5, t · w^-1.5) with t = step + 1."""
    t = step + 1
    return scale * d_model**-0.5 * min(t**-0.5, t * warmup**-1.5)


def constant_lr(step: int, lr: float, warmup: int) -> float:
    """lr after a linear warmup lr·(s+1)/(w+1)."""
    if step < warmup:
        return lr * (step + 1) / (warmup + 1)
    return lr


# -- multipliers -------------------------------------------------------------------------------


class ConstantMultiplier:
    """constant_lr / lr."""

    def __init__(self, warmup: int) -> None:
        self.warmup = warmup

    def __call__(self, step: int) -> float:
        return constant_lr(step, 1.0, self.warmup)


class CosineMultiplier:
    """cosine_lr / lr."""

    def __init__(self, warmup: int, decay_steps: int, min_ratio: float) -> None:
        self.warmup = warmup
        self.decay_steps = decay_steps
        self.min_ratio = min_ratio

    def __call__(self, step: int) -> float:
        return cosine_lr(step, 1.0, self.min_ratio, self.warmup, self.decay_steps)


class InverseSqrtMultiplier:
    """inverse_sqrt_lr with scale 1 (the base lr is the scale)."""

    def __init__(self, d_model: int, warmup: int) -> None:
        self.d_model = d_model
        self.warmup = warmup

    def __call__(self, step: int) -> float:
        return inverse_sqrt_lr(step, self.d_model, self.warmup)


def make_multiplier(cfg: TrainConfig, d_model: int | None = None):
    """The lr multiplier of `cfg.schedule` (d_model is needed by inverse_sqrt)."""
    if cfg.schedule == "constant":
        return ConstantMultiplier(cfg.warmup_steps)
    if cfg.schedule == "cosine":
        decay = cfg.decay_steps or cfg.max_steps
        return CosineMultiplier(cfg.warmup_steps, decay, cfg.min_lr / cfg.lr)
    if cfg.schedule == "inverse_sqrt":
        if not d_model:
            raise ConfigError("train.schedule = inverse_sqrt needs a model with d_model; use cosine or constant.")
        return InverseSqrtMultiplier(d_model, cfg.warmup_steps)
    raise ConfigError(f"train.schedule = {cfg.schedule!r} is not valid; choose one of: constant, cosine, inverse_sqrt.")


def make_scheduler(optimizer: torch.optim.Optimizer, cfg: TrainConfig, d_model: int | None = None) -> LambdaLR:
    """A LambdaLR over `optimizer` (whose lr is cfg.lr) following cfg.schedule."""
    return LambdaLR(optimizer, make_multiplier(cfg, d_model))


def lr_at(cfg: TrainConfig, step: int, d_model: int | None = None) -> float:
    """The lr the scheduler gives update `step` (for charts and previews)."""
    return cfg.lr * make_multiplier(cfg, d_model)(step)
