"""Reading and replacing any module's input or output during a forward pass (activation sites).

A *site* names one tensor by module path and side: ``"blocks.3:in"`` is what block 3 receives
(the residual stream before it), ``"blocks.3.attn:out"`` what its attention adds to the
residual stream, ``"blocks.3.mlp:out"`` what its MLP adds, ``"blocks.3.attn.out_proj:in"`` the
heads' outputs side by side ``[B,T,H*hd]`` before they are projected, ``"ln_f:in"`` the
residual stream after the last block. A module that returns a tuple (attention: ``(out,
weights)``) has its first element read and replaced.

:func:`record_activations` keeps the tensors of the named sites (in the autograd graph with
``keep_grad``); :func:`patch_activations` replaces them with ``fn(tensor) -> tensor`` of the
same shape. Like :mod:`playground.models.hooks` and the head masks, the torch hooks act only
in the context that opened them (a ``ContextVar`` session): another thread's forward through
a shared model is left alone, and every hook is removed when the block exits, also on error.
"""
from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from torch import Tensor, nn

from playground.errors import PlaygroundError

Edit = Callable[[Tensor], Tensor]
"""``fn(activation) -> activation`` of the same shape (e.g. [B,T,D])."""

SIDES = ("in", "out")
_ACTIVE: contextvars.ContextVar[tuple[int, ...]] = contextvars.ContextVar("playground_activation_sites", default=())


def split_site(site: str) -> tuple[str, str]:
    """``"blocks.3.attn:out"`` -> (``"blocks.3.attn"``, ``"out"``)."""
    path, _, side = site.rpartition(":")
    if not path or side not in SIDES:
        raise PlaygroundError(f"Site {site!r} must read 'module.path:in' or 'module.path:out'.")
    return path, side


def _resolve(model: nn.Module, sites: Sequence[str]) -> dict[str, tuple[nn.Module, str]]:
    modules = dict(model.named_modules())
    out: dict[str, tuple[nn.Module, str]] = {}
    for site in sites:
        path, side = split_site(site)
        if path not in modules:
            raise PlaygroundError(f"Site {site!r}: this model has no module {path!r}.")
        out[site] = (modules[path], side)
    return out


def _first(value: Any) -> Tensor:
    return value[0] if isinstance(value, tuple) else value


def _replace_first(value: Any, new: Tensor) -> Any:
    return (new,) + tuple(value[1:]) if isinstance(value, tuple) else new


@contextmanager
def _hooks(model: nn.Module, sites: Sequence[str], act: Callable[[str, Tensor], Tensor | None]) -> Iterator[None]:
    """Hook every site with ``act(site, tensor)`` (a tensor returned replaces it) for the block."""
    session = object()  # alive until the block ends, so no other session reuses its id
    key = id(session)
    handles = []

    def pre_hook(site: str):
        def hook(_: nn.Module, args: tuple[Any, ...]) -> tuple[Any, ...] | None:
            if key not in _ACTIVE.get():
                return None  # another context's forward: not ours
            new = act(site, args[0])
            return None if new is None else (new,) + tuple(args[1:])
        return hook

    def post_hook(site: str):
        def hook(_: nn.Module, args: tuple[Any, ...], output: Any) -> Any:
            if key not in _ACTIVE.get():
                return None
            new = act(site, _first(output))
            return None if new is None else _replace_first(output, new)
        return hook

    for site, (module, side) in _resolve(model, sites).items():
        if side == "in":
            handles.append(module.register_forward_pre_hook(pre_hook(site)))
        else:
            handles.append(module.register_forward_hook(post_hook(site)))
    token = _ACTIVE.set(_ACTIVE.get() + (key,))
    try:
        yield
    finally:
        try:
            _ACTIVE.reset(token)
        except ValueError:  # exited in another context (a generator resumed elsewhere)
            _ACTIVE.set(tuple(k for k in _ACTIVE.get() if k != key))
        for h in handles:
            h.remove()


@contextmanager
def record_activations(model: nn.Module, sites: Sequence[str], keep_grad: bool = False) -> Iterator[dict[str, Tensor]]:
    """``with record_activations(model, ["blocks.0:in"]) as acts: model(x)`` -> ``acts[site]``.

    The last call of a site wins (one forward per block). ``keep_grad`` keeps the tensors in the
    autograd graph, so ``torch.autograd.grad(metric, acts[site])`` gives d metric / d activation.
    """
    store: dict[str, Tensor] = {}

    def act(site: str, t: Tensor) -> None:
        store[site] = t if keep_grad else t.detach()

    with _hooks(model, sites, act):
        yield store


@contextmanager
def patch_activations(model: nn.Module, edits: Mapping[str, Edit]) -> Iterator[None]:
    """Replace the named sites' tensors with ``edits[site](tensor)`` inside the block."""
    def act(site: str, t: Tensor) -> Tensor:
        new = edits[site](t)
        if new.shape != t.shape:
            raise PlaygroundError(f"The patch for {site!r} returned shape {tuple(new.shape)}; "
                                  f"it must keep the shape {tuple(t.shape)}.")
        return new

    with _hooks(model, list(edits), act):
        yield
