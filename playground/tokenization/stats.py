"""Figures about a tokenizer on text: compression, token counts, vocabulary-size sweeps, comparisons."""
from __future__ import annotations

import html
import re
from collections import Counter
from collections.abc import Generator
from dataclasses import dataclass

import numpy as np
import pandas as pd
from tokenizers import Tokenizer

from playground.errors import DataError
from playground.limits import check_text
from playground.tokenization.bpe import (
    BuildProgress,
    TokenizerOptions,
    base_alphabet_size,
    chunk_text,
    iter_build,
    truncate_bpe,
)
from playground.tokenization.build_process import iter_build_in_child
from playground.tokenization.vocab import TokenizerInfo, readable, visible

HELD_OUT_FRACTION = 0.1
MAX_HELD_OUT_CHARS = 200_000
MIN_CHARS_TO_HOLD_OUT = 5_000
SWEEP_SIZES = (256, 512, 1024, 2048, 4096, 8192, 16384, 32768)
_WORD = re.compile(r"\S+")


def split_held_out(text: str, fraction: float = HELD_OUT_FRACTION,
                   max_chars: int = MAX_HELD_OUT_CHARS) -> tuple[str, str]:
    """(train, held_out): the last `fraction` of the text (at most `max_chars`), cut at a line start.

    Texts shorter than MIN_CHARS_TO_HOLD_OUT are not split (held_out is "").
    """
    if fraction <= 0 or len(text) < MIN_CHARS_TO_HOLD_OUT:
        return text, ""
    size = min(int(len(text) * fraction), max_chars)
    cut = len(text) - size
    newline = text.find("\n", cut)
    if newline != -1 and newline + 1 < len(text) and newline - cut < size // 2:
        cut = newline + 1
    return text[:cut], text[cut:]


_CHUNKING = {"ByteLevel": "byte-level", "Metaspace": "metaspace", "Whitespace": "whitespace",
             "WhitespaceSplit": "whitespace", "Split": "whitespace"}


def _encode_ids(tokenizer: Tokenizer, text: str) -> list[list[int]]:
    """Ids of `text`, encoded in chunks cut where the pre-tokenizer splits anyway (so the result is
    the same as encoding it whole; without a known pre-tokenizer, whole), in parallel inside `tokenizers`."""
    if not text:
        return []
    kind = _CHUNKING.get(type(tokenizer.pre_tokenizer).__name__) if tokenizer.pre_tokenizer is not None else None
    chunks = chunk_text(text, kind) if kind else [text]
    encode = getattr(tokenizer, "encode_batch_fast", tokenizer.encode_batch)
    return [e.ids for e in encode(chunks, add_special_tokens=False)]


@dataclass(frozen=True)
class Compression:
    """How much a tokenizer shortens a text."""

    chars: int
    bytes: int
    words: int
    tokens: int

    @property
    def chars_per_token(self) -> float:
        return self.chars / self.tokens if self.tokens else float("nan")

    @property
    def bytes_per_token(self) -> float:
        return self.bytes / self.tokens if self.tokens else float("nan")

    @property
    def tokens_per_word(self) -> float:
        return self.tokens / self.words if self.words else float("nan")

    def to_dict(self) -> dict[str, float | int]:
        return {"chars": self.chars, "bytes": self.bytes, "words": self.words, "tokens": self.tokens,
                "chars_per_token": round(self.chars_per_token, 4), "bytes_per_token": round(self.bytes_per_token, 4),
                "tokens_per_word": round(self.tokens_per_word, 4)}


def compression(tokenizer: Tokenizer, text: str) -> Compression:
    """Characters, bytes and words of `text`, and how many tokens `tokenizer` makes of it."""
    tokens = sum(len(ids) for ids in _encode_ids(tokenizer, text))
    return Compression(len(text), len(text.encode("utf-8")), len(text.split()), tokens)


def token_counts(tokenizer: Tokenizer, text: str) -> list[int]:
    """How often each id occurs when `text` is encoded (index = id)."""
    size = tokenizer.get_vocab_size()
    counts = np.zeros(size, dtype=np.int64)
    for ids in _encode_ids(tokenizer, text):
        if ids:
            counts += np.bincount(np.asarray(ids, dtype=np.int64), minlength=size)[:size]
    return counts.tolist()


def sweep_sizes(base: int, largest: int, sizes: tuple[int, ...] = SWEEP_SIZES) -> list[int]:
    """The vocabulary sizes of a sweep: `base` (no merges) and each of `sizes` in (base, largest]."""
    return [base] + [s for s in sizes if base < s <= largest]


def iter_vocab_sweep(text: str, options: TokenizerOptions, largest: int = 32768, caps=None,
                     sizes: tuple[int, ...] = SWEEP_SIZES,
                     in_child: bool = False) -> Generator[BuildProgress, None, pd.DataFrame]:
    """Compression on held-out text for a range of vocabulary sizes, training only once.

    A BPE of size n is the first merges of a bigger one (see `truncate_bpe`), so one training run
    at the largest size gives every smaller tokenizer. Returns a DataFrame with vocab_size,
    chars_per_token, tokens_per_word, bytes_per_token, merges. `in_child` trains in a child
    process that closing the generator terminates (the app's Stop).
    """
    if options.kind != "bpe":
        raise DataError("A vocabulary-size sweep needs a BPE tokenizer (a character-level one has no size to choose).")
    if caps is not None and caps.max_vocab_size:
        largest = min(largest, caps.max_vocab_size)
    train, held = split_held_out(text)
    held = held or train
    base = base_alphabet_size(train, options.checked(caps))
    if largest < base:
        raise DataError(f"The sweep needs vocabularies of at least {base:,} (the base alphabet); raise the largest size.")
    build = iter_build_in_child if in_child else iter_build
    big = yield from build(train, TokenizerOptions(**{**options.to_dict(), "vocab_size": largest,
                                                          "special_tokens": tuple(options.special_tokens)}), caps)
    actual = big.get_vocab_size()
    rows = []
    for size in sweep_sizes(base, min(largest, actual), sizes):
        yield BuildProgress("measuring", f"Measuring vocabulary {size:,} on {len(held):,} held-out characters")
        tok = big if size >= actual else truncate_bpe(big, size)
        comp = compression(tok, held)
        rows.append({"vocab_size": tok.get_vocab_size(), "chars_per_token": comp.chars_per_token,
                     "tokens_per_word": comp.tokens_per_word, "bytes_per_token": comp.bytes_per_token,
                     "merges": len(TokenizerInfo.from_tokenizer(tok).merges)})
    if actual not in {r["vocab_size"] for r in rows}:
        comp = compression(big, held)
        rows.append({"vocab_size": actual, "chars_per_token": comp.chars_per_token,
                     "tokens_per_word": comp.tokens_per_word, "bytes_per_token": comp.bytes_per_token,
                     "merges": len(TokenizerInfo.from_tokenizer(big).merges)})
    return pd.DataFrame(rows, columns=["vocab_size", "chars_per_token", "tokens_per_word", "bytes_per_token", "merges"])


def vocab_sweep(text: str, options: TokenizerOptions, largest: int = 32768, caps=None,
                sizes: tuple[int, ...] = SWEEP_SIZES) -> pd.DataFrame:
    """Blocking `iter_vocab_sweep`."""
    gen = iter_vocab_sweep(text, options, largest, caps, sizes)
    while True:
        try:
            next(gen)
        except StopIteration as stop:
            return stop.value


# -- encoding a text, shown as coloured spans ----------------------------------------------------

@dataclass(frozen=True)
class Encoded:
    """A text, its tokens and ids, and which characters each token covers."""

    text: str
    ids: list[int]
    tokens: list[str]
    offsets: list[tuple[int, int]]

    @property
    def n_tokens(self) -> int:
        return len(self.ids)

    @property
    def chars_per_token(self) -> float:
        return len(self.text) / len(self.ids) if self.ids else float("nan")


def encode(tokenizer: Tokenizer, text: str, caps=None) -> Encoded:
    """Encode `text` (no special tokens added) keeping offsets into the original text.

    Text longer than the server's `max_encode_chars` (caps default FULL_CAPS) is refused."""
    check_text(text, "max_encode_chars", caps, "The text to encode")
    enc = tokenizer.encode(text or "", add_special_tokens=False)
    return Encoded(text or "", list(enc.ids), list(enc.tokens), [(start, end) for start, end in enc.offsets])


def spans(encoded: Encoded) -> list[tuple[str, list[int]]]:
    """The text cut into (piece, token indices): pieces no token covers get []; tokens that share
    characters (byte-level pieces of one character) share a piece."""
    out: list[tuple[str, list[int]]] = []
    pos = 0
    text = encoded.text
    for i, (start, end) in enumerate(encoded.offsets):
        if out and out[-1][1] and start < pos:  # overlaps the previous piece: same characters
            if end > pos:
                piece, idx = out[-1]
                out[-1] = (piece + text[pos:end], idx + [i])
                pos = end
            else:
                out[-1][1].append(i)
            continue
        if start > pos:
            out.append((text[pos:start], []))
        out.append((text[start:end], [i]))
        pos = max(pos, end)
    if pos < len(text):
        out.append((text[pos:], []))
    return out


_PALETTE = ("#fde68a", "#bfdbfe", "#bbf7d0", "#fecaca", "#ddd6fe", "#fed7aa", "#a5f3fc", "#fbcfe8")


def tokens_html(encoded: Encoded, info: TokenizerInfo | None = None) -> str:
    """The text as coloured token spans (HTML, escaped); hover shows ids; whitespace made visible."""
    parts = ['<div class="tok-spans" style="font-family: ui-monospace, monospace; line-height: 2; '
             'white-space: pre-wrap; word-break: break-all;">']
    colour = 0
    for piece, idx in spans(encoded):
        shown = html.escape(visible(piece)).replace("↵", "↵<br>")
        if not idx:
            parts.append(f'<span style="color:#9ca3af" title="not in any token">{shown}</span>')
            continue
        title = ", ".join(f"{encoded.ids[i]}: {readable(encoded.tokens[i], info) if info else encoded.tokens[i]}"
                          for i in idx)
        parts.append(f'<span style="background:{_PALETTE[colour % len(_PALETTE)]}; border-radius:3px; '
                     f'padding:1px 0; margin-right:1px; color:#111" title="{html.escape(title)}">{shown}</span>')
        colour += 1
    parts.append("</div>")
    return "".join(parts)


def ids_table(encoded: Encoded, info: TokenizerInfo) -> pd.DataFrame:
    """One row per token: position, id, token (readable), the characters it covers."""
    rows = [{"position": i, "id": tid, "token": readable(tok, info), "text": visible(encoded.text[s:e])}
            for i, (tid, tok, (s, e)) in enumerate(zip(encoded.ids, encoded.tokens, encoded.offsets))]
    return pd.DataFrame(rows, columns=["position", "id", "token", "text"])


# -- comparing two tokenizers -----------------------------------------------------------------------

@dataclass(frozen=True)
class Comparison:
    """Two tokenizers on one text: a summary row each, and the words they split differently."""

    summary: pd.DataFrame
    differences: pd.DataFrame
    encoded: tuple[Encoded, Encoded]


def _boundaries(encoded: Encoded) -> set[int]:
    out: set[int] = set()
    for s, e in encoded.offsets:
        out.add(s)
        out.add(e)
    return out


def _split_word(word: str, start: int, cuts: set[int]) -> str:
    inner = sorted(c - start for c in cuts if start < c < start + len(word))
    pieces, prev = [], 0
    for c in inner:
        pieces.append(word[prev:c])
        prev = c
    pieces.append(word[prev:])
    return " | ".join(visible(p) for p in pieces)


def compare(tok_a: Tokenizer, tok_b: Tokenizer, text: str, names: tuple[str, str] = ("A", "B"),
            max_rows: int = 500) -> Comparison:
    """Counts for both tokenizers and the words (whitespace-separated) whose inner token boundaries differ."""
    if not text or not text.strip():
        raise DataError("Give some text to compare the two tokenizers on.")
    if names[0] == names[1]:
        names = (f"{names[0]} (A)", f"{names[1]} (B)")
    enc = (encode(tok_a, text), encode(tok_b, text))
    words = len(text.split())
    summary = pd.DataFrame([
        {"tokenizer": name, "vocab_size": tok.get_vocab_size(), "tokens": e.n_tokens,
         "chars_per_token": round(e.chars_per_token, 3),
         "tokens_per_word": round(e.n_tokens / words, 3) if words else float("nan")}
        for name, tok, e in zip(names, (tok_a, tok_b), enc)
    ])
    cuts = [_boundaries(e) for e in enc]
    diffs: Counter[tuple[str, str, str]] = Counter()
    for m in _WORD.finditer(text):
        word, start = m.group(0), m.start()
        a, b = (_split_word(word, start, c) for c in cuts)
        if a != b:
            diffs[(visible(word), a, b)] += 1
    rows = [{"word": w, names[0]: a, names[1]: b, f"{names[0]} pieces": a.count(" | ") + 1,
             f"{names[1]} pieces": b.count(" | ") + 1, "occurrences": n}
            for (w, a, b), n in diffs.most_common(max_rows)]
    columns = ["word", names[0], names[1], f"{names[0]} pieces", f"{names[1]} pieces", "occurrences"]
    return Comparison(summary, pd.DataFrame(rows, columns=columns), enc)
