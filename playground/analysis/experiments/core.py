"""Shared machinery of the dataset-level experiments (the "attention is (not) explanation" debate).

- Progress and cancel: every experiment is a generator ``iter_*`` that yields :class:`Progress`
  events (each carrying the partial result) and returns its result; ``stop`` (a
  ``threading.Event`` or any zero-argument callable) is checked between examples, and a
  stopped run returns what it finished (``result.stopped = True``). :func:`drive` turns such a
  generator into a plain call with an optional callback.
- Results: :class:`ExperimentResult` subclasses hold one small row dataclass per example plus
  settings; ``to_frame()`` (CSV) and ``to_dict()`` (JSON).
- Determinism: randomness comes from a ``torch.Generator`` made per run (:func:`make_generator`),
  never from the global RNG.
- Divergences: batched, differentiable TVD and JSD in torch (the adversarial search needs
  gradients; ``playground.analysis.explain.agreement`` has the numpy scalar versions they are tested
  against).
- :class:`Probe`: one example and the attention row that produces its output. It runs the
  model with that row replaced (``override_attention``) for many candidates in one batched
  forward with everything before the row fixed (KV cache for GPT, decoder state for seq2seq),
  and with input units replaced by their baseline (erasure curves).
"""
from __future__ import annotations

import copy
import json
import math
import time
from collections.abc import Callable, Generator, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import torch
from torch import Tensor

from playground.analysis.divergences import wide
from playground.analysis.query import Query
from playground.errors import PlaygroundError
from playground.models.attention import (
    KVCache,
    attention_modules,
    override_attention,
    record_attention,
    rows_override,
)
from playground.stopping import StopFlag, is_stopped  # noqa: F401 - re-exported for the experiments


def make_generator(seed: int, device: str | torch.device = "cpu") -> torch.Generator:
    """A fresh torch.Generator for one run (the global RNG is never touched)."""
    g = torch.Generator(device=device)
    g.manual_seed(int(seed))
    return g


# ----------------------------------------------------------------------------------------
# Progress events and results


@dataclass
class Progress:
    """One progress event: ``done`` of ``total`` examples; ``partial`` is the result so far."""

    experiment: str
    done: int
    total: int
    message: str = ""
    elapsed_s: float = 0.0
    partial: Any = None

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 1.0


ProgressFn = Callable[[Progress], None]


def json_safe(value: Any) -> Any:
    """JSON-safe copy: numpy/torch scalars and arrays to Python, NaN/inf to None."""
    if isinstance(value, Tensor):
        value = value.detach().cpu().numpy()
    if isinstance(value, np.ndarray):
        return [json_safe(v) for v in value.tolist()]
    if isinstance(value, (np.floating, float)):
        f = float(value)
        return f if math.isfinite(f) else None
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


@dataclass
class ExperimentResult:
    """Base of every experiment's result: settings, one row per finished example, extras.

    Subclasses set ``experiment`` and may override :meth:`stats` (numbers for the summary).
    """

    experiment: ClassVar[str] = "experiment"
    settings: dict[str, Any] = field(default_factory=dict)
    rows: list[Any] = field(default_factory=list)
    n_requested: int = 0
    stopped: bool = False
    elapsed_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)
    examples_done: int = 0  # examples finished (a row may be per example, per pair or per method)

    @property
    def n_done(self) -> int:
        """Rows so far."""
        return len(self.rows)

    def to_frame(self) -> pd.DataFrame:
        """One row per finished example (pandas DataFrame), for CSV export."""
        rows = [asdict(r) if hasattr(r, "__dataclass_fields__") else dict(r) for r in self.rows]
        return pd.DataFrame(rows)

    def stats(self) -> dict[str, Any]:
        """Aggregate numbers (what the summary and the charts quote)."""
        return {}

    def to_dict(self) -> dict[str, Any]:
        """Everything as plain JSON data."""
        return json_safe({
            "experiment": self.experiment,
            "settings": self.settings,
            "n_requested": self.n_requested,
            "n_done": self.n_done,
            "examples_done": self.examples_done,
            "stopped": self.stopped,
            "elapsed_s": round(self.elapsed_s, 3),
            "stats": self.stats(),
            "rows": self.to_frame().to_dict(orient="records"),
            "extra": self.extra,
        })

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1, allow_nan=False)

    def save(self, path: str | Path) -> Path:
        """Write CSV (``.csv``) or JSON (anything else) by the file suffix."""
        path = Path(path)
        if path.suffix.lower() == ".csv":
            self.to_frame().to_csv(path, index=False)
        else:
            path.write_text(self.to_json(), encoding="utf-8")
        return path


ResultT = Any
ExperimentGen = Generator[Progress, None, ResultT]


def drive(gen: ExperimentGen, progress: ProgressFn | None = None) -> ResultT:
    """Run an ``iter_*`` experiment generator to the end, forwarding events to ``progress``."""
    while True:
        try:
            event = next(gen)
        except StopIteration as stop:
            return stop.value
        if progress is not None:
            progress(event)


def loop_examples(
    name: str,
    items: Sequence[Any],
    result: ExperimentResult,
    work: Callable[[int, Any], Iterable[Any] | Any],
    stop: StopFlag = None,
) -> ExperimentGen:
    """Generic per-example loop: ``work(i, item)`` returns the row(s) of one example (None: skip).

    Yields a :class:`Progress` after every example, checks ``stop`` before each one, and
    returns ``result`` (``stopped`` set when cancelled). A ``work`` that notices ``stop``
    mid-example raises :class:`Stopped` and its unfinished example is dropped.
    """
    t0 = time.perf_counter()
    total = len(items)
    result.n_requested = total
    yield Progress(name, 0, total, "starting", 0.0, result)
    for i, item in enumerate(items):
        kind = _kind_of(item)
        if kind and "kind" not in result.settings:
            result.settings["kind"] = kind
        if is_stopped(stop):
            result.stopped = True
            break
        try:
            rows = work(i, item)
        except Stopped:
            result.stopped = True
            break
        result.examples_done = i + 1
        if rows is not None:
            if isinstance(rows, list):
                result.rows.extend(rows)
            else:
                result.rows.append(rows)
        result.elapsed_s = time.perf_counter() - t0
        yield Progress(name, i + 1, total, f"{name}: example {i + 1}/{total}", result.elapsed_s, result)
    result.elapsed_s = time.perf_counter() - t0
    return result


def _kind_of(item: Any) -> str | None:
    if isinstance(item, tuple) and item:
        item = item[0]
    return getattr(item, "kind", None)


class Stopped(Exception):
    """Raised inside an example's work when the stop flag is seen (the example is dropped)."""


# ----------------------------------------------------------------------------------------
# The probe: one example, one attention row, fast batched interventions


def _copy_cache(cache: KVCache) -> KVCache:
    """A new KVCache object sharing the tensors (``reorder`` then replaces them, never writes them)."""
    new = KVCache(len(cache.layers), cache.max_length)
    new.length = cache.length
    for dst, src in zip(new.layers, cache.layers):
        dst.k, dst.v = src.k, src.v
    return new


def _expand_state(state: Any, n: int) -> Any:
    """A copy of a KV cache / decode state with its batch of 1 repeated n times (the original is untouched)."""
    if isinstance(state, KVCache):
        st = _copy_cache(state)
    else:
        st = copy.copy(state)
        for name, value in vars(st).items():
            if isinstance(value, KVCache):
                setattr(st, name, _copy_cache(value))
    st.reorder(torch.zeros(n, dtype=torch.long, device=_state_device(state)))
    return st


def _state_device(state: Any) -> torch.device:
    for value in vars(state).values():
        if isinstance(value, Tensor):
            return value.device
    for layer in getattr(state, "layers", None) or []:
        if getattr(layer, "k", None) is not None:
            return layer.k.device
    return torch.device("cpu")


def default_module(query: Query) -> str:
    """The last layer's explaining attention module."""
    names = query.explainer.explaining_maps(query.model)
    if not names:
        raise PlaygroundError("This model has no attention that relates its output to its input "
                              "(an RNN seq2seq without attention?); these experiments need one.")
    return names[-1]


class Probe:
    """One example (a :class:`Query` of batch 1) and the attention row that produces its output.

    ``module`` is the attention module intervened on (default: the last layer's), ``heads`` the
    heads (None = all). The explained row is the query position (lm), the CLS row (ViT with a
    CLS token) or the decoder step (seq2seq cross-attention). Keys of that row: ``n_keys``;
    ``real_keys`` [K] marks the keys that are real input units and visible (not masked, not
    future, not special); ``key_units`` [K] gives each key's input unit (-1 for CLS).

    Attributes after construction: ``weights`` [H,K] (the original row, every head),
    ``alpha`` [K] (head-mean over the chosen heads), ``base`` [V] (output distribution),
    ``target`` (the explained output: the query's target).
    """

    def __init__(self, query: Query, module: str | None = None, heads: Sequence[int] | None = None) -> None:
        if query.batch_size != 1:
            raise ValueError(f"a Probe takes one example, got a batch of {query.batch_size}")
        self.query, self.model, self.explainer = query, query.model, query.explainer
        self.module = module or default_module(query)
        allowed = self.explainer.explaining_maps(self.model)
        if self.module not in allowed:
            raise PlaygroundError(
                f"Attention module {self.module!r} does not relate this model's output to its input units; "
                f"choose one of {allowed}."
            )
        self.device = query.device
        self.target = int(query.targets[0])
        units_mask = query.units_mask[0].to(torch.bool)  # type: ignore[index]  # [U]
        self.row, self.key_units = self.explainer.probe_keys(query)  # explained row, [K] unit of each key
        self.n_keys = int(self.key_units.shape[0])
        n_heads = self._n_heads()
        self.heads: list[int] = list(range(n_heads)) if heads is None else sorted({int(h) for h in heads})
        if not self.heads or min(self.heads) < 0 or max(self.heads) >= n_heads:
            raise PlaygroundError(f"{self.module} has heads 0..{n_heads - 1}; got {list(heads or [])}.")
        self._prefix: Any = None
        self._prepare_prefix()
        with torch.no_grad(), record_attention(self.model) as maps:
            self.base = self._forward(1)[0]  # [V]
        w = maps[self.module][0, :, self.row - self._q_offset()]  # [H,K]
        self.weights = wide(w.detach())
        # visible keys by structure (a weight that underflows to 0 is still a visible key)
        visible = self.explainer.visible_keys(query, self.n_keys)  # [K]
        self.visible_keys = visible
        unit_real = torch.zeros(self.n_keys, dtype=torch.bool, device=self.device)
        has_unit = self.key_units >= 0
        unit_real[has_unit] = units_mask[self.key_units[has_unit]]
        self.real_keys = visible & unit_real  # [K]
        self.alpha = self.weights[self.heads].mean(0)  # [K]

    # -- internals --------------------------------------------------------------------

    def _n_heads(self) -> int:
        mod = attention_modules(self.model)[self.module]
        return int(getattr(mod, "n_head", 1))

    def _q_offset(self) -> int:
        """Absolute index of the first query row in the recorded map of one probe forward."""
        return self.row if self._prefix is not None else 0

    def _prepare_prefix(self) -> None:
        """Run everything before the explained row once (batch 1); later calls reuse it."""
        with torch.no_grad():
            self._prefix = self.explainer.probe_prefix(self.query, self.row)

    def _forward(self, n: int) -> Tensor:
        """Output distributions [n,V] of the example repeated n times (inside any open override)."""
        prefix = None if self._prefix is None else _expand_state(self._prefix, n)
        logits = self.explainer.probe_logits(self.query, self.row, prefix, n)  # [n,V]
        return wide(logits).softmax(-1)

    # -- public -----------------------------------------------------------------------

    @property
    def n_real(self) -> int:
        return int(self.real_keys.sum())

    @property
    def special_keys(self) -> Tensor:
        """Visible keys that are not real units (BOS, CLS, ...): [K] bool."""
        return self.visible_keys & ~self.real_keys

    def run_rows(self, rows: Tensor, grad: bool = False) -> Tensor:
        """Output distributions [n,V] with the explained row of the chosen heads replaced.

        ``rows`` [n, len(heads), K] or [n, 1, K] (the same row for every chosen head).
        """
        n = rows.shape[0]
        H = self.weights.shape[0]
        base = self.weights.to(rows.dtype).expand(n, H, self.n_keys)
        if rows.shape[1] == 1:
            new = rows.expand(n, len(self.heads), self.n_keys)
        else:
            new = rows
        if len(self.heads) == H:
            full = new
        else:
            full = base.clone()
            full[:, self.heads] = new
        ctx = torch.enable_grad() if grad else torch.no_grad()
        with ctx, override_attention(self.model, {self.module: rows_override({self.row: full})}):
            return self._forward(n)

    def run_base(self, n: int = 1) -> Tensor:
        """The unmodified output [n,V] through the same batched path as :meth:`run_rows`."""
        return self.run_rows(self.weights[self.heads][None].expand(n, -1, -1))

    def head_rows(self) -> Tensor:
        """The original row of the chosen heads, [len(heads), K]."""
        return self.weights[self.heads]

    @property
    def real_unit_mask(self) -> Tensor:
        """Input units that are real and can reach the output (lm: not after the query), [U] bool."""
        return self.explainer.reachable_units(self.query)

    def real_units(self) -> Tensor:
        """Input-unit indices of the real keys, [n_real] (in key order)."""
        return self.key_units[self.real_keys]

    def keys_to_units(self, values: Tensor) -> np.ndarray:
        """Values over keys [K] -> over all input units [U] (CLS dropped; units without a key 0)."""
        out = np.zeros(self.query.n_units)
        has = self.key_units >= 0
        out[self.key_units[has].cpu().numpy()] = values[has].detach().cpu().double().numpy()
        return out

    # -- erasure (input units replaced by the query's baseline) ------------------------

    def unit_inputs(self, keep: Tensor) -> Tensor:
        """Inputs [N, ...] where unit u of row n is kept if keep[n, u], else set to the baseline.

        keep [N, U] bool over all input units (tokens, source tokens or patches).
        """
        if self.query.baselines is None:
            raise PlaygroundError("This query has no baselines; erasure needs the replacement for removed units.")
        return self.explainer.erase_units(self.query, keep)

    def run_units(self, keep: Tensor, chunk: int = 256) -> Tensor:
        """Output distributions [N,V] of the example with units erased (see :meth:`unit_inputs`)."""
        outs = []
        with torch.no_grad():
            for s in range(0, keep.shape[0], chunk):
                outs.append(self.query.probs(self.unit_inputs(keep[s : s + chunk])).float())
        return torch.cat(outs)


def make_probes(query: Query, module: str | None = None, heads: Sequence[int] | None = None) -> list[Probe]:
    """One probe per example of a batched query."""
    return [Probe(query.select([i]), module, heads) for i in range(query.batch_size)]


def row_stats(values: Sequence[float]) -> dict[str, float]:
    """mean, std, median, min, max of the finite values (NaN when none)."""
    v = np.asarray([x for x in values if x is not None and np.isfinite(x)], dtype=np.float64)
    if v.size == 0:
        return {"n": 0, "mean": math.nan, "std": math.nan, "median": math.nan, "min": math.nan, "max": math.nan}
    return {"n": int(v.size), "mean": float(v.mean()), "std": float(v.std(ddof=1)) if v.size > 1 else 0.0,
            "median": float(np.median(v)), "min": float(v.min()), "max": float(v.max())}
