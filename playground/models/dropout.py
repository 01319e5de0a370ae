"""Dropout whose masks belong to one run.

``nn.Dropout`` and ``F.dropout`` draw their masks from torch's process-global RNG, which every
thread of a server shares: two trainings running side by side would interleave their draws, and
one run re-seeding it (a Resume) would change the other's masks. :class:`Dropout` draws its
mask from a ``torch.Generator`` that the trainer attaches with :func:`set_dropout_generator`
(on the run's device); without one it behaves like ``nn.Dropout``. Every dropout of the model
families (embeddings, residual branches, attention weights, between RNN layers) is one of these.

A per-module generator has a cost: ``torch.compile`` cannot trace a draw from a Generator object
(one graph break per dropout), and the fused attention kernels (``scaled_dot_product_attention``
with ``dropout_p``) draw only from torch's default generator, so attention dropout needs the
explicit path. *Scoped* dropout (``set_dropout_generator(..., scoped=True)``) keeps the run's
stream another way: the modules draw from torch's default generator, and the trainer wraps each
step in :func:`drawing_from`, which puts the run's generator state into the default generator
of its device for the step and takes the advanced state back after it (host-side copies of a
seed and an offset: no device sync). A lock makes the swap safe between threads of one process,
so two runs side by side still each get the masks they get alone.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

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
    """``nn.Dropout`` with the mask drawn from ``self.generator`` (set by :func:`set_dropout_generator`).

    ``scoped`` (no generator): the mask comes from torch's default generator, which the trainer
    points at the run's stream around each step (:func:`drawing_from`); attention may then drop
    its weights inside the fused kernel.
    """

    def __init__(self, p: float = 0.0) -> None:
        super().__init__()
        if not 0.0 <= p < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {p}")
        self.p = p
        self.generator: torch.Generator | None = None
        self.scoped = False

    def forward(self, x: Tensor) -> Tensor:
        return dropout(x, self.p, self.generator, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"


def set_dropout_generator(model: nn.Module, generator: torch.Generator | None, scoped: bool = False) -> int:
    """Make every :class:`Dropout` of ``model`` draw from ``generator`` (None: the global RNG);
    ``scoped``: from the default generator, which :func:`drawing_from` sets to the run's stream.

    Returns how many there are. Raises ValueError when the model holds a dropout that would
    still read the global RNG (an ``nn.Dropout`` or an RNN's built-in dropout with p > 0).
    """
    count = 0
    for name, module in model.named_modules():
        if isinstance(module, Dropout):
            module.generator = None if scoped else generator
            module.scoped = scoped
            count += 1
        elif isinstance(module, (nn.Dropout, nn.RNNBase)) and getattr(module, "p", getattr(module, "dropout", 0.0)):
            raise ValueError(f"{name or type(module).__name__} draws its dropout from torch's global RNG; "
                             "use playground.models.dropout.Dropout")
    return count


_SWAP_LOCK = threading.RLock()  # torch's default generators are the process's: one swap at a time


def default_generator(device: torch.device) -> torch.Generator:
    """torch's default generator of a device (what F.dropout and SDPA's dropout_p draw from)."""
    if device.type == "cuda":
        return torch.cuda.default_generators[device.index if device.index is not None else torch.cuda.current_device()]
    if device.type == "cpu":
        return torch.default_generator
    raise ValueError(f"scoped dropout supports cpu and cuda generators, not {device.type}")


@contextlib.contextmanager
def drawing_from(generator: torch.Generator | None) -> Iterator[None]:
    """Inside the block, torch's default generator of ``generator``'s device continues the run's
    stream; on exit the run's generator takes the advanced state and the default generator its own
    again. None: nothing changes. Blocks of several threads run one at a time."""
    if generator is None:
        yield
        return
    default = default_generator(generator.device)
    with _SWAP_LOCK:
        saved = default.get_state()  # a small CPU tensor (CUDA: seed and offset), no device sync
        default.set_state(generator.get_state())
        try:
            yield
        finally:
            generator.set_state(default.get_state())
            default.set_state(saved)
