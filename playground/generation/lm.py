"""Decoding for GPT checkpoints: sampling with the filters, a KV cache, stop strings, batches.

Context window (both with and without the cache, so the two give the same tokens): the next
token is predicted from `tokens[start:]`. A prompt longer than the block size is cropped from
the left to the last `block_size` tokens. When one more token would not fit, the window jumps
forward and keeps the last `block_size - slide` tokens (`slide = max(1, block_size // 4)`);
the cache is then rebuilt from that window (positions restart at 0, as in training). Between
jumps the cache is extended one token at a time.

Randomness comes only from a `torch.Generator` made for the call (seeded), never the global
RNG, so concurrent users of a server do not disturb each other's seeds.
"""
from __future__ import annotations

import secrets
import time
from collections.abc import Iterator, Sequence
from typing import Any

import torch
from torch import Tensor, nn

from playground.errors import ConfigError, DataError
from playground.generation.events import Done, SampleResult, StepEvent
from playground.generation.filters import SamplingConfig, apply_penalties, make_warpers
from playground.generation.text import Detokenizer, token_text

START_TOKENS = ("<|endoftext|>", "<bos>", "<s>", "<eos>", "\n", " ")


def slide_for(block_size: int) -> int:
    """How many positions the window jumps when the context is full."""
    return max(1, block_size // 4)


def next_window_start(start: int, n: int, block_size: int) -> int:
    """Window start for predicting token `n` (tokens[0:n] known), given the previous start."""
    if n - start > block_size:
        return n - (block_size - slide_for(block_size))
    return start


def start_ids(tokenizer: Any) -> list[int]:
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


class _Sampler:
    """The per-token path: penalties, filters, draw, and what the events report.

    Built once per call; the switched-off filters are not in the loop at all.
    """

    def __init__(self, cfg: SamplingConfig, batch: int, vocab: int, device: torch.device,
                 generator: torch.Generator, n_alternatives: int, context: Tensor) -> None:
        self.cfg = cfg
        self.greedy = cfg.temperature == 0
        self.warpers = make_warpers(cfg)
        self.generator = generator
        self.k_alt = min(n_alternatives, vocab)
        self.penalties = cfg.uses_penalties
        if self.penalties:
            self.seen = torch.zeros(batch, vocab, dtype=torch.bool, device=device)  # [B,V]
            self.seen.scatter_(1, context, True)
            self.counts = torch.zeros(batch, vocab, dtype=torch.float32, device=device)  # [B,V]
            self.ones = torch.ones(batch, 1, dtype=torch.float32, device=device)

    def __call__(self, logits: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor | None, Tensor | None]:
        """logits [B,V] -> (next [B], model prob [B], sampled prob [B], alt probs, alt ids)."""
        logits = logits.float()
        raw = logits.softmax(-1)  # [B,V] model distribution (T = 1)
        x = apply_penalties(logits, self.cfg, self.seen, self.counts) if self.penalties else logits
        if self.greedy:
            nxt = x.argmax(-1)  # [B]
            sampled = torch.ones_like(nxt, dtype=raw.dtype)
        else:
            for warp in self.warpers:
                x = warp(x)
            probs = x.softmax(-1)  # [B,V]
            nxt = torch.multinomial(probs, 1, generator=self.generator).squeeze(1)  # [B]
            sampled = probs.gather(1, nxt[:, None]).squeeze(1)
        prob = raw.gather(1, nxt[:, None]).squeeze(1)  # [B]
        alt_p = alt_i = None
        if self.k_alt:
            alt_p, alt_i = raw.topk(self.k_alt, dim=-1)  # [B,k]
        if self.penalties:
            self.seen.scatter_(1, nxt[:, None], True)
            self.counts.scatter_add_(1, nxt[:, None], self.ones)
        return nxt, prob, sampled, alt_p, alt_i


def stream_lm(
    model: nn.Module,
    tokenizer: Any,
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
) -> Iterator[StepEvent | Done]:
    """Generate from a GPT-style model, yielding a StepEvent per token per sample, then Done.

    `num_samples` samples are drawn at once (one batch). A sample stops at a stop string (its
    text is cut before it), a token of `stop_ids`, or after `max_new_tokens`. The same `seed`
    gives the same tokens (on the same device).
    """
    cfg = sampling or SamplingConfig()
    if max_new_tokens < 0:
        raise ConfigError(f"max new tokens must be >= 0, got {max_new_tokens}.")
    if num_samples < 1:
        raise ConfigError(f"number of samples must be >= 1, got {num_samples}.")
    stops = [s for s in stop if s]
    stop_id_set = set(int(i) for i in stop_ids)
    block = int(block_size or model.config.block_size)
    seed = resolve_seed(seed)
    device = next(model.parameters()).device
    prompt = list(prompt_ids) or start_ids(tokenizer)
    vocab = int(model.config.vocab_size)
    bad = [i for i in prompt if not 0 <= i < vocab]
    if bad:
        raise DataError(f"Prompt token ids {bad[:5]} are outside the model's vocabulary of {vocab}.")
    if prompt_text is None or not prompt_ids:  # an empty prompt reports the start token it used
        prompt_text = tokenizer.decode(prompt, skip_special_tokens=False) if tokenizer is not None else ""
    B, P = num_samples, len(prompt)
    started = time.perf_counter()

    with torch.inference_mode():
        ids = torch.empty(B, P + max_new_tokens, dtype=torch.long, device=device)  # [B, P+N]
        ids[:, :P] = torch.tensor(prompt, dtype=torch.long, device=device)
        gen = make_generator(seed, device)
        sampler = _Sampler(cfg, B, vocab, device, gen, n_alternatives, ids[:, :P])
        cache = model.new_cache() if use_cache else None
        start = max(0, P - block)
        if max_new_tokens:
            logits = model(ids[:, start:P], cache=cache, last_only=True)[:, -1]  # [B,V]

    detok = [Detokenizer(tokenizer, prompt) if (decode_text and tokenizer is not None) else None for _ in range(B)]
    texts = [""] * B
    gen_ids: list[list[int]] = [[] for _ in range(B)]
    reasons: list[str | None] = [None] * B
    events: list[list[StepEvent]] = [[] for _ in range(B)]
    alt_text_cache: dict[int, str] = {}
    longest_stop = max((len(s) for s in stops), default=0)
    n = P
    produced = 0
    for step in range(max_new_tokens):
        with torch.inference_mode():
            nxt, prob, sampled, alt_p, alt_i = sampler(logits)
            ids[:, n] = nxt
        n += 1
        nxt_l, prob_l, sampled_l = nxt.tolist(), prob.tolist(), sampled.tolist()
        alt_pl = alt_p.tolist() if alt_p is not None else None
        alt_il = alt_i.tolist() if alt_i is not None else None
        for b in range(B):
            if reasons[b] is not None:
                continue
            tid = nxt_l[b]
            piece = detok[b].push(tid) if detok[b] is not None else ""
            alternatives: list[tuple[int, str, float]] = []
            if alt_il is not None:
                for j, p in zip(alt_il[b], alt_pl[b]):  # type: ignore[index]
                    txt = alt_text_cache.get(j)
                    if txt is None and tokenizer is not None:
                        txt = alt_text_cache[j] = token_text(tokenizer, j)
                    alternatives.append((j, txt or str(j), p))
            stopped = False
            if tid in stop_id_set:
                reasons[b], stopped = "eos", True
            else:
                gen_ids[b].append(tid)
                texts[b] += piece
                if stops:
                    tail = texts[b][-(len(piece) + longest_stop) :]
                    if any(s in tail for s in stops):
                        cut = min(i for i in (texts[b].find(s) for s in stops) if i >= 0)
                        texts[b] = texts[b][:cut]
                        reasons[b], stopped = "stop", True
            event = StepEvent(b, step, n - 1, tid, piece, prob_l[b], sampled_l[b], alternatives, stopped)
            events[b].append(event)
            produced += 1
            yield event
        if all(r is not None for r in reasons) or step == max_new_tokens - 1:
            break
        with torch.inference_mode():
            new_start = next_window_start(start, n, block)
            if cache is None:
                start = new_start
                logits = model(ids[:, start:n], last_only=True)[:, -1]
            elif new_start != start:
                start = new_start
                cache.crop(0)
                logits = model(ids[:, start:n], cache=cache, last_only=True)[:, -1]
            else:
                logits = model(ids[:, n - 1 : n], cache=cache)[:, -1]
    elapsed = time.perf_counter() - started
    samples = [
        SampleResult(prompt_text, list(prompt), gen_ids[b], texts[b], reasons[b] or "length", events[b])
        for b in range(B)
    ]
    yield Done(samples, seed, produced, elapsed, {"use_cache": use_cache, "block_size": block})


def generate_lm(model: nn.Module, tokenizer: Any, prompt_ids: Sequence[int], **kwargs: Any) -> Done:
    """Run `stream_lm` to the end and return its Done."""
    done = None
    for event in stream_lm(model, tokenizer, prompt_ids, **kwargs):
        if isinstance(event, Done):
            done = event
    assert done is not None
    return done

