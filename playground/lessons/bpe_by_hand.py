"""BPE by hand: count adjacent pairs, merge the most frequent, repeat, on a toy word-frequency
corpus or the user's text. The counting and merging are written out here (they are the lesson);
the same merges are then learned by `tokenizers`' BpeTrainer and compared."""
from __future__ import annotations

import itertools
import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd
from tokenizers import Tokenizer, models, pre_tokenizers, trainers

from playground.charts.lessons_models import merge_counts_chart, symbols_chart
from playground.lessons.base import Lesson, LessonInputError, LessonView, Param

END = "</w>"  # the end-of-word mark, glued to a word's last character (as in Sennrich et al. 2016)
# The classic toy corpus of Sennrich, Haddow & Birch (2016), Algorithm 1: word -> frequency.
TOY = {"low": 5, "lower": 2, "newest": 6, "widest": 3}
MAX_CHARS = 5000
MAX_WORDS = 1000  # distinct words in the user's text
MAX_MERGES = 200
SHOWN_PAIRS = 8  # pair counts listed per step
SHOWN_WORDS = 6  # words whose segmentation the steps table follows

Pair = tuple[str, str]
Words = dict[tuple[str, ...], int]


@dataclass(frozen=True)
class Step:
    """One merge: the pair chosen, its count, the pairs it tied with, and the state after it."""

    number: int
    pair: Pair
    count: int
    ties: tuple[Pair, ...]
    top: tuple[tuple[Pair, int], ...]  # the most frequent pairs before this merge, best first
    vocab_size: int
    symbols: int  # symbols the whole corpus takes after this merge
    words: Words


def word_counts(text: str) -> Counter[str]:
    """Words split on whitespace, with their frequencies."""
    return Counter(text.split())


def start_words(counts: Mapping[str, int]) -> Words:
    """Each word as its characters, the last one carrying the end-of-word mark."""
    return {(*word[:-1], word[-1] + END): n for word, n in counts.items() if word}


def pair_counts(words: Words) -> Counter[Pair]:
    """How often each adjacent pair of symbols occurs, weighted by word frequency."""
    counts: Counter[Pair] = Counter()
    for symbols, n in words.items():
        for pair in itertools.pairwise(symbols):
            counts[pair] += n
    return counts


def merge(words: Words, pair: Pair) -> Words:
    """Every occurrence of `pair` (left to right, not overlapping) replaced by the joined symbol."""
    joined = pair[0] + pair[1]
    out: Words = {}
    for symbols, n in words.items():
        merged, i = [], 0
        while i < len(symbols):
            if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == pair:
                merged.append(joined)
                i += 2
            else:
                merged.append(symbols[i])
                i += 1
        out[tuple(merged)] = out.get(tuple(merged), 0) + n
    return out


def initial_ids(words: Words) -> dict[str, int]:
    """Tie-break order: plain characters alphabetically, then end-of-word symbols alphabetically;
    merged symbols are appended as they are learned."""
    plain = sorted({c for symbols in words for s in symbols for c in s.removesuffix(END)})
    ends = sorted({symbols[-1] for symbols in words})
    return {s: i for i, s in enumerate([*plain, *ends])}


def learn(counts: Mapping[str, int], n_merges: int) -> list[Step]:
    """Up to `n_merges` merges: each time the most frequent pair, ties to the smallest (left id, right id)."""
    words = start_words(counts)
    ids = initial_ids(words)
    steps: list[Step] = []
    for number in range(1, n_merges + 1):
        pairs = pair_counts(words)
        if not pairs:
            break
        best = max(pairs.values())
        tied = sorted((p for p, n in pairs.items() if n == best), key=lambda p: (ids[p[0]], ids[p[1]]))
        pair = tied[0]
        words = merge(words, pair)
        ids.setdefault(pair[0] + pair[1], len(ids))
        top = tuple(sorted(pairs.items(), key=lambda kv: (-kv[1], ids[kv[0][0]], ids[kv[0][1]]))[:SHOWN_PAIRS])
        steps.append(Step(number, pair, best, tuple(tied[1:]), top, len(ids), sum(len(s) * n for s, n in words.items()),
                          words))
    return steps


def library_merges(counts: Mapping[str, int], n_merges: int) -> list[Pair]:
    """The merges `tokenizers`' BpeTrainer learns from the same words (same end-of-word mark)."""
    tokenizer = Tokenizer(models.BPE(end_of_word_suffix=END))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    alphabet = {c for word in counts for c in word}
    ends = {word[-1] for word in counts}
    trainer = trainers.BpeTrainer(vocab_size=len(alphabet) + len(ends) + n_merges, min_frequency=0,
                                  show_progress=False, end_of_word_suffix=END, special_tokens=[])
    tokenizer.train_from_iterator([" ".join([word] * n) for word, n in counts.items()], trainer)
    return [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in json.loads(tokenizer.to_str())["model"]["merges"]]


def _show(pair: Pair) -> str:
    return f"{pair[0]} + {pair[1]}"


def _segment(words: Words, word: str) -> str:
    chars = "".join(word)
    for symbols in words:
        if "".join(symbols).removesuffix(END) == chars:
            return " ".join(symbols)
    return word


def compute(corpus: str, text: str, merges: int) -> LessonView:
    """The merges, step by step, on the toy corpus or the given text, checked against `tokenizers`."""
    if corpus == "toy":
        counts: Mapping[str, int] = TOY
    else:
        counts = word_counts(text)
        if not counts:
            raise LessonInputError("Type some text (words separated by spaces) to learn merges from.")
        if len(counts) > MAX_WORDS:
            raise LessonInputError(f"The text has {len(counts):,} distinct words; this lesson takes at most "
                                   f"{MAX_WORDS:,}: shorten it.")
    steps = learn(counts, merges)
    shown = [w for w, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:SHOWN_WORDS]]
    start = start_words(counts)
    start_row = {"step": 0, "merge": "start", "count": None, "tied with": "", "vocabulary": len(initial_ids(start)),
                 "symbols in corpus": sum(len(s) * n for s, n in start.items())}
    rows = [start_row | {f"word: {w}": _segment(start, w) for w in shown}]
    for s in steps:
        rows.append({"step": s.number, "merge": _show(s.pair), "count": s.count,
                     "tied with": ", ".join(_show(p) for p in s.ties[:3]) + (" …" if len(s.ties) > 3 else ""),
                     "vocabulary": s.vocab_size, "symbols in corpus": s.symbols} | {f"word: {w}": _segment(s.words, w) for w in shown})
    table = pd.DataFrame(rows)
    table["count"] = table["count"].astype("Int64")
    counts_long = pd.DataFrame([{"step": s.number, "pair": _show(p), "count": n, "chosen": p == s.pair}
                                for s in steps for p, n in s.top])
    ours = [s.pair for s in steps]
    theirs = library_merges(counts, len(ours))
    first_diff = next((i + 1 for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), None)
    if first_diff is None and len(ours) != len(theirs):
        first_diff = min(len(ours), len(theirs)) + 1
    notes = [(f"{len(steps)} merges on {sum(counts.values()):,} words ({len(counts):,} distinct); the corpus goes from "
             f"{start_row['symbols in corpus']:,} symbols to {steps[-1].symbols if steps else start_row['symbols in corpus']:,}."
             f" The end-of-word mark {END} plays the part of the space after each word.")]
    if first_diff is None:
        notes.append(f"`tokenizers`' BpeTrainer, run on the same words, learns the same {len(ours)} merges in the same order.")
    else:
        s = steps[first_diff - 1] if first_diff <= len(steps) else None
        why = (f" Step {first_diff} is a tie at count {s.count} ({_show(s.pair)} or {', '.join(_show(p) for p in s.ties)}):"
               " we take the pair whose symbols come first alphabetically (characters, then end-of-word symbols, "
               "then merges in the order learned); `tokenizers` orders end-of-word symbols in the order it "
               "happens to meet them.") if s is not None and s.ties else ""
        notes.append(f"`tokenizers`' BpeTrainer agrees for the first {first_diff - 1} merges, then picks "
                     f"{_show(theirs[first_diff - 1]) if first_diff <= len(theirs) else 'nothing'}.{why}")
    if corpus == "toy":
        notes.append("The toy corpus is Sennrich, Haddow & Birch (2016)'s: low ×5, lower ×2, newest ×6, widest ×3. "
                     "The lecture notes describe the procedure but print no corpus or pair counts to check.")
    numbers = {"merges": [list(p) for p in ours], "counts": [s.count for s in steps],
               "vocab_sizes": [s.vocab_size for s in steps], "symbols": [s.symbols for s in steps],
               "tokenizers_merges": [list(p) for p in theirs], "first_difference": first_diff}
    return LessonView(numbers=numbers, tables={"Merge by merge": table, "Pair counts before each merge": counts_long},
                      charts=[merge_counts_chart(counts_long), symbols_chart(table)], notes=notes)


LESSON = Lesson(
    name="bpe_by_hand",
    title="BPE by hand",
    short="BPE",
    text=("Byte-pair encoding starts from single characters and learns a vocabulary by repetition: count every "
          "adjacent pair of symbols in the corpus, weighted by how often each word occurs, and fuse the most "
          "frequent pair into one new symbol. Frequent words end up as one token, rare ones as a few pieces."),
    formula=(r"$(a,b)^\ast=\arg\max_{(a,b)}\sum_{w} f(w)\,\#_{(a,b)}(w)$, then $a\,b\to ab$ in every word; "
             r"vocabulary $=|\text{alphabet}|+|\text{end symbols}|+\text{merges}$."),
    see_also=("Tokenizer tab: build a BPE tokenizer on a real corpus and walk a word through its merges; Train: "
              "the tokenizer a GPT preset uses sets its vocabulary size."),
    params=(
        Param("corpus", "Corpus", "choice", "toy", choices=("toy", "your text"),
              help="toy: low ×5, lower ×2, newest ×6, widest ×3; your text: the box below."),
        Param("text", "Your text", "text", "the cat sat on the mat and the cat ate the rat", max_chars=MAX_CHARS),
        Param("merges", "Merges", "int", 10, minimum=1, maximum=MAX_MERGES, step=1),
    ),
    compute=compute,
    presets={
        "The toy corpus, 10 merges": {"corpus": "toy", "merges": 10},
        "The toy corpus to the end": {"corpus": "toy", "merges": 20},
        "A sentence of your own": {"corpus": "your text", "text": "the cat sat on the mat and the cat ate the rat",
                                   "merges": 12},
        "Suffixes (run, runs, running)": {"corpus": "your text", "merges": 10,
                                          "text": "run runs running runner jump jumps jumping jumper walk walks walking"},
    },
    max_charts=2,
    max_tables=2,
)
