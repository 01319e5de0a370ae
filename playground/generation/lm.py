"""Decoding for GPT checkpoints: sampling with the filters, a KV cache, stop strings, batches.

Context window (both with and without the cache, so the two give the same tokens): the next
token is predicted from `tokens[start:]`. A prompt longer than the block size is cropped from
the left to the last `block_size` tokens. When one more token would not fit, the window jumps
forward and keeps the last `block_size - slide` tokens (`slide = max(1, block_size // 4)`);
the cache is then rebuilt from that window (positions restart at 0, as in training). Between
jumps the cache is extended one token at a time. This is `context="window"`, the default.

`context="extend"` (models whose positions extrapolate: sinusoidal, RoPE, ALiBi or none) never
jumps: the whole prompt is read, the cache keeps growing and positions count on past the block
size, up to `max_extend_tokens` positions in all (checked before anything is allocated). A
learned position table has no vector past the block size, so it refuses. Without the cache
each token recomputes the whole sequence (`GPT.forward_beyond`).

A run driven alone (`run_alone`; every 'extend' run) of a sliding-window model (`attn_window`
W) decodes with a windowed cache: each layer keeps its last W positions only, so the cache
stays W positions long however far `extend` goes. (A batched 'window' run shares the batch's
row cache, block_size positions per row.)

Randomness comes only from a `torch.Generator` made for the call (seeded), never the global
RNG, so concurrent users of a server do not disturb each other's seeds. It is a CPU generator
whatever the model's device: its uniform numbers are drawn ahead in chunks (`UNIFORM_CHUNK`
steps at a time, the same stream as one draw per step), so a step costs no random-number call
of its own, a batch of users costs one host-to-device copy per step rather than one draw per
user, and a seed gives the same numbers on a CPU and on a GPU.
"""
from __future__ import annotations

import secrets
import time
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

import torch
from tokenizers import Tokenizer
from torch import Tensor, nn

from playground.errors import ConfigError, DataError
from playground.generation.events import Done, SampleResult, StepEvent
from playground.generation.filters import (
    SamplingConfig,
    apply_penalties,
    draw,
    make_warpers,
)
from playground.generation.text import Detokenizer, token_text
from playground.limits import check_count

START_TOKENS = ("<|endoftext|>", "<bos>", "<s>", "<eos>", "\n", " ")
CONTEXT_MODES = ("window", "extend")  # the window jumps at block_size / positions go on past it
UNIFORM_CHUNK = 64  # steps of uniform numbers a sampler draws at once (one generator call)


def check_context_mode(model: nn.Module, context: str) -> None:
    """ConfigError unless `context` is a mode this model can generate in (see the module doc)."""
    if context not in CONTEXT_MODES:
        raise ConfigError(f"context must be one of {', '.join(CONTEXT_MODES)}, got {context!r}.")
    if context == "extend" and not getattr(model, "extrapolates", False):
        block = int(model.config.block_size)
        raise ConfigError(
            f"This model cannot generate past its block size of {block} in 'extend' mode: its positions are a "
            f"learned table with one trained vector for each position 0 .. {block - 1}, and there is none for "
            f"position {block} or later. Use the 'window' mode instead: it keeps the last tokens in a window "
            f"of {block} positions and slides it forward.")


def slide_for(block_size: int) -> int:
    """How many positions the window jumps when the context is full."""
    return max(1, block_size // 4)


def next_window_start(start: int, n: int, block_size: int) -> int:
    """Window start for predicting token `n` (tokens[0:n] known), given the previous start."""
    if n - start > block_size:
        return n - (block_size - slide_for(block_size))
    return start


def start_ids(tokenizer: Tokenizer | None) -> list[int]:
    """A one-token context for an empty prompt: an end/begin-of-text token, else newline or space."""
    if tokenizer is not None:
        for tok in START_TOKENS:
            idx = tokenizer.token_to_id(tok)
            if idx is not None:
                return [idx]
    return [0]


MAX_SEED = 2**63 - 1


def resolve_seed(seed: int | None) -> int:
    """The given seed, or a fresh random one (reported back so a run can be repeated)."""
    if seed is None:
        return secrets.randbits(31)
    if not isinstance(seed, int) or seed < 0:
        raise ConfigError(f"seed must be a non-negative integer, got {seed!r}.")
    if seed > MAX_SEED:  # torch.Generator.manual_seed overflows above this
        raise ConfigError(f"seed must be at most {MAX_SEED:,} (2**63 - 1), got {seed:,}; pick a smaller whole "
                          "number such as 0 or 1337.")
    return seed


def make_generator(seed: int, device: torch.device | str) -> torch.Generator:
    """A private RNG for one call (never the global one)."""
    g = torch.Generator(device=device)
    g.manual_seed(seed)
    return g


class Draw(NamedTuple):
    """One sampled token per row and what the events report about it."""

    next: Tensor  # [B] token ids
    prob: Tensor  # [B] the model's probability of each (T = 1, no filters)
    sampled: Tensor  # [B] its probability under the filtered distribution it was drawn from
    alt_p: Tensor | None  # [B, k] the model's k most likely tokens' probabilities
    alt_i: Tensor | None  # [B, k] and their ids

    def tolist(self) -> DrawLists:
        """The draw as Python lists: one read-back per field (on a GPU, one wait each), which a
        batch makes once per step for all its requests rather than once per request."""
        return DrawLists(*(None if f is None else f.tolist() for f in self))


class DrawLists(NamedTuple):
    """A `Draw` read back to the host: what the events are made of."""

    next: list[int]
    prob: list[float]
    sampled: list[float]
    alt_p: list[list[float]] | None
    alt_i: list[list[int]] | None

    def rows(self, first: int, n: int) -> DrawLists:
        """Rows first..first+n-1 (one request's share of a batch's draw; a missing field stays None)."""
        cut = slice(first, first + n)
        return DrawLists(*(None if f is None else f[cut] for f in self))


class _Sampler:
    """The per-token path: penalties, filters, draw, and what the events report.

    Built once per call; the switched-off filters are not in the loop at all. The draw's
    randomness is one uniform number per row from the call's own (CPU) generator
    (`uniforms`), so samplers with the same settings can pick for many users' rows in one call
    (`sample_together`) and each user still gets the tokens it gets alone.
    """

    def __init__(self, cfg: SamplingConfig, batch: int, vocab: int, device: torch.device,
                 generator: torch.Generator, n_alternatives: int, context: Tensor) -> None:
        self.cfg = cfg
        self.batch = batch
        self.greedy = cfg.temperature == 0
        self.warpers = make_warpers(cfg)
        self.generator = generator
        self._ahead: list[list[float]] = []  # uniform numbers drawn ahead, one row per step (reversed)
        self.k_alt = min(n_alternatives, vocab)
        self.penalties = cfg.uses_penalties
        # Samplers with equal keys pick with the same filters; penalties keep per-call state, so
        # a sampler with penalties picks alone (key None).
        self.key = None if self.penalties else (cfg.temperature, cfg.top_k, cfg.top_p, cfg.min_p, self.k_alt)
        if self.penalties:
            self.seen = torch.zeros(batch, vocab, dtype=torch.bool, device=device)  # [B,V]
            self.seen.scatter_(1, context, True)
            self.counts = torch.zeros(batch, vocab, dtype=torch.float32, device=device)  # [B,V]
            self.ones = torch.ones(batch, 1, dtype=torch.float32, device=device)

    def uniforms(self) -> list[float] | None:
        """This step's random numbers, one per row (None when decoding is greedy). Drawn
        UNIFORM_CHUNK steps at a time: on the CPU generator, rand(n, B) is the same stream as n
        calls of rand(B), so the chunking does not change a seed's tokens."""
        if self.greedy:
            return None
        if not self._ahead:
            chunk = torch.rand(UNIFORM_CHUNK, self.batch, generator=self.generator)  # [steps, B]
            self._ahead = chunk.tolist()[::-1]
        return self._ahead.pop()

    def __call__(self, logits: Tensor) -> Draw:
        """logits [B,V] -> this step's Draw."""
        logits = logits.float()
        raw = logits.softmax(-1)  # [B,V] model distribution (T = 1)
        x = apply_penalties(logits, self.cfg, self.seen, self.counts) if self.penalties else logits
        drawn = self.pick(x, raw, _on(self.uniforms(), x.device))
        if self.penalties:
            self.seen.scatter_(1, drawn.next[:, None], True)
            self.counts.scatter_add_(1, drawn.next[:, None], self.ones)
        return drawn

    def pick(self, x: Tensor, raw: Tensor, u: Tensor | None) -> Draw:
        """Filter the (penalised) logits x [R,V] and draw with u [R] (argmax when None); raw [R,V]
        is the model's distribution the events report against."""
        if u is None:
            nxt = x.argmax(-1)  # [R]
            sampled = torch.ones_like(nxt, dtype=raw.dtype)
        else:
            for warp in self.warpers:
                x = warp(x)
            probs = x.softmax(-1)  # [R,V]
            nxt = draw(probs, u)  # [R]
            sampled = probs.gather(1, nxt[:, None]).squeeze(1)
        prob = raw.gather(1, nxt[:, None]).squeeze(1)  # [R]
        alt_p = alt_i = None
        if self.k_alt:
            alt_p, alt_i = raw.topk(self.k_alt, dim=-1)  # [R,k]
        return Draw(nxt, prob, sampled, alt_p, alt_i)


def _on(u: list[float] | None, device: torch.device) -> Tensor | None:
    """Uniform numbers as a tensor [R] on `device` (float32: each is a multiple of 2**-24, exact)."""
    return None if u is None else torch.tensor(u, dtype=torch.float32, device=device)


def sample_together(samplers: Sequence[_Sampler], logits: Tensor) -> Draw:
    """One pick for the rows of several calls whose samplers share a key (same filters, no
    penalties): logits [sum of their rows, V], in sampler order. Each sampler draws its own
    uniforms, so every row gets the token its call would get alone."""
    assert samplers and samplers[0].key is not None and all(s.key == samplers[0].key for s in samplers)
    x = logits.float()
    draws = [s.uniforms() for s in samplers]
    u = None if draws[0] is None else [v for d in draws for v in d]  # type: ignore[union-attr]  # [R]
    return samplers[0].pick(x, x.softmax(-1), _on(u, x.device))


class LMRun:
    """One sampling call between forward passes: its token buffer, context window, sampler and
    per-sample bookkeeping (text, stop strings, events).

    The decode loops own the model and the cache; a run only says which ids to feed next
    (`window`, `advance`) and turns the logits of its rows into StepEvents (`step`).
    `stream_lm` drives one run alone; `playground.generation.batching` drives many in one
    batch, so a run gives the same tokens either way: it draws from its own generator in the
    same order.
    """

    def __init__(
        self,
        model: nn.Module,
        tokenizer: Tokenizer | None,
        prompt_ids: Sequence[int],
        *,
        max_new_tokens: int = 200,
        sampling: SamplingConfig | None = None,
        seed: int | None = None,
        num_samples: int = 1,
        stop: Sequence[str] = (),
        stop_ids: Sequence[int] = (),
        use_cache: bool = True,
        n_alternatives: int = 5,
        block_size: int | None = None,
        prompt_text: str | None = None,
        decode_text: bool = True,
        context: str = "window",
    ) -> None:
        cfg = sampling or SamplingConfig()
        check_context_mode(model, context)
        if max_new_tokens < 0:
            raise ConfigError(f"max new tokens must be >= 0, got {max_new_tokens}.")
        if num_samples < 1:
            raise ConfigError(f"number of samples must be >= 1, got {num_samples}.")
        self.tokenizer = tokenizer
        self.max_new_tokens = max_new_tokens
        self.use_cache = use_cache
        self.stops = [s for s in stop if s]
        self.stop_id_set = {int(i) for i in stop_ids}
        self.block = int(block_size or model.config.block_size)
        self.seed = resolve_seed(seed)
        device = next(model.parameters()).device
        prompt = list(prompt_ids) or start_ids(tokenizer)
        vocab = int(model.config.vocab_size)
        bad = [i for i in prompt if not 0 <= i < vocab]
        if bad:
            raise DataError(f"Prompt token ids {bad[:5]} are outside the model's vocabulary of {vocab}.")
        if prompt_text is None or not prompt_ids:  # an empty prompt reports the start token it used
            prompt_text = tokenizer.decode(prompt, skip_special_tokens=False) if tokenizer is not None else ""
        self.prompt, self.prompt_text = prompt, prompt_text
        self.B, P = num_samples, len(prompt)
        self.extend = context == "extend"
        if self.extend:  # every position is kept: bound them before the buffers and the cache exist
            check_count(P + max_new_tokens, "max_extend_tokens", None, "Prompt + new tokens in 'extend' mode",
                        hint="generate fewer tokens, shorten the prompt, or use the 'window' mode.")
        self.started = time.perf_counter()
        self.device = device
        # Every row's tokens (prompt + drawn), on the host: a step writes nothing to the device;
        # only what is fed (a window, or the last tokens) is made a tensor.
        self.tokens: list[list[int]] = [list(prompt) for _ in range(self.B)]
        with torch.inference_mode():
            gen = make_generator(self.seed, "cpu")  # see the module doc: the same numbers on any device
            context = torch.tensor(self.tokens, dtype=torch.long, device=device)  # [B, P]
            self.sampler = _Sampler(cfg, self.B, vocab, device, gen, n_alternatives, context)
        self.start = 0 if self.extend else max(0, P - self.block)  # window start
        self.n = P  # tokens known (prompt + generated)
        self.step_index = 0
        self.detok = [Detokenizer(tokenizer, prompt) if (decode_text and tokenizer is not None) else None
                      for _ in range(self.B)]
        self.texts = [""] * self.B
        self.gen_ids: list[list[int]] = [[] for _ in range(self.B)]
        self.reasons: list[str | None] = [None] * self.B
        self.events: list[list[StepEvent]] = [[] for _ in range(self.B)]
        self.alt_text_cache: dict[int, str] = {}
        self.longest_stop = max((len(s) for s in self.stops), default=0)
        self.produced = 0

    @property
    def finished(self) -> bool:
        """True when every sample stopped or max_new_tokens were drawn."""
        return self.step_index >= self.max_new_tokens or all(r is not None for r in self.reasons)

    def window(self) -> Tensor:
        """The current window's ids [B, W] (W <= block size in 'window' mode): what is fed
        first (the prompt's window), and whenever the cache is rebuilt (or there is none)."""
        return torch.tensor([row[self.start : self.n] for row in self.tokens], dtype=torch.long, device=self.device)

    def last_tokens(self) -> list[int]:
        """Each row's last token (what a decode step feeds when the window did not jump)."""
        return [row[self.n - 1] for row in self.tokens]

    def move_window(self) -> bool:
        """Move the window on for the next token; True when the cache must be rebuilt from the
        new window (it jumped, or there is no cache), else the last tokens extend it."""
        new_start = self.start if self.extend else next_window_start(self.start, self.n, self.block)
        rebuild = not self.use_cache or new_start != self.start
        self.start = new_start
        return rebuild

    def advance(self) -> tuple[bool, Tensor]:
        """What to feed for the next token: (True, window ids [B, W]) when the cache must be
        rebuilt from a new window (or there is no cache), else (False, last token [B, 1])."""
        if self.move_window():
            return True, self.window()
        return False, torch.tensor(self.last_tokens(), dtype=torch.long, device=self.device)[:, None]

    def new_cache(self, model: nn.Module) -> Any:
        """The cache this run decodes alone with: as long as the whole run in 'extend' mode (else
        block_size), windowed (last attn_window positions per layer) for a sliding-window model."""
        return model.new_cache(len(self.prompt) + self.max_new_tokens if self.extend else None, windowed=True)

    def recompute(self, model: nn.Module, ids: Tensor) -> Tensor:
        """Logits [B,V] of the next token after ids [B,T] with no cache (past block_size in 'extend')."""
        forward = model.forward_beyond if self.extend else model
        return forward(ids, last_only=True)[:, -1]

    def step(self, logits: Tensor) -> list[StepEvent]:
        """Sample the next token of every sample from logits [B, V]; the new StepEvents (one
        per sample still running, in sample order)."""
        with torch.inference_mode():
            return self.record(self.sampler(logits).tolist())

    def record(self, drawn: DrawLists) -> list[StepEvent]:
        """Take this step's draw, read back to the host (B rows, from `step` or a share of a
        batch's `sample_together`); the new StepEvents (one per sample still running, in
        sample order)."""
        step, tokenizer = self.step_index, self.tokenizer
        nxt_l, prob_l, sampled_l, alt_pl, alt_il = drawn
        for row, tid in zip(self.tokens, nxt_l):
            row.append(tid)
        self.n += 1
        self.step_index += 1
        out: list[StepEvent] = []
        for b in range(self.B):
            if self.reasons[b] is not None:
                continue
            tid = nxt_l[b]
            detok = self.detok[b]
            piece = detok.push(tid) if detok is not None else ""
            alternatives: list[tuple[int, str, float]] = []
            if alt_il is not None:
                for j, p in zip(alt_il[b], alt_pl[b]):  # type: ignore[index]
                    txt = self.alt_text_cache.get(j)
                    if txt is None and tokenizer is not None:
                        txt = self.alt_text_cache[j] = token_text(tokenizer, j)
                    alternatives.append((j, txt or str(j), p))
            stopped = False
            if tid in self.stop_id_set:
                self.reasons[b], stopped = "eos", True
            else:
                self.gen_ids[b].append(tid)
                self.texts[b] += piece
                if self.stops:
                    tail = self.texts[b][-(len(piece) + self.longest_stop) :]
                    if any(s in tail for s in self.stops):
                        text = self.texts[b]
                        cut = min(i for i in (text.find(s) for s in self.stops) if i >= 0)
                        self.texts[b] = text[:cut]
                        self.reasons[b], stopped = "stop", True
            event = StepEvent(b, step, self.n - 1, tid, piece, prob_l[b], sampled_l[b], alternatives, stopped)
            self.events[b].append(event)
            self.produced += 1
            out.append(event)
        return out

    def done(self, **info: Any) -> Done:
        """The Done of this run (elapsed since the run was made)."""
        elapsed = time.perf_counter() - self.started
        samples = [
            SampleResult(self.prompt_text, list(self.prompt), self.gen_ids[b], self.texts[b],
                         self.reasons[b] or "length", self.events[b])
            for b in range(self.B)
        ]
        return Done(samples, self.seed, self.produced, elapsed,
                    {"use_cache": self.use_cache, "block_size": self.block,
                     "context": "extend" if self.extend else "window", **info})


def stream_lm(
    model: nn.Module,
    tokenizer: Tokenizer | None,
    prompt_ids: Sequence[int],
    **kwargs: Any,
) -> Iterator[StepEvent | Done]:
    """Generate from a GPT-style model, yielding a StepEvent per token per sample, then Done.

    Keyword arguments are those of `LMRun`: max_new_tokens (200), sampling, seed,
    num_samples (1), stop, stop_ids, use_cache (True), n_alternatives (5), block_size,
    prompt_text, decode_text (True), context ("window" or "extend").

    `num_samples` samples are drawn at once (one batch). A sample stops at a stop string (its
    text is cut before it), a token of `stop_ids`, or after `max_new_tokens`. The same `seed`
    gives the same tokens (on the same device).
    """
    yield from run_alone(model, LMRun(model, tokenizer, prompt_ids, **kwargs))


def run_alone(model: nn.Module, run: LMRun) -> Iterator[StepEvent | Done]:
    """Drive one run with its own forward passes (and its own cache): its events, then Done."""
    cache = run.new_cache(model) if run.use_cache else None
    if run.max_new_tokens:
        with torch.inference_mode():
            first = run.window()  # the prompt's window
            logits = run.recompute(model, first) if cache is None else model(first, cache=cache, last_only=True)[:, -1]  # [B,V]
    while not run.finished:
        yield from run.step(logits)
        if run.finished:
            break
        with torch.inference_mode():
            rebuild, x = run.advance()
            if cache is None:
                logits = run.recompute(model, x)
            elif rebuild:
                cache.crop(0)
                logits = model(x, cache=cache, last_only=True)[:, -1]
            else:
                logits = model(x, cache=cache)[:, -1]
    yield run.done(kv_cache_bytes=cache.nbytes() if cache is not None else 0)


def generate_lm(model: nn.Module, tokenizer: Tokenizer | None, prompt_ids: Sequence[int], **kwargs: Any) -> Done:
    """Run `stream_lm` to the end and return its Done."""
    done = None
    for event in stream_lm(model, tokenizer, prompt_ids, **kwargs):
        if isinstance(event, Done):
            done = event
    assert done is not None
    return done

