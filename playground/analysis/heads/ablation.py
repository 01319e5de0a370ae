"""Per-head ablation, head importance and the pruning curve (Michel et al. 2019).

Data are a fixed list of batches and a loss ``loss(model, batch) -> scalar`` (the mean over
the batch); the loss of the model is the mean over the batches. A head is named ``(module,
head)``; every result holds one list of H values per module, in module order.

- :func:`ablation_losses`: the loss with one head ablated (zero: its output before out_proj is 0;
  mean: its output is its mean over the data), for every head.
- :func:`gradient_importance`: Michel et al.'s I_h = mean over batches of |d L / d xi_h| at
  xi = 1, with xi the head gates of :func:`~playground.analysis.heads.mask.head_mask`.
- :func:`pruning_curve`: heads removed cumulatively in a given order (least important first),
  the loss after each removal; entry 0 is the unablated loss, entry N every head ablated.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch import Tensor, nn

from playground.analysis.heads.mask import (
    full_gates,
    head_mask,
    head_modules,
    mean_head_outputs,
)

Mode = Literal["zero", "mean"]
Head = tuple[str, int]  # (attention module name, head index)


@dataclass
class HeadData:
    """Fixed evaluation data: ``batches`` and ``loss(model, batch) -> scalar mean loss``."""

    batches: list[Any]
    loss: Callable[[nn.Module, Any], Tensor]

    def run(self, model: nn.Module) -> None:
        """One forward over every batch (used to record mean head outputs)."""
        for b in self.batches:
            self.loss(model, b)


@torch.no_grad()
def mean_loss(model: nn.Module, data: HeadData) -> float:
    """The loss averaged over the batches (each batch's mean counts once)."""
    return float(torch.stack([data.loss(model, b).float() for b in data.batches]).mean())


def replacements_for(model: nn.Module, data: HeadData, mode: Mode) -> dict[str, Tensor] | None:
    """What an ablated head outputs: None (zeros) for ``zero``, the mean outputs [H,hd] for ``mean``."""
    if mode == "zero":
        return None
    if mode == "mean":
        return mean_head_outputs(model, data.run)
    raise ValueError(f"ablation mode must be 'zero' or 'mean', got {mode!r}")


def gates_without(model: nn.Module, removed: Sequence[Head]) -> dict[str, Tensor]:
    """Gates [H] per module: 0 for the removed heads, 1 elsewhere."""
    gates = full_gates(model)
    for name, h in removed:
        gates[name][h] = 0.0
    return gates


@torch.no_grad()
def loss_without(model: nn.Module, data: HeadData, removed: Sequence[Head],
                 replacements: dict[str, Tensor] | None = None) -> float:
    """The mean loss with ``removed`` heads ablated (zero, or ``replacements`` for mean ablation)."""
    with head_mask(model, gates_without(model, removed), replacements):
        return mean_loss(model, data)


@torch.no_grad()
def ablation_losses(model: nn.Module, data: HeadData, mode: Mode = "zero",
                    replacements: dict[str, Tensor] | None = None) -> dict[str, list[float]]:
    """``{module: [loss with head h ablated for h in range(H)]}``."""
    repl = replacements if replacements is not None else replacements_for(model, data, mode)
    return {name: [loss_without(model, data, [(name, h)], repl) for h in range(hm.n_head)]
            for name, hm in head_modules(model).items()}


def gradient_importance(model: nn.Module, data: HeadData) -> dict[str, list[float]]:
    """Michel et al. (2019): I_h = mean over batches of |d loss / d xi_h| at xi = 1."""
    gates = full_gates(model, requires_grad=True)
    total = {name: torch.zeros_like(g) for name, g in gates.items()}
    for batch in data.batches:  # autograd.grad: only the gates' gradients, no parameter's .grad touched
        with torch.enable_grad(), head_mask(model, gates):
            loss = data.loss(model, batch)
        grads = torch.autograd.grad(loss, list(gates.values()))
        for name, g in zip(gates, grads):
            total[name] += g.detach().abs()
    n = len(data.batches)
    return {name: (t / n).tolist() for name, t in total.items()}


def ranking(values: dict[str, list[float]], baseline: float = 0.0) -> list[tuple[Head, float]]:
    """Heads sorted by ``value - baseline``, least important (smallest) first."""
    items = [((name, h), v - baseline) for name, vs in values.items() for h, v in enumerate(vs)]
    return sorted(items, key=lambda item: (item[1], item[0]))


@torch.no_grad()
def pruning_curve(model: nn.Module, data: HeadData, order: Sequence[Head], mode: Mode = "zero",
                  replacements: dict[str, Tensor] | None = None) -> list[float]:
    """Loss after removing the first k heads of ``order``, k = 0 .. len(order)."""
    repl = replacements if replacements is not None else replacements_for(model, data, mode)
    return [loss_without(model, data, list(order[:k]), repl) for k in range(len(order) + 1)]
