"""Reading and replacing attention weights during a forward pass.

Every attention module subclasses :class:`NamedAttention` and carries a stable ``name`` (its
module path, set once by :func:`assign_attention_names` when the model is built). While a
``record_attention`` or ``override_attention`` context is open, the modules of that model take
the explicit path, materialise their weights ``[batch, heads, query, key]`` and hand them to
:func:`process_weights`, which applies the overrides and records the result.

The state lives in a ``contextvars.ContextVar``: a model shared by two threads (a multi-user
server) never sees the other thread's recorder, nothing is stashed on the modules, and the
state is reset on exit, also when the body raises. Open and close a context within one
step of a streaming generator: a generator that Gradio resumes in another worker thread
runs in another context, where an open recorder is not visible.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from playground.errors import PlaygroundError

OverrideFn = Callable[[Tensor, int], Tensor]
"""``fn(weights [B,H,Q,K], q_start) -> new weights [B,H,Q,K]``; q_start = absolute first query row."""


class NamedAttention(nn.Module):
    """Base class of every module whose attention weights can be read and replaced."""

    name: str = ""


def assign_attention_names(model: nn.Module) -> None:
    """Give every attention module of ``model`` its module path as stable name."""
    for path, module in model.named_modules():
        if isinstance(module, NamedAttention):
            module.name = path


def attention_modules(model: nn.Module) -> dict[str, NamedAttention]:
    """All attention modules of ``model`` keyed by their stable name."""
    return {m.name: m for m in model.modules() if isinstance(m, NamedAttention)}


@dataclass
class _Session:
    """One open record/override context, bound to the attention modules of one model."""

    module_ids: frozenset[int]
    overrides: dict[str, OverrideFn] = field(default_factory=dict)
    chunks: dict[str, list[Tensor]] | None = None  # None: this session does not record
    keep_grad: bool = False


_SESSIONS: contextvars.ContextVar[tuple[_Session, ...]] = contextvars.ContextVar(
    "playground_attention_sessions", default=()
)


def _sessions_for(module: NamedAttention) -> list[_Session]:
    return [s for s in _SESSIONS.get() if id(module) in s.module_ids]


def needs_explicit(module: NamedAttention) -> bool:
    """True when an open context records or overrides this module (fast path not allowed).

    Always False inside torch.compile (a ContextVar read would break the graph): record and
    override on the plain model, not on its compiled wrapper.
    """
    if torch.compiler.is_compiling():
        return False
    for s in _SESSIONS.get():
        if id(module) in s.module_ids and (s.chunks is not None or module.name in s.overrides):
            return True
    return False


def process_weights(module: NamedAttention, weights: Tensor, q_start: int) -> Tensor:
    """Apply the open overrides of ``module`` to ``weights`` [B,H,Q,K], then record the result."""
    sessions = _sessions_for(module)
    for s in sessions:
        fn = s.overrides.get(module.name)
        if fn is not None:
            new = fn(weights, q_start)
            if new.shape != weights.shape:
                raise PlaygroundError(
                    f"The attention override for {module.name!r} returned shape {tuple(new.shape)}; "
                    f"it must return the shape it was given, {tuple(weights.shape)} [batch, heads, query, key]."
                )
            weights = new.to(weights.dtype)
    for s in sessions:
        if s.chunks is not None:
            s.chunks.setdefault(module.name, []).append(weights if s.keep_grad else weights.detach())
    return weights


class AttentionMaps(Mapping[str, Tensor]):
    """Recorded maps ``name -> [batch, heads, query, key]``.

    A module called several times (incremental decoding) gets its chunks concatenated along
    the query axis; chunks with fewer keys are padded with zeros on the right (those keys did
    not exist yet, so their weight is 0 just as a causal mask would give).
    """

    def __init__(self, chunks: dict[str, list[Tensor]]) -> None:
        self._chunks = chunks
        self._cache: dict[str, tuple[int, Tensor]] = {}

    def __getitem__(self, name: str) -> Tensor:
        parts = self._chunks.get(name)
        if not parts:
            raise KeyError(
                f"No attention recorded under {name!r}; recorded: {sorted(self._chunks)}"
            )
        cached = self._cache.get(name)
        if cached is not None and cached[0] == len(parts):
            return cached[1]
        if len(parts) == 1:
            out = parts[0]
        else:
            n_keys = max(p.shape[-1] for p in parts)
            out = torch.cat([F.pad(p, (0, n_keys - p.shape[-1])) for p in parts], dim=2)
        self._cache[name] = (len(parts), out)
        return out

    def __iter__(self) -> Iterator[str]:
        return iter([k for k, v in self._chunks.items() if v])

    def __len__(self) -> int:
        return sum(1 for v in self._chunks.values() if v)


@contextmanager
def _open(session: _Session) -> Iterator[_Session]:
    token = _SESSIONS.set(_SESSIONS.get() + (session,))
    try:
        yield session
    finally:
        try:
            _SESSIONS.reset(token)
        except ValueError:  # exited in another context: a generator resumed in another thread
            _SESSIONS.set(tuple(s for s in _SESSIONS.get() if s is not session))


@contextmanager
def record_attention(model: nn.Module, keep_grad: bool = False) -> Iterator[AttentionMaps]:
    """Record every attention map of ``model`` computed inside the block.

    ``maps[name]`` is ``[batch, heads, query, key]`` (after any override). With
    ``keep_grad=True`` the maps stay in the autograd graph (gradient x attention methods).
    """
    modules = attention_modules(model)
    session = _Session(frozenset(id(m) for m in modules.values()), chunks={}, keep_grad=keep_grad)
    with _open(session):
        yield AttentionMaps(session.chunks)  # type: ignore[arg-type]


@contextmanager
def override_attention(model: nn.Module, overrides: Mapping[str, OverrideFn]) -> Iterator[None]:
    """Replace the attention weights of the named modules inside the block.

    ``overrides[name](weights [B,H,Q,K], q_start) -> [B,H,Q,K]``; the result is used as the
    attention (before dropout) and gradients flow through it.
    """
    modules = attention_modules(model)
    unknown = sorted(set(overrides) - set(modules))
    if unknown:
        raise PlaygroundError(
            f"Unknown attention module(s) {unknown}; this model has: {sorted(modules) or 'none'}."
        )
    session = _Session(frozenset(id(m) for m in modules.values()), overrides=dict(overrides))
    with _open(session):
        yield


# ----------------------------------------------------------------------------------------
# Ready-made overrides. `rows` are absolute query indices, `heads` head indices (None = all).
# Positions whose original weight is exactly 0 (masked: padding, future, not yet decoded)
# stay 0, so each returned row is still a distribution over the visible keys.


def _select(weights: Tensor, q_start: int, rows: list[int] | None, heads: list[int] | None) -> Tensor:
    """Bool [B,H,Q,1]-broadcastable selection of the rows/heads to replace."""
    _, H, Q, _ = weights.shape
    sel = torch.ones(1, H, Q, 1, dtype=torch.bool, device=weights.device)
    if heads is not None:
        head_sel = torch.zeros(H, dtype=torch.bool, device=weights.device)
        head_sel[list(heads)] = True
        sel = sel & head_sel.view(1, H, 1, 1)
    if rows is not None:
        q_abs = torch.arange(q_start, q_start + Q, device=weights.device)
        row_sel = torch.isin(q_abs, torch.as_tensor(list(rows), device=weights.device))
        sel = sel & row_sel.view(1, 1, Q, 1)
    return sel


def uniform_override(rows: list[int] | None = None, heads: list[int] | None = None) -> OverrideFn:
    """Uniform attention over the visible keys (mask-aware) for the chosen rows/heads."""

    def fn(weights: Tensor, q_start: int) -> Tensor:
        visible = (weights > 0).to(weights.dtype)  # [B,H,Q,K]
        uniform = visible / visible.sum(-1, keepdim=True).clamp_min(1)
        return torch.where(_select(weights, q_start, rows, heads), uniform, weights)

    return fn


def logits_override(
    logits: Tensor, rows: list[int] | None = None, heads: list[int] | None = None
) -> OverrideFn:
    """Attention = softmax of learnable ``logits`` over the visible keys (adversarial search).

    ``logits`` broadcasts to [B,H,Q,K] of the call (e.g. [B,1,1,K] for one query row of every
    head); gradients flow into ``logits``.
    """

    def fn(weights: Tensor, q_start: int) -> Tensor:
        visible = weights > 0
        scores = logits.to(weights.dtype).expand_as(weights).masked_fill(~visible, float("-inf"))
        new = torch.softmax(scores, dim=-1).nan_to_num(0.0)
        return torch.where(_select(weights, q_start, rows, heads), new, weights)

    return fn


def rows_override(rows: Mapping[int, Tensor], heads: list[int] | None = None) -> OverrideFn:
    """Replace absolute query rows with given distributions.

    ``rows[q]`` broadcasts to [B,H,K] (e.g. [K], [B,1,K] or [B,H,K]) and is used as is
    (gradients flow); rows not decoded in this call are ignored.
    """

    def fn(weights: Tensor, q_start: int) -> Tensor:
        B, H, Q, K = weights.shape
        out = weights
        for q, dist in rows.items():
            i = q - q_start
            if not 0 <= i < Q:
                continue
            new_row = dist.to(weights.dtype).expand(B, H, K)
            if heads is not None:
                keep = torch.zeros(1, H, 1, dtype=torch.bool, device=weights.device)
                keep[:, list(heads)] = True
                new_row = torch.where(keep, new_row, out[:, :, i])
            out = torch.cat([out[:, :, :i], new_row.unsqueeze(2), out[:, :, i + 1 :]], dim=2)
        return out

    return fn


def permute_override(
    perm: Tensor, rows: list[int] | None = None, heads: list[int] | None = None
) -> OverrideFn:
    """Permute each chosen row's weights over the keys: new[..., k] = old[..., perm[k]].

    ``perm`` is [K] or broadcasts to [B,H,Q,K] (an index tensor). To permute only over the
    real positions, build ``perm`` that maps the real positions among themselves.
    """

    def fn(weights: Tensor, q_start: int) -> Tensor:
        idx = perm.to(weights.device).expand_as(weights)
        return torch.where(_select(weights, q_start, rows, heads), weights.gather(-1, idx), weights)

    return fn
