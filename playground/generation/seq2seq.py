"""Decoding for seq2seq checkpoints (RNN and Transformer) through `model.start` / `model.step`.

Conventions of the trainer: the source is its tokens with no specials; the target is
`<bos> tokens <eos>`. Both decoders return the alignment matrix of the chosen output,
one row per decoded step (the `<eos>` step included when the output ended with it) and one
column per source token: RNN attention weights, or the head-mean cross-attention of the
Transformer's last decoder layer.

Beam search keeps `beam_width` live hypotheses; a hypothesis that ends in `<eos>` among the
top `beam_width` candidates of a step is finished, and the search stops once `beam_width`
hypotheses have finished (or at `max_len`). Finished hypotheses are ranked by their
log-probability divided by the GNMT length penalty `((5 + |Y|) / 6) ** alpha` (Wu et al.
2016; alpha = 0 is the plain log-probability). With `beam_width = 1` this is exactly greedy.
"""
from __future__ import annotations

import math
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from tokenizers import Tokenizer
from torch import Tensor, nn

from playground.errors import ConfigError, DataError
from playground.generation.events import Done, SampleResult, StepEvent
from playground.generation.text import Detokenizer, token_text


def length_penalty(length: int, alpha: float) -> float:
    """GNMT length penalty ((5 + length) / 6) ** alpha."""
    return ((5.0 + length) / 6.0) ** alpha


def max_target_len(model: nn.Module, requested: int) -> int:
    """Decoding steps allowed: the request, capped by a Transformer's position table."""
    cap = getattr(model.config, "max_len", None)
    return min(requested, cap) if cap else requested


def check_source(model: nn.Module, src_ids: Sequence[int]) -> None:
    """DataError for an empty source or one longer than the model reads."""
    if not src_ids:
        raise DataError("The source is empty; type a source sequence to translate.")
    cap = getattr(model.config, "max_len", None)
    if cap and len(src_ids) > cap:
        raise DataError(f"The source has {len(src_ids)} tokens but this model reads at most {cap}; shorten it.")


@torch.no_grad()
def greedy_decode(model: nn.Module, src: Tensor, bos_id: int, eos_id: int, max_len: int) -> list[list[int]]:
    """Batched greedy decoding with model.start / model.step: src [B,S] -> token ids per row
    (no specials; each row stops at its own <eos>). The trainer's exact-match metric and the
    analyzer's teacher-forced outputs use it; the Generate tab streams :func:`stream_greedy`."""
    state = model.start(src)
    B = src.shape[0]
    y = torch.full((B,), bos_id, dtype=torch.long, device=src.device)
    done = torch.zeros(B, dtype=torch.bool, device=src.device)
    out = []
    for _ in range(max_len):
        logits, _, state = model.step(state, y)  # [B,V]
        y = logits.argmax(-1)  # [B]
        out.append(torch.where(done, torch.full_like(y, eos_id), y))
        done |= y == eos_id
        if bool(done.all()):
            break
    rows = torch.stack(out, 1).tolist() if out else [[] for _ in range(B)]
    result = []
    for row in rows:
        result.append(row[: row.index(eos_id)] if eos_id in row else row)
    return result


def _alternatives(tokenizer: Tokenizer | None, probs: list[float], ids: list[int], cache: dict[int, str]) -> list[tuple[int, str, float]]:
    out = []
    for j, p in zip(ids, probs):
        txt = cache.get(j)
        if txt is None:
            txt = cache[j] = token_text(tokenizer, j) if tokenizer is not None else str(j)
        out.append((j, txt, p))
    return out


def _source_tokens(tokenizer: Tokenizer | None, src_ids: Sequence[int]) -> list[str]:
    return [token_text(tokenizer, i) if tokenizer is not None else str(i) for i in src_ids]


def _decode_text(tokenizer: Tokenizer | None, ids: list[int]) -> str:
    return tokenizer.decode(ids, skip_special_tokens=True) if tokenizer is not None else " ".join(map(str, ids))


def stream_greedy(
    model: nn.Module,
    tokenizer: Tokenizer | None,
    src_ids: Sequence[int],
    *,
    max_new_tokens: int = 100,
    n_alternatives: int = 5,
    source_text: str | None = None,
) -> Iterator[StepEvent | Done]:
    """Greedy decoding, streaming one StepEvent per output token (the `<eos>` step included,
    marked `stopped`), then Done with the alignment [steps, source]."""
    check_source(model, src_ids)
    cfg = model.config
    device = next(model.parameters()).device
    steps = max_target_len(model, max_new_tokens)
    started = time.perf_counter()
    with torch.inference_mode():
        src = torch.tensor([list(src_ids)], dtype=torch.long, device=device)  # [1,S]
        state = model.start(src)
        y = torch.full((1,), cfg.bos_id, dtype=torch.long, device=device)  # [1]
    ids: list[int] = []
    rows: list[np.ndarray] = []
    events: list[StepEvent] = []
    alt_cache: dict[int, str] = {}
    detok = Detokenizer(tokenizer, skip_special=True) if tokenizer is not None else None
    logprob = 0.0
    reason = "length"
    k = min(n_alternatives, cfg.vocab_size)
    for t in range(steps):
        with torch.inference_mode():
            logits, align, state = model.step(state, y)  # [1,V], [1,S]
            probs = logits.float().softmax(-1)[0]  # [V]
            y = probs.argmax().view(1)
            p = float(probs[y])
            alt = probs.topk(k) if k else None
            rows.append(align[0].float().cpu().numpy())
        tid = int(y)
        logprob += math.log(max(p, 1e-45))
        alts = _alternatives(tokenizer, alt.values.tolist(), alt.indices.tolist(), alt_cache) if alt is not None else []
        is_eos = tid == cfg.eos_id
        piece = "" if is_eos else detok.push(tid) if detok is not None else str(tid)
        ev = StepEvent(0, t, t, tid, piece, p, 1.0, alts, stopped=is_eos)
        events.append(ev)
        yield ev
        if is_eos:
            reason = "eos"
            break
        ids.append(tid)
    result = _result(tokenizer, src_ids, source_text, ids, reason, events, rows, logprob)
    yield Done([result], None, len(events), time.perf_counter() - started, {"decoder": "greedy"})


def _result(tokenizer: Tokenizer | None, src_ids: Sequence[int], source_text: str | None, ids: list[int], reason: str,
            events: list[StepEvent], rows: list[np.ndarray], score: float) -> SampleResult:
    S = len(src_ids)
    alignment = np.stack(rows) if rows else np.zeros((0, S), dtype=np.float32)  # [T,S]
    targets = [("<eos>" if e.stopped else (token_text(tokenizer, e.token_id) if tokenizer is not None else str(e.token_id)))
               for e in events]
    src_text = source_text if source_text is not None else _decode_text(tokenizer, list(src_ids))
    return SampleResult(src_text, list(src_ids), ids, _decode_text(tokenizer, ids), reason, events,
                        alignment=alignment, source_tokens=_source_tokens(tokenizer, src_ids),
                        target_tokens=targets, score=score)


@dataclass
class _Hyp:
    tokens: list[int]
    rows: list[np.ndarray]
    probs: list[float]
    alts: list[tuple[list[float], list[int]]]


def beam_search(
    model: nn.Module,
    tokenizer: Tokenizer | None,
    src_ids: Sequence[int],
    *,
    beam_width: int = 4,
    alpha: float = 0.0,
    max_new_tokens: int = 100,
    n_alternatives: int = 5,
    source_text: str | None = None,
) -> Done:
    """Beam search; Done.samples[0] is the best hypothesis (its events carry, per step, the
    model's probability of the chosen token and the top alternatives on that hypothesis's path).
    Done.info["hypotheses"] lists every finished hypothesis (text, score, log-prob)."""
    if beam_width < 1:
        raise ConfigError(f"beam width must be >= 1, got {beam_width}.")
    if alpha < 0:
        raise ConfigError(f"length penalty alpha must be >= 0, got {alpha}.")
    check_source(model, src_ids)
    cfg = model.config
    device = next(model.parameters()).device
    steps = max_target_len(model, max_new_tokens)
    W, V = beam_width, cfg.vocab_size
    k = min(n_alternatives, V)
    started = time.perf_counter()
    finished: list[tuple[float, float, _Hyp, str]] = []  # (ranking score, log-prob, hyp, reason)
    with torch.inference_mode():
        src = torch.tensor([list(src_ids)], dtype=torch.long, device=device)  # [1,S]
        state = model.start(src)
        state.reorder(torch.zeros(W, dtype=torch.long, device=device))  # W copies of the source
        y = torch.full((W,), cfg.bos_id, dtype=torch.long, device=device)  # [W]
        scores = torch.full((W,), float("-inf"), device=device)
        scores[0] = 0.0  # one live hypothesis at the start (the copies would be duplicates)
    hyps = [_Hyp([], [], [], []) for _ in range(W)]
    for _t in range(steps):
        with torch.inference_mode():
            logits, align, state = model.step(state, y)  # [W,V], [W,S]
            logp = logits.float().log_softmax(-1)  # [W,V]
            cand = (scores[:, None] + logp).view(-1)  # [W*V]
            top_scores, top_idx = cand.topk(min(2 * W, cand.numel()))
            align_np = align.float().cpu().numpy()
            alt_p, alt_i = logp.exp().topk(k, dim=-1) if k else (None, None)
        top_scores_l, top_idx_l = top_scores.tolist(), top_idx.tolist()
        alt_pl = alt_p.tolist() if alt_p is not None else None
        alt_il = alt_i.tolist() if alt_i is not None else None
        new_beams: list[int] = []
        new_tokens: list[int] = []
        new_scores: list[float] = []
        for rank, (s, flat) in enumerate(zip(top_scores_l, top_idx_l)):
            if s == float("-inf"):
                break
            beam, tok = divmod(flat, V)
            if tok == cfg.eos_id:
                if rank < W:
                    h = _extend(hyps[beam], tok, align_np[beam], beam, alt_pl, alt_il, logp)
                    length = len(h.tokens)
                    finished.append((s / length_penalty(length, alpha), s, h, "eos"))
                continue
            if len(new_beams) < W:
                new_beams.append(beam)
                new_tokens.append(tok)
                new_scores.append(s)
        if len(finished) >= W or not new_beams:
            break
        hyps = [_extend(hyps[b], tok, align_np[b], b, alt_pl, alt_il, logp)
                for b, tok, s in zip(new_beams, new_tokens, new_scores)]
        while len(new_beams) < W:  # fewer candidates than beams (tiny vocabularies): pad, dead
            new_beams.append(new_beams[0])
            new_tokens.append(new_tokens[0])
            new_scores.append(float("-inf"))
            hyps.append(hyps[0])
        with torch.inference_mode():
            index = torch.tensor(new_beams, dtype=torch.long, device=device)
            state.reorder(index)
            y = torch.tensor(new_tokens, dtype=torch.long, device=device)
            scores = torch.tensor(new_scores, device=device)
    if len(finished) < W:  # out of steps: live hypotheses compete as they are
        for h, s in zip(hyps, scores.tolist()):
            if s > float("-inf") and h.tokens:
                finished.append((s / length_penalty(len(h.tokens), alpha), s, h, "length"))
    if not finished:
        raise DataError("Beam search produced no output; raise the maximum output length.")
    finished.sort(key=lambda f: f[0], reverse=True)
    rank_score, logprob, best, reason = finished[0]
    alt_cache: dict[int, str] = {}
    detok = Detokenizer(tokenizer, skip_special=True) if tokenizer is not None else None
    events = []
    for i, (tid, p, (ap, ai)) in enumerate(zip(best.tokens, best.probs, best.alts)):
        is_eos = tid == cfg.eos_id
        piece = "" if is_eos else detok.push(tid) if detok is not None else str(tid)
        events.append(StepEvent(0, i, i, tid, piece, p, 1.0, _alternatives(tokenizer, ap, ai, alt_cache), stopped=is_eos))
    out_ids = [tid for tid in best.tokens if tid != cfg.eos_id]
    result = _result(tokenizer, src_ids, source_text, out_ids, reason, events, best.rows, rank_score)
    hypotheses = [
        {"text": _decode_text(tokenizer, [i for i in h.tokens if i != cfg.eos_id]), "score": sc, "logprob": lp,
         "length": len(h.tokens), "ended": why}
        for sc, lp, h, why in finished
    ]
    return Done([result], None, len(events), time.perf_counter() - started,
                {"decoder": "beam", "beam_width": W, "alpha": alpha, "hypotheses": hypotheses, "logprob": logprob})


def _extend(h: _Hyp, tok: int, row: np.ndarray, beam: int, alt_pl: list | None,
            alt_il: list | None, logp: torch.Tensor) -> _Hyp:
    """`h` plus one token chosen from beam `beam` (its alignment row, probability, alternatives)."""
    p = math.exp(float(logp[beam, tok]))
    alts = (alt_pl[beam], alt_il[beam]) if alt_pl is not None else ([], [])
    return _Hyp(h.tokens + [tok], h.rows + [row], h.probs + [p], h.alts + [alts])


def stream_beam(model: nn.Module, tokenizer: Tokenizer | None, src_ids: Sequence[int], **kwargs: Any) -> Iterator[StepEvent | Done]:
    """Beam search as a stream: the best hypothesis's events once the search is over, then Done."""
    done = beam_search(model, tokenizer, src_ids, **kwargs)
    yield from done.samples[0].events
    yield done
