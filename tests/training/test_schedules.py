"""The lr schedulers (torch LambdaLR) follow their formulas step by step."""
from __future__ import annotations

import math

import pytest
import torch

from playground.training.config import TrainConfig
from playground.training.schedules import (
    constant_lr,
    cosine_lr,
    inverse_sqrt_lr,
    lr_at,
    make_scheduler,
)


def _lrs(cfg: TrainConfig, steps: int, d_model: int | None = None) -> list[float]:
    p = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([p], lr=cfg.lr)
    sched = make_scheduler(opt, cfg, d_model)
    out = []
    for _ in range(steps):
        out.append(opt.param_groups[0]["lr"])  # the lr this update uses
        opt.step()
        sched.step()
    return out


def test_cosine_matches_formula_and_nanogpt_landmarks():
    cfg = TrainConfig(max_steps=300, lr=1e-3, min_lr=1e-4, warmup_steps=100, schedule="cosine")
    got = _lrs(cfg, 320)
    want = [cosine_lr(s, 1e-3, 1e-4, 100, 300) for s in range(320)]
    assert got == pytest.approx(want, rel=1e-12, abs=1e-15)
    assert got[0] == pytest.approx(1e-3 / 101)  # nanoGPT warmup: lr * (it + 1) / (warmup + 1)
    assert got[100] == pytest.approx(1e-3)  # peak right after warmup
    assert got[200] == pytest.approx(1e-4 + 0.5 * (1e-3 - 1e-4))  # half way down the cosine
    assert got[300] == pytest.approx(1e-4) and got[319] == pytest.approx(1e-4)


def test_cosine_decay_steps_differ_from_max_steps():
    cfg = TrainConfig(max_steps=500, decay_steps=200, lr=1.0, min_lr=0.1, warmup_steps=0)
    got = _lrs(cfg, 250)
    assert got[0] == pytest.approx(1.0)
    assert got[200:] == pytest.approx([0.1] * 50)


def test_inverse_sqrt_matches_the_transformer_paper():
    d, w = 512, 4000
    cfg = TrainConfig(max_steps=10, lr=1.0, schedule="inverse_sqrt", warmup_steps=w)
    got = _lrs(cfg, 9000, d_model=d)
    for s in (0, 1, 999, 3998, 3999, 4000, 8999):
        t = s + 1
        paper = d**-0.5 * min(t**-0.5, t * w**-1.5)  # eq. 3 of "Attention Is All You Need"
        assert got[s] == pytest.approx(paper, rel=1e-12)
        assert inverse_sqrt_lr(s, d, w) == pytest.approx(paper, rel=1e-12)
    peak = max(got)
    assert got.index(peak) == w - 1 and peak == pytest.approx(d**-0.5 * w**-0.5)


def test_inverse_sqrt_scale_is_the_base_lr():
    cfg = TrainConfig(lr=2.0, schedule="inverse_sqrt", warmup_steps=10)
    assert _lrs(cfg, 30, d_model=64) == pytest.approx([inverse_sqrt_lr(s, 64, 10, scale=2.0) for s in range(30)])


def test_constant_with_warmup():
    cfg = TrainConfig(lr=0.5, schedule="constant", warmup_steps=4)
    assert _lrs(cfg, 8) == pytest.approx([constant_lr(s, 0.5, 4) for s in range(8)])
    assert _lrs(cfg, 8)[4:] == pytest.approx([0.5] * 4)
    assert _lrs(TrainConfig(lr=0.5, schedule="constant", warmup_steps=0), 3) == pytest.approx([0.5] * 3)


def test_lr_at_agrees_with_the_scheduler():
    cfg = TrainConfig(max_steps=50, lr=1e-3, min_lr=1e-5, warmup_steps=5)
    assert [lr_at(cfg, s) for s in range(50)] == pytest.approx(_lrs(cfg, 50))


def test_scheduler_state_dict_is_plain_data():
    import json

    p = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([p], lr=1.0)
    sched = make_scheduler(opt, TrainConfig(lr=1.0, warmup_steps=3, max_steps=10))
    json.dumps(sched.state_dict())  # resumable without pickling
    assert not math.isnan(sched.get_last_lr()[0])
