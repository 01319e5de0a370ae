"""The merge-by-merge walk: how BPE turns one word (or line) into tokens.

BPE encoding, as `tokenizers` does it for each pre-tokenized word:

1. start from the word's symbols: its bytes (byte-level) or characters (with ``</w>`` on the
   last one, or byte-fallback ``<0xNN>`` / ``<unk>`` for characters not in the vocabulary);
2. among adjacent pairs that are a learned merge, pick the one with the lowest rank (learned
   earliest), leftmost on ties, and merge it;
3. repeat until no adjacent pair is a merge.

Special tokens are split off first, and each stretch between them is normalized and
pre-tokenized. `walk` replays exactly this in Python and records every merge that fires; its
final tokens equal `tokenizer.encode(text, add_special_tokens=False).tokens` (tested).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import pandas as pd
from tokenizers import Tokenizer

from playground.errors import DataError
from playground.tokenization.vocab import TokenizerInfo, readable

MAX_WALK_CHARS = 2000


@dataclass(frozen=True)
class MergeStep:
    """One merge that fired: symbols[position] + symbols[position + 1] -> merged."""

    rank: int
    left: str
    right: str
    merged: str
    position: int
    symbols: tuple[str, ...]  # the word's symbols after this merge


@dataclass(frozen=True)
class WordWalk:
    """One pre-tokenized word (or one special token) from start symbols to final tokens."""

    word: str
    special: bool
    start: tuple[str, ...]
    steps: tuple[MergeStep, ...]

    @property
    def tokens(self) -> tuple[str, ...]:
        """Final tokens of this word."""
        return self.steps[-1].symbols if self.steps else self.start


@dataclass(frozen=True)
class MergeWalk:
    """The whole walk of a text."""

    text: str
    words: tuple[WordWalk, ...] = field(default_factory=tuple)
    model_type: str = "BPE"

    @property
    def tokens(self) -> list[str]:
        """All final tokens, in order: what `encode` returns."""
        return [t for w in self.words for t in w.tokens]

    @property
    def n_merges(self) -> int:
        """How many merges fired in total."""
        return sum(len(w.steps) for w in self.words)


def _split_specials(text: str, info: TokenizerInfo) -> list[tuple[str, bool]]:
    """`text` cut into (piece, is_added_token), added tokens matched leftmost-longest."""
    contents = sorted({a["content"] for a in info.added_tokens if a.get("content")}, key=len, reverse=True)
    if not contents:
        return [(text, False)] if text else []
    pattern = re.compile("|".join(re.escape(c) for c in contents))
    out: list[tuple[str, bool]] = []
    pos = 0
    for m in pattern.finditer(text):
        if m.start() > pos:
            out.append((text[pos : m.start()], False))
        out.append((m.group(0), True))
        pos = m.end()
    if pos < len(text):
        out.append((text[pos:], False))
    return out


def start_symbols(word: str, info: TokenizerInfo) -> list[str]:
    """The symbols BPE starts from for one pre-tokenized word (as `tokenizers`' BPE does)."""
    if info.model_type == "WordLevel":  # the whole pre-token is looked up as is
        return [word if word in info.vocab else (info.unk_token or word)]
    symbols: list[str] = []
    previous_unknown = False
    chars = list(word)
    for i, ch in enumerate(chars):
        s = ch
        if info.continuing_subword_prefix and i > 0:
            s = info.continuing_subword_prefix + s
        if info.end_of_word_suffix and i == len(chars) - 1:
            s = s + info.end_of_word_suffix
        if s in info.vocab:
            symbols.append(s)
            previous_unknown = False
            continue
        if info.byte_fallback:
            # like tokenizers, spell the symbol as looked up (suffix / prefix included) in bytes
            byte_tokens = [f"<0x{b:02X}>" for b in s.encode("utf-8")]
            if all(t in info.vocab for t in byte_tokens):
                symbols.extend(byte_tokens)
                previous_unknown = False
                continue
        if info.unk_token is not None and not (info.fuse_unk and previous_unknown):
            symbols.append(info.unk_token)
        previous_unknown = True
    return symbols


def merge_word(symbols: list[str], info: TokenizerInfo, ranks: dict[tuple[str, str], int]) -> list[MergeStep]:
    """Apply merges lowest rank first (leftmost on ties) until none applies; the steps taken."""
    symbols = list(symbols)
    steps: list[MergeStep] = []
    if info.ignore_merges and "".join(symbols) in info.vocab and len(symbols) > 1:
        whole = "".join(symbols)
        return [MergeStep(-1, symbols[0], "".join(symbols[1:]), whole, 0, (whole,))]
    while len(symbols) > 1:
        best_rank, best_pos = None, -1
        for pos in range(len(symbols) - 1):
            rank = ranks.get((symbols[pos], symbols[pos + 1]))
            if rank is not None and (best_rank is None or rank < best_rank):
                best_rank, best_pos = rank, pos
        if best_rank is None:
            break
        left, right = symbols[best_pos], symbols[best_pos + 1]
        merged = info.merged_token(left, right)
        symbols[best_pos : best_pos + 2] = [merged]
        steps.append(MergeStep(best_rank, left, right, merged, best_pos, tuple(symbols)))
    return steps


def walk(tokenizer: Tokenizer, text: str, info: TokenizerInfo | None = None,
         max_chars: int | None = MAX_WALK_CHARS) -> MergeWalk:
    """Replay BPE encoding of `text`, recording each merge that fires."""
    if text is None or text == "":
        raise DataError("Type a word or a line to walk through its merges.")
    if max_chars is not None and len(text) > max_chars:
        raise DataError(f"The merge walk shows one word or line; give at most {max_chars:,} characters "
                        f"(got {len(text):,}).")
    info = info or TokenizerInfo.from_tokenizer(tokenizer)
    ranks = info.merge_ranks()
    words: list[WordWalk] = []
    for piece, is_special in _split_specials(text, info):
        if is_special:
            words.append(WordWalk(piece, True, (piece,), ()))
            continue
        normalized = tokenizer.normalizer.normalize_str(piece) if tokenizer.normalizer is not None else piece
        if tokenizer.pre_tokenizer is not None:
            pieces = [w for w, _ in tokenizer.pre_tokenizer.pre_tokenize_str(normalized)]
        else:
            pieces = [normalized]
        for word in pieces:
            if not word:
                continue
            start = start_symbols(word, info)
            steps = merge_word(start, info, ranks) if info.model_type == "BPE" else []
            words.append(WordWalk(word, False, tuple(start), tuple(steps)))
    return MergeWalk(text, tuple(words), info.model_type)


def walk_table(result: MergeWalk, tokenizer: Tokenizer, info: TokenizerInfo | None = None) -> pd.DataFrame:
    """The walk as rows: word, step, rank, merge, symbols after (readable, joined by ' | ')."""
    info = info or TokenizerInfo.from_tokenizer(tokenizer)
    show = lambda symbols: " | ".join(readable(s, info) for s in symbols)
    rows = []
    for w_index, w in enumerate(result.words):
        word = readable(w.word, info) if not w.special else w.word
        rows.append({"word": w_index, "text": word, "step": 0, "rank": None,
                     "merge": "special token" if w.special else "start", "symbols": show(w.start)})
        for i, step in enumerate(w.steps, start=1):
            rows.append({"word": w_index, "text": word, "step": i, "rank": step.rank,
                         "merge": f"{readable(step.left, info)} + {readable(step.right, info)} → {readable(step.merged, info)}",
                         "symbols": show(step.symbols)})
    df = pd.DataFrame(rows, columns=["word", "text", "step", "rank", "merge", "symbols"])
    df["rank"] = df["rank"].astype("Int64")
    return df
