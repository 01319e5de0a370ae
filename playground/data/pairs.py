"""Source/target pair sets for seq2seq models: synthetic tasks, dates, toy translation, TSV uploads.

Every example may carry a gold alignment: (target token index, source token index) pairs in the
units of the set's tokenizer (``pair_set_unit``: "char" = character index, "word" = index in
``text.split()``), counted without special tokens. A target index may occur several times (one
target token aligned to several source tokens) or not at all (unaligned).
"""

from __future__ import annotations

import inspect
import os
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tokenizers import Tokenizer

from playground.data.dates import make_dates
from playground.data.synthetic import make_copy, make_reverse, make_sort
from playground.data.toy_translation import make_toy_translation
from playground.data.types import PairExample
from playground.errors import ConfigError, DataError, NotFoundError
from playground.tokenization.simple import build_char_tokenizer, build_word_tokenizer

__all__ = ["PairExample", "PairSetSpec", "PAIR_SETS", "load_pair_set", "pair_set_unit", "load_tsv",
           "pair_tokenizer", "make_dates", "make_toy_translation", "make_copy", "make_reverse",
           "make_sort"]




def _decode_utf8(raw: bytes, what: str) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise DataError(f"{what} is not UTF-8: byte {raw[exc.start]:#04x} at byte offset {exc.start} "
                        f"(line {line}); save the file as UTF-8 and upload it again") from None


def load_tsv(path_or_text: str | os.PathLike | bytes, max_bytes: int = 50_000_000) -> list[PairExample]:
    """Read ``source<TAB>target`` lines into pairs (alignment None).

    ``path_or_text``: a str containing a tab or a newline is the text itself; any other str or a
    PathLike is a file path; bytes are the file content. Blank lines are skipped; columns after
    the second are ignored (e.g. the attribution column of Tatoeba / manythings.org files).
    """
    if isinstance(path_or_text, bytes):
        text, what = _decode_utf8(path_or_text, "the pair file"), "the pair file"
    elif isinstance(path_or_text, str) and ("\t" in path_or_text or "\n" in path_or_text):
        text, what = path_or_text, "the pair text"
    else:
        path = Path(path_or_text)
        name = path.name
        if not path.is_file():
            raise NotFoundError(f"no pair file named {name!r}; upload a UTF-8 text file with one "
                                f"source<TAB>target pair per line")
        size = path.stat().st_size
        if size > max_bytes:
            raise DataError(f"pair file {name!r} is {size:,} bytes; the limit is {max_bytes:,}: "
                            f"keep fewer lines")
        what = f"pair file {name!r}"
        text = _decode_utf8(path.read_bytes(), what)
    if len(text) > max_bytes:
        raise DataError(f"{what} is over {max_bytes:,} characters; keep fewer lines")
    pairs: list[PairExample] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        if "\t" not in line:
            raise DataError(f"line {number} of {what} has no tab: each line must be "
                            f"source<TAB>target (got {line[:40]!r})")
        src, tgt = line.split("\t")[:2]
        src, tgt = src.strip(), tgt.strip()
        if not src or not tgt:
            side = "source" if not src else "target"
            raise DataError(f"line {number} of {what} has an empty {side}; fill it in or delete the line")
        pairs.append(PairExample(src=src, tgt=tgt))
    if not pairs:
        raise DataError(f"{what} is empty: add lines of the form source<TAB>target")
    return pairs


def _load_tsv_set(n: int | None, seed: int, path: str | os.PathLike | bytes | None = None) -> list[PairExample]:
    if path is None:
        raise ConfigError("pair set 'tsv' needs path=<file with source<TAB>target lines>")
    pairs = load_tsv(path)
    if n is not None and n < len(pairs):
        keep = sorted(random.Random(seed).sample(range(len(pairs)), n))
        pairs = [pairs[i] for i in keep]
    return pairs


@dataclass(frozen=True)
class PairSetSpec:
    """A named pair set: its tokenizer unit, a one-line description and its maker."""

    name: str
    unit: str  # "char" | "word"
    description: str
    make: Callable[..., list[PairExample]]


PAIR_SETS: dict[str, PairSetSpec] = {
    s.name: s for s in (
        PairSetSpec("dates", "char", "human-written dates in many formats -> ISO 8601 (1999-03-03)",
                    make_dates),
        PairSetSpec("toy_translation", "word", "toy English -> French-like sentences, adjectives "
                    "reordered, gender/number agreement (3-60 words)", make_toy_translation),
        PairSetSpec("copy", "char", "copy a string of letters", make_copy),
        PairSetSpec("reverse", "char", "reverse a string of letters", make_reverse),
        PairSetSpec("sort", "char", "sort the letters of a string", make_sort),
        PairSetSpec("tsv", "word", "your own source<TAB>target file (opts: path=...)", _load_tsv_set),
    )
}


def _spec(name: str) -> PairSetSpec:
    if name not in PAIR_SETS:
        raise ConfigError(f"unknown pair set {name!r}; choose one of: {', '.join(PAIR_SETS)}")
    return PAIR_SETS[name]


def pair_set_unit(name: str) -> str:
    """'char' or 'word': the tokenizer granularity the pair set's alignments are written in."""
    return _spec(name).unit


def load_pair_set(name: str, n: int | None, seed: int, **opts) -> list[PairExample]:
    """Build or load the pair set ``name`` with ``n`` examples (None: all, for 'tsv'), seeded."""
    spec = _spec(name)
    params = inspect.signature(spec.make).parameters
    valid = [p for p in params if p not in ("n", "seed")]
    unknown = sorted(set(opts) - set(valid))
    if unknown:
        raise ConfigError(f"pair set {name!r} has no option {', '.join(map(repr, unknown))}; "
                          f"valid options: {', '.join(valid) or 'none'}")
    if n is None:
        if name != "tsv":
            raise ConfigError(f"pair set {name!r} is generated: give the number of examples n")
    elif n < 1:
        raise ConfigError(f"n must be >= 1, got {n}")
    return spec.make(n, seed, **opts)


def pair_tokenizer(examples: Sequence[PairExample], unit: str,
                   special_tokens: list[str] | None = None) -> Tokenizer:
    """A char or word tokenizer over sources and targets (one shared vocabulary)."""
    texts = [t for ex in examples for t in (ex.src, ex.tgt)]
    if unit == "char":
        return build_char_tokenizer(texts, special_tokens)
    if unit == "word":
        return build_word_tokenizer(texts, special_tokens)
    raise ConfigError(f"unknown tokenizer unit {unit!r}; choose 'char' or 'word'")
