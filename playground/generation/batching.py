"""Continuous batching of GPT sampling: one forward pass per step for every user of a checkpoint.

Twenty students pressing Generate on one checkpoint should cost about one forward pass per
token, not twenty. Each checkpoint (model object) gets one `GPTBatcher` with one worker
thread. A request (`LMRun`: its prompt, sampling settings, seed, samples, stop condition)
joins the batch at the next step and leaves at the step it finishes, is cancelled or fails;
the others go on undisturbed.

One step of the worker:

1. **decode**: every running row feeds its last token in ONE forward pass. Each row is at its
   own position: its position embedding is looked up per row, its keys/values are written at
   its own length in a `RowKVCache`, and a key mask `[B, K]` lets it see only its own
   prefix (rows are padded on the right up to the longest one).
2. **prefill**: requests that just joined, or whose context window jumped (see `lm.py`),
   feed their window; windows of the same width go through the model together, with an
   ordinary `KVCache`, whose keys/values are then copied into their rows.
3. **sample**: requests with the same sampling settings (and no penalties) are filtered and
   drawn in one call over all their rows; each draws its rows' random numbers from its own
   `torch.Generator`, in the order `stream_lm` draws them alone, so a user gets the tokens
   they would get alone with the same seed. Other requests sample alone.

Batched logits equal single logits up to float rounding (batched matrix products and the
masked attention sum in another order): on the shipped demo GPT, 8 rows at positions 1 to 62,
the largest difference was 3e-6 on logits up to 9 in size (the tests allow 1e-4), far too
small to change a draw in practice; the tests check token-for-token equality.

On the CPU a worker runs torch on `DECODE_THREADS` (1) intra-op threads, set for its own thread
only (`playground.torch_threads`): request threads, analyses among them, keep the process's count.
A prefill of at least `WIDE_PREFILL_TOKENS` tokens (twenty users' windows after a jump) is a
few large matrix products, which do use more threads: the worker hands it to a helper thread of
its own that runs on the process's count (switching the worker's own count back and forth cost
more than it saved: a few ms each time on a 2-core machine).

Limits (checked before anything is allocated): at most `max_rows` sequences decode together
(a request takes `num_samples` rows) and the cache of those rows fits `KV_BUDGET_BYTES`; at
most `max_waiting` requests wait to join (more: TooBigError, "try again"). A request that
cannot be batched (no cache, RoPE/ALiBi positions, more samples than rows) runs alone on
the caller's thread, as before.

A consumer that stops reading (closes the stream: Stop in the app) cancels its request; the
worker drops its rows at the next step. An error in one request's sampling or prefill goes to
that request only; an error in the shared decode pass goes to the requests in that pass, and
the worker carries on with the next ones.

`PLAYGROUND_GENERATE_BATCHING=0` switches batching off (every request runs alone, as before
batching existed): the bench's unbatched peer.
"""
from __future__ import annotations

import contextlib
import os
import queue
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import torch
from tokenizers import Tokenizer
from torch import Tensor, nn

from playground.errors import TooBigError
from playground.generation.events import Done, StepEvent
from playground.generation.lm import DrawLists, LMRun, run_alone, sample_together
from playground.models.attention import KVCache
from playground.torch_threads import set_here

ENV_SWITCH = "PLAYGROUND_GENERATE_BATCHING"
MAX_ROWS = 32  # sequences decoded in one forward pass
MAX_WAITING = 64  # requests waiting to join a full batch
KV_BUDGET_BYTES = 256 * 2**20  # a batcher's row cache (all rows, all layers, keys and values)
IDLE_EXIT_S = 20.0  # a worker with nothing to do for this long ends (a new request starts another)
POLL_S = 1.0  # how often a waiting consumer checks that its worker is alive
FLUSH_S = 0.1  # events reach their reader at most this often (each wake-up costs the worker the GIL)
# Intra-op threads of a worker decoding on the CPU. A step is a few hundred small ops, and the
# worker shares the machine with the server's event loop and other users' requests: a second
# thread that spin-waits between ops costs them more than it gains (2-core machine: 20 users'
# round in the decoder alone 470 ms instead of 600-770; through the app, one user's 100 tokens
# in 0.18 s instead of 0.28).
DECODE_THREADS = 1
# Rows x window width from which a CPU prefill runs on the process's thread count instead: 20
# rows of a 48-token window on the demo GPT took 29 ms on one thread and 14 ms on two (2-core
# machine), where a one-row decode step's few hundred small ops gain nothing from a second thread.
WIDE_PREFILL_TOKENS = 256


def batching_enabled() -> bool:
    """False when PLAYGROUND_GENERATE_BATCHING is 0/off/false/no (the unbatched peer)."""
    return os.environ.get(ENV_SWITCH, "1").strip().lower() not in ("0", "off", "false", "no")


# ---------------------------------------------------------------------------------------------
# the row cache and the batched decode pass


class RowKVCache:
    """Keys and values of up to `capacity` sequences, each with its own length.

    Buffers per layer: k, v [capacity, H, max_length, hd], zero-filled (a padded key is
    masked, but its value is still multiplied by weight 0: it must never be NaN). Rows
    0..rows-1 are in use; `lengths[r]` positions of row r are filled. Passed as the `cache` of
    the model's blocks, whose attention calls `append`.
    """

    def __init__(self, n_layers: int, max_length: int, n_head: int, head_dim: int, capacity: int,
                 dtype: torch.dtype, device: torch.device) -> None:
        self.max_length, self.capacity = max_length, capacity
        shape = (capacity, n_head, max_length, head_dim)
        self.k = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(n_layers)]
        self.v = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(n_layers)]
        self.lengths: list[int] = []
        self.device = device
        # Where a decode pass writes: row r's key/value of head h at position p is entry
        # (r * heads + h) * max_length + p of a layer's buffer seen as [capacity*H*max_length, hd].
        self._head_starts = torch.arange(capacity * n_head, device=device).view(capacity, n_head) * max_length
        self._slots: Tensor | None = None  # those entries for this forward [rows*H]
        self._keys = 0  # keys per row in this forward

    @classmethod
    def for_model(cls, model: nn.Module, capacity: int) -> RowKVCache:
        """Rows for `capacity` sequences of `model` (block_size positions each), on its device and dtype."""
        cfg, param = model.config, next(model.parameters())
        return cls(cfg.n_layer, int(cfg.block_size), _kv_heads(cfg), cfg.d_model // cfg.n_head, capacity,
                   param.dtype, param.device)

    @staticmethod
    def row_bytes(n_layers: int, max_length: int, kv_width: int, element_size: int) -> int:
        """Bytes one row takes (keys and values of every layer); kv_width = key/value heads x head
        size (d_model, less with grouped-query attention)."""
        return 2 * n_layers * max_length * kv_width * element_size

    @property
    def rows(self) -> int:
        return len(self.lengths)

    def add_rows(self, n: int) -> int:
        """Reserve n rows at the end (length 0); the first one's index."""
        if self.rows + n > self.capacity:
            raise TooBigError(f"the batch holds {self.capacity} sequences; {self.rows + n} requested")
        first = self.rows
        self.lengths.extend([0] * n)
        return first

    def load(self, row: int, src: KVCache, src_row: int, n: int, length: int) -> None:
        """Copy rows src_row..src_row+n-1 of an ordinary cache (positions 0..length-1) into
        rows row..row+n-1, which then hold `length` positions."""
        for i, layer in enumerate(src.layers):
            self.k[i][row : row + n, :, :length] = layer.k[src_row : src_row + n, :, :length]  # type: ignore[index]
            self.v[i][row : row + n, :, :length] = layer.v[src_row : src_row + n, :, :length]  # type: ignore[index]
        self.lengths[row : row + n] = [length] * n

    def keep(self, spans: Sequence[tuple[int, int]]) -> None:
        """Keep only the rows of `spans` ((first row, count), in order), moved to the front."""
        index = [r for first, n in spans for r in range(first, first + n)]
        if index == list(range(self.rows)):
            return
        if index:
            idx = torch.tensor(index, device=self.device)
            for buf in (*self.k, *self.v):
                buf[: len(index)] = buf.index_select(0, idx)
        self.lengths = [self.lengths[r] for r in index]

    def begin(self) -> tuple[Tensor, int]:
        """Start a decode pass: (positions [rows], keys per row after it = longest + 1)."""
        R, K = self.rows, max(self.lengths) + 1
        if K > self.max_length:
            raise ValueError(f"row cache holds {self.max_length} positions; {K} requested")
        pos = torch.tensor(self.lengths, device=self.device)  # [R]
        self._slots = (self._head_starts[:R] + pos[:, None]).view(-1)  # [R*H], the same for every layer
        self._keys = K
        return pos, K

    def append(self, i: int, k: Tensor, v: Tensor, offset: int) -> tuple[Tensor, Tensor]:
        """Write one new key/value per row (k, v [R,H,1,hd]) at that row's own position; views
        of every row's keys/values [R,H,K,hd], K = longest row + 1 (the rest is masked)."""
        R, H, T, hd = k.shape
        assert T == 1 and self._slots is not None and R == self.rows, "RowKVCache decodes one token per row"
        self.k[i].view(-1, hd).index_copy_(0, self._slots, k.reshape(R * H, hd))  # one entry per row and head
        self.v[i].view(-1, hd).index_copy_(0, self._slots, v.reshape(R * H, hd))
        return self.k[i][:R, :, : self._keys], self.v[i][:R, :, : self._keys]

    def end(self) -> None:
        """Finish a decode pass: every row is one token longer."""
        self.lengths = [n + 1 for n in self.lengths]
        self._slots = None


def _kv_heads(cfg: Any) -> int:
    """Key/value heads a layer caches (fewer than n_head with grouped-query attention)."""
    return getattr(cfg, "n_kv_heads", 0) or cfg.n_head


# ---------------------------------------------------------------------------------------------
# requests and the worker


@dataclass(eq=False)
class Job:
    """One request in a batcher: its run, its output queue, its rows and what it feeds next."""

    run: LMRun
    out: queue.SimpleQueue = field(default_factory=queue.SimpleQueue)
    cancelled: threading.Event = field(default_factory=threading.Event)
    row: int = -1  # first of its run.B rows in the row cache (-1: not in the batch)
    window: bool = True  # next feed is a window to prefill (else each row's last token)
    feed: Tensor | None = None  # the window's ids [B, W] (when `window`)
    logits: Tensor | None = None  # [B, V] for the next sample
    over: bool = False  # finished, failed or cancelled: leaves at the end of the step
    unsent: list[StepEvent] = field(default_factory=list)  # events not yet handed to the reader
    sent_at: float = 0.0  # time.monotonic() of the last hand-over

    def send(self, events: list[StepEvent], now: float, last: bool = False) -> None:
        """Queue events for the reader, handing them over every FLUSH_S (and at the end)."""
        self.unsent.extend(events)
        if self.unsent and (last or now - self.sent_at >= FLUSH_S):
            self.out.put(self.unsent)
            self.unsent, self.sent_at = [], now

    def cancel(self) -> None:
        """Leave the batch at the next step (the consumer stopped reading)."""
        self.cancelled.set()


class GPTBatcher:
    """The batch of one GPT model: a waiting list, a row cache and one worker thread."""

    def __init__(self, model: nn.Module, *, max_rows: int = MAX_ROWS, max_waiting: int = MAX_WAITING,
                 idle_s: float = IDLE_EXIT_S, registry: dict[int, GPTBatcher] | None = None,
                 registry_lock: threading.Lock | None = None, threads: int | None = DECODE_THREADS,
                 step_context: Callable[[], contextlib.AbstractContextManager] | None = None) -> None:
        """`step_context`: a context manager factory entered around every step, on the worker's
        thread (the bench counts the torch ops a step dispatches with it; None in the app)."""
        cfg = model.config
        param = next(model.parameters())
        self.model = model
        self.block = int(cfg.block_size)
        per_row = RowKVCache.row_bytes(cfg.n_layer, self.block, _kv_heads(cfg) * (cfg.d_model // cfg.n_head),
                                       param.element_size())
        self.max_rows = max(0, min(max_rows, KV_BUDGET_BYTES // per_row))  # capped before allocating
        self.max_waiting = max_waiting
        self.idle_s = idle_s
        self.threads = threads if param.device.type == "cpu" else None  # None: the process's count
        self.worker_threads = 0  # the intra-op count the last worker ran with (for tests and the bench)
        self.wide_threads = 0  # the process's count, which a wide prefill runs on (read by the worker)
        self.wide_prefills = 0  # prefills run on it (for tests and the bench)
        self.decode_passes = 0  # forward passes of one token per row (for tests and the bench)
        self.prefill_passes = 0  # forward passes over windows, on either thread (for tests and the bench)
        self._step_context = step_context or contextlib.nullcontext
        self._wide: ThreadPoolExecutor | None = None  # the worker's helper for wide prefills
        self._registry, self._registry_lock = registry, registry_lock or threading.Lock()
        self._cond = threading.Condition()
        self._waiting: list[Job] = []
        self._active: list[Job] = []
        self._thread: threading.Thread | None = None
        self._cache: RowKVCache | None = None
        self._closing = False  # set by close(): end as soon as nothing is running
        self.steps = 0  # decode passes run (for tests and the bench)
        self.max_batch_seen = 0

    def can_take(self, run: LMRun) -> bool:
        """Whether `run` can join this batch at all (else it runs alone: 'extend' mode outgrows the rows)."""
        return run.use_cache and not run.extend and 1 <= run.B <= self.max_rows and run.block == self.block

    def submit(self, run: LMRun) -> Job:
        """Queue a run to join the batch; TooBigError when too many already wait."""
        job = Job(run)
        with self._cond:
            if len(self._waiting) >= self.max_waiting:
                raise TooBigError(
                    f"{len(self._waiting)} generations are already waiting for this model (the most this server "
                    "queues); try again in a moment."
                )
            self._waiting.append(job)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name="gpt-batcher", daemon=True)
                self._thread.start()
            self._cond.notify()
        return job

    def close(self, timeout_s: float = 5.0) -> None:
        """Let the worker finish what runs and end now instead of after `idle_s` (a later submit
        starts a new one)."""
        with self._cond:
            self._closing = True
            thread = self._thread
            self._cond.notify()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout_s)
        with self._cond:
            self._closing = False

    def alive(self) -> bool:
        thread = self._thread
        return thread is not None and thread.is_alive()

    # -- the worker --------------------------------------------------------------------------

    def _loop(self) -> None:
        self.wide_threads = torch.get_num_threads()  # a new thread starts on the process's count
        if self.threads:
            set_here(self.threads)  # this worker only: request threads keep the process's count
        self.worker_threads = torch.get_num_threads()
        wide = bool(self.threads) and self.wide_threads > self.threads
        pool = self._wide = ThreadPoolExecutor(1, thread_name_prefix="gpt-batcher-wide") if wide else None
        try:
            self._serve()
        finally:
            if pool is not None:
                pool.shutdown(wait=False)
                if self._wide is pool:  # (a worker started after this one ended has its own)
                    self._wide = None

    def _serve(self) -> None:
        while True:
            with self._cond:
                idle = not self._active and not self._waiting and (self._closing or not self._cond.wait(self.idle_s))
            if idle and self._exit_if_idle():
                return
            with self._cond:
                joining = self._admit()
            if not joining and not self._active:
                continue
            try:
                self._join(joining)
                with self._step_context():
                    self._step()
            except BaseException as exc:  # noqa: BLE001 - a shared failure: tell everyone in it, go on
                for job in self._active:
                    self._fail(job, exc)
                self._active = []
                self._cache = None

    def _exit_if_idle(self) -> bool:
        """End the worker if still idle: free the rows, leave the registry (whose lock comes
        first, as in `stream_batched`, so a request cannot slip in between)."""
        with self._registry_lock, self._cond:
            if self._active or self._waiting:
                return False
            self._thread = None
            self._cache = None
            if self._registry is not None and self._registry.get(id(self.model)) is self:
                del self._registry[id(self.model)]
            return True

    def _admit(self) -> list[Job]:
        """Waiting jobs that fit the free rows, in arrival order (called under the lock)."""
        used = sum(j.run.B for j in self._active)
        joining, still = [], []
        for job in self._waiting:
            if job.cancelled.is_set():
                job.out.put(Done([], job.run.seed, 0, 0.0, {"cancelled": True}))
            elif used + job.run.B <= self.max_rows and not still:
                joining.append(job)
                used += job.run.B
            else:
                still.append(job)
        self._waiting = still
        return joining

    def _join(self, joining: list[Job]) -> None:
        if not joining:
            return
        if self._cache is None:
            self._cache = RowKVCache.for_model(self.model, self.max_rows)
        for job in joining:
            job.row = self._cache.add_rows(job.run.B)
            job.window, job.feed = True, job.run.window()
            self._active.append(job)

    def _step(self) -> None:
        """One step of every active job: decode pass, prefills, sampling; finished jobs leave."""
        cache = self._cache
        assert cache is not None
        for job in self._active:
            if job.cancelled.is_set():
                job.over = True
        running = [j for j in self._active if not j.over]
        decoding = [j for j in running if not j.window]
        with torch.inference_mode():
            if decoding:
                self._decode(running, cache)
            by_width: dict[int, list[Job]] = defaultdict(list)
            for job in running:
                if job.window:
                    by_width[job.feed.shape[1]].append(job)  # type: ignore[union-attr]
            for group in by_width.values():
                self._prefill(group, cache)
        draws = self._sample([j for j in running if not j.over and j.logits is not None])
        now = time.monotonic()
        for job in running:
            if job.over:
                continue
            try:
                drawn = draws.get(job)
                events = job.run.record(drawn) if drawn is not None else job.run.step(job.logits)  # type: ignore[arg-type]
                job.send(events, now, last=job.run.finished)
                if job.run.finished:
                    job.out.put(job.run.done(batched=True))
                    job.over = True
                else:
                    job.window = job.run.move_window()
                    job.feed = job.run.window() if job.window else None
            except Exception as exc:  # noqa: BLE001 - this request's own failure
                self._fail(job, exc)
            job.logits = None
        self.steps += 1
        self.max_batch_seen = max(self.max_batch_seen, cache.rows)
        kept = [j for j in self._active if not j.over]
        cache.keep([(j.row, j.run.B) for j in kept])
        row = 0
        for job in kept:
            job.row, row = row, row + job.run.B
        self._active = kept

    def _sample(self, jobs: list[Job]) -> dict[Job, DrawLists]:
        """Draw for the jobs whose samplers share settings in one call per group (each draws
        its own random numbers, so its tokens are those it gets alone); a job left out (its
        own filters, penalties, or a failing group) samples alone in `_step`. A group's draw
        is read back once for all its jobs (on a GPU a read-back waits for the device: once
        per job made twenty waits a step for twenty users)."""
        groups: dict[tuple, list[Job]] = defaultdict(list)
        for job in jobs:
            key = job.run.sampler.key
            if key is not None:
                groups[key].append(job)
        draws: dict[Job, DrawLists] = {}
        for group in groups.values():
            if len(group) < 2:
                continue
            try:
                with torch.inference_mode():
                    drawn = sample_together([j.run.sampler for j in group], torch.cat([j.logits for j in group]))
                host = drawn.tolist()
            except Exception:  # noqa: BLE001, S112 - each job then samples alone and meets its own error
                continue
            first = 0
            for job in group:
                draws[job] = host.rows(first, job.run.B)
                first += job.run.B
        return draws

    def _decode(self, jobs: list[Job], cache: RowKVCache) -> None:
        """One forward pass for every row; rows about to prefill feed a dummy token at
        position 0 (overwritten by their prefill) and ignore their logits."""
        cache.keep([(j.row, j.run.B) for j in jobs])  # cancelled rows out before the pass
        feeds: list[int] = []  # each row's token, from the host: one tensor for the whole pass
        row = 0
        for job in jobs:
            job.row, row = row, row + job.run.B
            if job.window:
                cache.lengths[job.row : job.row + job.run.B] = [0] * job.run.B
                feeds.extend([0] * job.run.B)
            else:
                feeds.extend(job.run.last_tokens())
        self._active = jobs + [j for j in self._active if j.over]  # over jobs have no rows now
        for job in self._active[len(jobs):]:
            job.row = -1
        tokens = torch.tensor(feeds, dtype=torch.long, device=cache.device)[:, None]  # [R,1]
        logits = self.model.decode_rows(tokens, cache)  # [R,V]: the model's own row pass
        self.decode_passes += 1
        for job in jobs:
            if not job.window:
                job.logits = logits[job.row : job.row + job.run.B]

    def _prefill(self, group: list[Job], cache: RowKVCache) -> None:
        """Windows of one width in one forward pass (an ordinary cache, copied into the rows);
        if that fails, each job alone, so only a failing job gets the error."""
        try:
            self._prefill_together(group, cache)
        except Exception as exc:  # noqa: BLE001 - find the job that fails
            if len(group) == 1:
                self._fail(group[0], exc)
                return
            for job in group:
                try:
                    self._prefill_together([job], cache)
                except Exception as exc:  # noqa: BLE001 - this job's own failure
                    self._fail(job, exc)

    def _prefill_together(self, group: list[Job], cache: RowKVCache) -> None:
        ids = torch.cat([j.feed for j in group])  # type: ignore[misc]  # [G,W]
        kv = self.model.new_cache()
        if self._wide is not None and ids.numel() >= WIDE_PREFILL_TOKENS:
            logits = self._wide.submit(self._forward_window, ids, kv).result()  # on the helper's threads
            self.wide_prefills += 1
        else:
            logits = self._forward_window(ids, kv)
        self.prefill_passes += 1
        src = 0
        for job in group:
            n = job.run.B
            cache.load(job.row, kv, src, n, ids.shape[1])
            job.logits = logits[src : src + n]
            src += n

    def _forward_window(self, ids: Tensor, kv: KVCache) -> Tensor:
        """ids [G,W] through the model into the ordinary cache kv -> the next token's logits [G,V]."""
        with torch.inference_mode():  # thread-local: the helper enters it too
            return self.model(ids, cache=kv, last_only=True)[:, -1]

    @staticmethod
    def _fail(job: Job, exc: BaseException) -> None:
        if not job.over:
            job.over = True
            job.out.put(exc)


# ---------------------------------------------------------------------------------------------
# one batcher per model, and the stream a caller reads


_batchers: dict[int, GPTBatcher] = {}  # id(model) -> its batcher (holding the model while it lives)
_batchers_lock = threading.Lock()


def generations_running(model: nn.Module) -> int:
    """Requests in the model's batch or waiting to join (0 without a batcher)."""
    batcher = _batchers.get(id(model))
    if batcher is None or batcher.model is not model:
        return 0
    with batcher._cond:
        return len(batcher._active) + len(batcher._waiting)


def close_workers(timeout_s: float = 5.0) -> None:
    """End every batch worker once its running generations are done. For a process about to
    exit (the CLI): a worker is a daemon thread, and one still inside a torch op when the
    interpreter exits aborts the process ("terminate called without an active exception")."""
    with _batchers_lock:
        batchers = list(_batchers.values())
    for batcher in batchers:
        batcher.close(timeout_s)


def batchable(model: nn.Module) -> bool:
    """A model that can decode rows at their own positions in one pass (``GPT.rows_batchable``:
    positions looked up per row, i.e. learned, sinusoidal or none)."""
    return bool(getattr(model, "rows_batchable", False))


def stream_batched(model: nn.Module, tokenizer: Tokenizer | None, prompt_ids: Sequence[int], *,
                   batcher: GPTBatcher | None = None, **kwargs: Any) -> Iterator[StepEvent | Done]:
    """`stream_lm`, with the forward passes shared with every other caller of the same model.

    Same arguments and the same events as `stream_lm` (the same tokens for the same seed).
    Closing the stream cancels the request. Runs alone (`stream_lm`) when the request or the
    model cannot be batched.
    """
    if not batchable(model):
        yield from run_alone(model, LMRun(model, tokenizer, prompt_ids, **kwargs))
        return
    run = LMRun(model, tokenizer, prompt_ids, **kwargs)
    if batcher is None:
        with _batchers_lock:  # get and submit at once: an idle worker cannot end in between
            batcher = _batchers.get(id(model))
            if batcher is None or batcher.model is not model:
                batcher = _batchers[id(model)] = GPTBatcher(model, registry=_batchers, registry_lock=_batchers_lock)
            job = _submit_or_none(batcher, run)
    else:
        job = _submit_or_none(batcher, run)
    if job is None:
        yield from run_alone(model, run)
        return
    try:
        while True:
            try:
                item = job.out.get(timeout=POLL_S)
            except queue.Empty:
                if not batcher.alive():
                    raise RuntimeError("the generation worker stopped; press Generate again") from None
                continue
            if isinstance(item, Done):
                yield item
                return
            if isinstance(item, BaseException):
                raise item
            yield from item
    finally:
        job.cancel()


def _submit_or_none(batcher: GPTBatcher, run: LMRun) -> Job | None:
    """The job, or None when the run cannot join (it then runs alone)."""
    if not batcher.can_take(run) or run.max_new_tokens == 0:
        return None
    return batcher.submit(run)
