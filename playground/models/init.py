"""Initialising a model from a run's own ``torch.Generator``.

Building a module draws its initial weights from torch's process-global RNG, which every
thread of a server shares, so a run that seeds it and then builds its model can be disturbed
by (and disturbs) any other thread. :func:`init_weights` redraws every parameter of a built
model from the run's generator instead: each torch module as its own ``reset_parameters``
would (same distributions), each module of ours through its ``reset_parameters(generator)``,
then the family's own init (:meth:`ModelBase.init_family_weights`). A module it does not know
is an error, so no parameter can keep a value from the global RNG.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn

from playground.models.base import ModelBase

Init = Callable[[nn.Module, "torch.Generator | None"], None]


def _fan_in_uniform(module: nn.Module, generator: torch.Generator | None) -> None:
    """nn.Linear / nn.Conv*: kaiming_uniform(a=sqrt(5)) weights = U(-1/sqrt(fan_in), +), bias likewise."""
    weight: torch.Tensor = module.weight  # type: ignore[assignment]
    nn.init.kaiming_uniform_(weight, a=math.sqrt(5), generator=generator)
    bias = getattr(module, "bias", None)
    if bias is not None:
        fan_in, _ = nn.init._calculate_fan_in_and_fan_out(weight)
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0.0
        nn.init.uniform_(bias, -bound, bound, generator=generator)


def _embedding(module: nn.Module, generator: torch.Generator | None) -> None:
    """nn.Embedding: N(0, 1), the padding row 0."""
    assert isinstance(module, nn.Embedding)
    nn.init.normal_(module.weight, generator=generator)
    if module.padding_idx is not None:
        with torch.no_grad():
            module.weight[module.padding_idx].fill_(0)


def _rnn(module: nn.Module, generator: torch.Generator | None) -> None:
    """nn.GRU / nn.LSTM / nn.RNN: every weight and bias U(-1/sqrt(hidden), 1/sqrt(hidden))."""
    assert isinstance(module, nn.RNNBase)
    bound = 1.0 / math.sqrt(module.hidden_size) if module.hidden_size > 0 else 0.0
    for p in module.parameters(recurse=False):
        nn.init.uniform_(p, -bound, bound, generator=generator)


def _norm(module: nn.Module, generator: torch.Generator | None) -> None:
    """LayerNorm / RMSNorm: gain 1, bias 0 (nothing random)."""
    module.reset_parameters()  # type: ignore[operator]


DEFAULT_INITS: dict[type[nn.Module], Init] = {
    nn.Linear: _fan_in_uniform,
    nn.Conv1d: _fan_in_uniform,
    nn.Conv2d: _fan_in_uniform,
    nn.Embedding: _embedding,
    nn.RNNBase: _rnn,
    nn.LayerNorm: _norm,
    nn.RMSNorm: _norm,
}


def _default_init(module: nn.Module) -> Init | None:
    """The init of the nearest torch class ``module`` derives from (e.g. our GRU -> nn.RNNBase)."""
    for cls in type(module).__mro__:
        if cls in DEFAULT_INITS:
            return DEFAULT_INITS[cls]
    return None


def init_weights(model: nn.Module, generator: torch.Generator) -> None:
    """Redraw every parameter of ``model`` from ``generator`` (deterministic per generator state).

    Per module: torch's default init (DEFAULT_INITS) or the module's own
    ``reset_parameters(generator)``; then the family's init (GPT-2 init, zero_init, ...).
    Raises TypeError for a module with parameters neither covers (a model's own direct
    parameters, like ViT's CLS token, are its family init's job).
    """
    with torch.no_grad():
        for name, module in model.named_modules():
            if next(module.parameters(recurse=False), None) is None:
                continue
            init = _default_init(module)
            if init is not None:
                init(module, generator)
            elif hasattr(module, "reset_parameters") and not isinstance(module, ModelBase):
                module.reset_parameters(generator=generator)  # type: ignore[operator]
            elif not isinstance(module, ModelBase):
                raise TypeError(f"{name} ({type(module).__name__}) has parameters but no generator-aware init; "
                                "add it to playground.models.init.DEFAULT_INITS or give it reset_parameters(generator)")
        if isinstance(model, ModelBase):
            model.init_family_weights(generator)
