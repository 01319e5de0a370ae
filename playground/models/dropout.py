"""Dropout whose masks belong to one run.

``nn.Dropout`` and ``F.dropout`` draw their masks from torch's process-global RNG, which every
thread of a server shares: two trainings running side by side would interleave their draws, and
one run re-seeding it (a Resume) would change the other's masks. :class:`Dropout` draws its
mask from a ``torch.Generator`` that the trainer attaches with :func:`set_dropout_generator`
(on the run's device); without one it behaves like ``nn.Dropout``. Every dropout of the model
families (embeddings, residual branches, attention weights, between RNN layers) is one of these.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn


def dropout(x: Tensor, p: float, generator: torch.Generator | None, training: bool = True) -> Tensor:
    """Inverted dropout: zero each element of ``x`` with probability p, scale the rest by 1/(1-p).

    The keep-mask comes from ``generator`` (on x's device); None uses torch's global RNG.
    """
    if not training or p == 0.0:
        return x
    if generator is None:
        return F.dropout(x, p, training=True)
    scale = torch.empty_like(x).bernoulli_(1.0 - p, generator=generator).div_(1.0 - p)  # 0 or 1/(1-p)
    return x * scale


class Dropout(nn.Module):
    """``nn.Dropout`` with the mask drawn from ``self.generator`` (set by :func:`set_dropout_generator`)."""

    def __init__(self, p: float = 0.0) -> None:
        super().__init__()
        if not 0.0 <= p < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {p}")
        self.p = p
        self.generator: torch.Generator | None = None

    def forward(self, x: Tensor) -> Tensor:
        return dropout(x, self.p, self.generator, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"


def set_dropout_generator(model: nn.Module, generator: torch.Generator | None) -> int:
    """Make every :class:`Dropout` of ``model`` draw from ``generator`` (None: the global RNG).

    Returns how many there are. Raises ValueError when the model holds a dropout that would
    still read the global RNG (an ``nn.Dropout`` or an RNN's built-in dropout with p > 0).
    """
    count = 0
    for name, module in model.named_modules():
        if isinstance(module, Dropout):
            module.generator = generator
            count += 1
        elif isinstance(module, (nn.Dropout, nn.RNNBase)) and getattr(module, "p", getattr(module, "dropout", 0.0)):
            raise ValueError(f"{name or type(module).__name__} draws its dropout from torch's global RNG; "
                             "use playground.models.dropout.Dropout")
    return count
