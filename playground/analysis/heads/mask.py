"""Head masks: scale, zero or replace one attention head's output before ``out_proj``.

A :class:`~playground.models.attention.MultiHeadAttention` concatenates its heads' outputs
``y [B,T,H*hd]`` (head h in columns h*hd .. (h+1)*hd) and projects them with ``out_proj``.
Michel et al. (2019) put a gate xi_h in front of each head: ``out_proj(concat_h xi_h y_h)``.
:func:`head_mask` installs that gate as a forward pre-hook on ``out_proj``:

    y_h <- xi_h * y_h + (1 - xi_h) * r_h

with xi [H] per module (1 = keep, 0 = ablate) and r_h the replacement (zeros: zero ablation;
the head's mean output: mean ablation). xi may require grad: d loss / d xi_h is Michel et al.'s
head importance. :func:`mean_head_outputs` records r for mean ablation.

The hooks read their session from a ``ContextVar`` (like ``playground.models.hooks``): a model
shared between threads sees only the masks opened in its own context, and the hooks are removed
when the block exits, also when it raises.
"""
from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from playground.models.attention import MultiHeadAttention

_ACTIVE: contextvars.ContextVar[tuple[int, ...]] = contextvars.ContextVar("playground_head_masks", default=())


@dataclass(frozen=True)
class HeadModule:
    """One multi-head attention module: its stable name, layer index and head count."""

    name: str
    layer: int  # index among the model's multi-head attention modules, in module order
    n_head: int
    head_dim: int


def head_modules(model: nn.Module) -> dict[str, HeadModule]:
    """Every :class:`MultiHeadAttention` of ``model`` (self and cross), in module order."""
    found: dict[str, HeadModule] = {}
    for path, module in model.named_modules():
        if isinstance(module, MultiHeadAttention):
            found[module.name or path] = HeadModule(module.name or path, len(found), module.n_head, module.head_dim)
    return found


def _modules_by_name(model: nn.Module) -> dict[str, MultiHeadAttention]:
    return {m.name or p: m for p, m in model.named_modules() if isinstance(m, MultiHeadAttention)}


HookMaker = Callable[[str, MultiHeadAttention, int], Callable[..., Any]]


@contextmanager
def _out_proj_hooks(modules: Mapping[str, MultiHeadAttention], make_hook: HookMaker) -> Iterator[None]:
    """Pre-hook each module's out_proj with ``make_hook(name, module, key)`` for the block; a hook
    acts only where ``key`` is in the context's active set (another thread's forward is left alone)."""
    session = object()  # alive until the block ends, so no other session gets its id
    key = id(session)
    handles = [m.out_proj.register_forward_pre_hook(make_hook(name, m, key)) for name, m in modules.items()]
    token = _ACTIVE.set(_ACTIVE.get() + (key,))
    try:
        yield
    finally:
        try:
            _ACTIVE.reset(token)
        except ValueError:  # exited in another context
            _ACTIVE.set(tuple(k for k in _ACTIVE.get() if k != key))
        for h in handles:
            h.remove()


@contextmanager
def head_mask(model: nn.Module, gates: Mapping[str, Tensor],
              replacements: Mapping[str, Tensor] | None = None) -> Iterator[None]:
    """Gate the heads of the named modules inside the block.

    ``gates[name]`` [H] (1 keep, 0 ablate; may require grad); ``replacements[name]`` [H, hd]
    (what an ablated head outputs; zeros when absent).
    """
    modules = _modules_by_name(model)
    unknown = sorted(set(gates) - set(modules))
    if unknown:
        raise KeyError(f"Unknown attention module(s) {unknown}; this model has {sorted(modules)}.")
    def make_hook(name: str, module: MultiHeadAttention, key: int):
        gate = gates[name]
        repl = None if replacements is None else replacements.get(name)

        def hook(_: nn.Module, args: tuple[Tensor, ...]) -> tuple[Tensor, ...] | None:
            if key not in _ACTIVE.get():
                return None  # another thread's forward: not ours to mask
            y = args[0]  # [B,T,H*hd], heads side by side
            B, T, _ = y.shape
            heads = y.view(B, T, module.n_head, module.head_dim)  # [B,T,H,hd]
            g = gate.to(y.dtype).view(1, 1, -1, 1)  # [1,1,H,1]
            out = heads * g
            if repl is not None:
                out = out + (1 - g) * repl.to(y.dtype).view(1, 1, module.n_head, module.head_dim)
            return (out.reshape(B, T, -1),) + tuple(args[1:])

        return hook

    with _out_proj_hooks({name: modules[name] for name in gates}, make_hook):
        yield


@contextmanager
def _capture_inputs(model: nn.Module, sums: dict[str, Tensor], counts: dict[str, int]) -> Iterator[None]:
    """Accumulate the per-head sum and count of every out_proj input (context-local)."""
    def make_hook(name: str, module: MultiHeadAttention, key: int):
        def hook(_: nn.Module, args: tuple[Tensor, ...]) -> None:
            if key not in _ACTIVE.get():
                return
            y = args[0].detach()  # [B,T,H*hd]
            heads = y.reshape(-1, module.n_head, module.head_dim).double()  # [B*T,H,hd]
            sums[name] = sums.get(name, 0) + heads.sum(0)  # [H,hd]
            counts[name] = counts.get(name, 0) + heads.shape[0]

        return hook

    with _out_proj_hooks(_modules_by_name(model), make_hook):
        yield


@torch.no_grad()
def mean_head_outputs(model: nn.Module, run: Callable[[nn.Module], object]) -> dict[str, Tensor]:
    """Each head's output averaged over every batch row and position that ``run(model)`` feeds:
    ``{name: [H, hd]}`` (float32). Mean ablation replaces a head's output with this vector."""
    sums: dict[str, Tensor] = {}
    counts: dict[str, int] = {}
    with _capture_inputs(model, sums, counts):
        run(model)
    return {name: (s / counts[name]).float() for name, s in sums.items()}


def full_gates(model: nn.Module, value: float = 1.0, requires_grad: bool = False) -> dict[str, Tensor]:
    """A gate [H] per module filled with ``value`` (1: keep every head)."""
    device = next(model.parameters()).device
    return {name: torch.full((hm.n_head,), value, device=device, requires_grad=requires_grad)
            for name, hm in head_modules(model).items()}
