"""Building tokenizers over Hugging Face `tokenizers`: BPE with chosen options, or char-level.

The pipeline a BPE tokenizer is built from (each step a `tokenizers` component):

    text -> normalizer -> pre-tokenizer (split into "words") -> BPE model (merges) -> tokens
    tokens -> decoder -> text

Pre-tokenizers offered:

- ``byte-level``: GPT-2's. Text is turned into bytes, each byte shown as one printable character
  (space -> ``Ġ``, newline -> ``Ċ``), split with GPT-2's regex. Every string encodes, and
  ``decode(encode(x)) == x`` for any Unicode text (with no normalizer).
- ``whitespace``: words and runs of punctuation (``\\w+|[^\\w\\s]+``); spaces are dropped, word ends are
  marked with ``</w>`` as in the original BPE paper, so decoding puts spaces back between
  words (but not their exact amount).
- ``metaspace``: SentencePiece's. Spaces become ``▁`` and start a new word.
- ``none``: each line is one "word" and merges may cross spaces.

For the non-byte-level ones a character never seen in training is either spelled with
SentencePiece's byte-fallback tokens ``<0x00>``..``<0xFF>`` (256 extra ids) or becomes ``<unk>``.

Training is one call into `tokenizers` (Rust, multi-threaded, GIL released). It has progress bars
for terminals only, so `iter_build` reports what it can honestly know: how much of the corpus has
been handed to the pair counter, then "learning merges" with the elapsed time.
"""
from __future__ import annotations

import dataclasses
import json
import re
import threading
import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from typing import Any

from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

from playground import limits
from playground.errors import ConfigError, DataError, PlaygroundError, TooBigError
from playground.settings import DemoCaps
from playground.tokenization.simple import build_char_tokenizer

KINDS = ("bpe", "char")
NORMALIZERS = ("none", "nfc", "nfkc", "lowercase")
PRE_TOKENIZERS = ("byte-level", "whitespace", "metaspace", "none")
FALLBACKS = ("bytes", "unk")
DEFAULT_SPECIALS: tuple[str, ...] = ("<|endoftext|>", "<pad>")
SPECIAL_CHOICES: tuple[str, ...] = ("<|endoftext|>", "<pad>", "<bos>", "<eos>", "<unk>")
UNK = "<unk>"
END_OF_WORD = "</w>"
METASPACE = "\u2581"  # ▁
BYTE_TOKENS: tuple[str, ...] = tuple(f"<0x{b:02X}>" for b in range(256))
MAX_VOCAB_SIZE = 65_536  # without a demo cap; beyond this a laptop CPU is no longer "seconds"

# Chunk boundaries at which each pre-tokenizer splits anyway, so training on the chunks counts
# exactly the same words as training on the whole text (tested), while `tokenizers` can count
# the chunks in parallel and we can report how far it has read.
_CHUNK_BOUNDARY = {
    "byte-level": re.compile(r"(?<=\S)(?=\s*\n)"),  # before the whitespace run that holds a line end
    "whitespace": re.compile(r"(?<=\S)(?=\s)"),
    "metaspace": re.compile(r"(?<=\S)(?= )"),
    "none": re.compile(r"(?<=\n)"),  # no pre-tokenizer: each line is one word
}
CHUNK_CHARS = 8192
_BATCH = 64  # chunks per item handed to train_from_iterator


@dataclass(frozen=True)
class TokenizerOptions:
    """Everything that decides how a tokenizer is built (saved in meta.json as `options`)."""

    kind: str = "bpe"
    vocab_size: int = 8192
    min_frequency: int = 2
    normalizer: str = "none"
    pre_tokenizer: str = "byte-level"
    special_tokens: tuple[str, ...] = DEFAULT_SPECIALS
    fallback: str = "bytes"

    @property
    def byte_level(self) -> bool:
        """Whether this is a byte-level BPE (no fallback needed: every byte is in the vocabulary)."""
        return self.kind == "bpe" and self.pre_tokenizer == "byte-level"

    @property
    def byte_fallback(self) -> bool:
        """Whether unseen characters are spelled as <0xNN> byte tokens."""
        return self.kind == "bpe" and not self.byte_level and self.fallback == "bytes"

    @property
    def specials(self) -> tuple[str, ...]:
        """Special tokens in id order, with <unk> added when unknown characters map to it."""
        specials = tuple(self.special_tokens)
        needs_unk = self.kind == "char" or (self.kind == "bpe" and not self.byte_level and self.fallback == "unk")
        return specials + (UNK,) if needs_unk and UNK not in specials else specials

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able form."""
        d = dataclasses.asdict(self)
        d["special_tokens"] = list(self.special_tokens)
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TokenizerOptions:
        """Inverse of `to_dict`; unknown keys are an error naming the valid ones."""
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - fields)
        if unknown:
            raise ConfigError(f"Unknown tokenizer option(s) {unknown}; valid: {sorted(fields)}.")
        data = dict(data)
        if "special_tokens" in data:
            data["special_tokens"] = tuple(data["special_tokens"] or ())
        return cls(**data)

    def checked(self, caps: DemoCaps | None = None) -> TokenizerOptions:
        """These options with values normalised, or ConfigError saying what to change."""
        for field, value, allowed in (("kind", self.kind, KINDS), ("normalizer", self.normalizer, NORMALIZERS),
                                      ("pre_tokenizer", self.pre_tokenizer, PRE_TOKENIZERS),
                                      ("fallback", self.fallback, FALLBACKS)):
            if value not in allowed:
                raise ConfigError(f"Unknown {field.replace('_', '-')} {value!r}; choose one of {', '.join(allowed)}.")
        try:
            vocab_size, min_frequency = int(self.vocab_size), int(self.min_frequency)
        except (TypeError, ValueError):
            raise ConfigError("Vocabulary size and minimum frequency must be whole numbers.") from None
        if vocab_size != self.vocab_size or min_frequency != self.min_frequency:
            raise ConfigError("Vocabulary size and minimum frequency must be whole numbers.")
        cap = caps.max_vocab_size if caps and caps.max_vocab_size else MAX_VOCAB_SIZE
        if self.kind == "bpe":
            if vocab_size < 1:
                raise ConfigError(f"Vocabulary size must be positive, got {vocab_size}.")
            if vocab_size > cap:
                where = "this server's demo cap" if caps and caps.max_vocab_size else "the largest we build"
                raise ConfigError(f"Vocabulary size {vocab_size:,} is above {where} ({cap:,}); choose {cap:,} or less.")
        if min_frequency < 1:
            raise ConfigError(f"Minimum frequency must be at least 1, got {min_frequency}.")
        specials = tuple(s.strip() if isinstance(s, str) else s for s in self.special_tokens)
        if any(not isinstance(s, str) or not s for s in specials):
            raise ConfigError("Special tokens must be non-empty strings.")
        if len(set(specials)) != len(specials):
            raise ConfigError(f"Special tokens must be distinct, got {list(specials)}.")
        return dataclasses.replace(self, vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=specials)

    def describe(self) -> str:
        """One line for people: 'BPE 8,192 · byte-level · NFC · min freq 2'."""
        if self.kind == "char":
            return "character-level"
        parts = [f"BPE {self.vocab_size:,}", self.pre_tokenizer]
        if self.normalizer != "none":
            parts.append(self.normalizer.upper() if self.normalizer.startswith("nf") else self.normalizer)
        if not self.byte_level:
            parts.append("byte fallback" if self.byte_fallback else "<unk> for unseen")
        parts.append(f"min freq {self.min_frequency}")
        return " · ".join(parts)


@dataclass(frozen=True)
class BuildProgress:
    """One progress report while a tokenizer is built.

    `phase` is one of "checking", "counting" (the corpus is being handed to the pair counter;
    `fraction` says how much), "merging" (learning merges; the library gives no progress, so
    `fraction` is None), "finishing", "measuring" and "done".
    """

    phase: str
    message: str
    fraction: float | None = None
    elapsed: float = 0.0


class BuildCancelled(PlaygroundError):
    """The build was stopped before it finished."""


# -- pipeline pieces ---------------------------------------------------------------------------

def make_normalizer(name: str):
    """The `tokenizers` normalizer for a NORMALIZERS name (None for "none")."""
    return {"none": None, "nfc": normalizers.NFC(), "nfkc": normalizers.NFKC(),
            "lowercase": normalizers.Lowercase()}[name]


def make_pre_tokenizer(name: str):
    """The `tokenizers` pre-tokenizer for a PRE_TOKENIZERS name (None for "none")."""
    if name == "byte-level":
        return pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    if name == "whitespace":
        return pre_tokenizers.Whitespace()
    if name == "metaspace":
        return pre_tokenizers.Metaspace(replacement=METASPACE, prepend_scheme="always")
    return None


def make_decoder(pre_tokenizer: str, byte_fallback: bool):
    """The decoder that undoes the pre-tokenizer's markers (and byte fallback)."""
    if pre_tokenizer == "byte-level":
        return decoders.ByteLevel()
    main = {"whitespace": decoders.BPEDecoder(suffix=END_OF_WORD),
            "metaspace": decoders.Metaspace(replacement=METASPACE, prepend_scheme="always"),
            "none": decoders.Fuse()}[pre_tokenizer]
    return decoders.Sequence([decoders.ByteFallback(), main]) if byte_fallback else main


def untrained_tokenizer(options: TokenizerOptions) -> tuple[Tokenizer, trainers.BpeTrainer]:
    """An empty BPE tokenizer with normalizer, pre-tokenizer and decoder set, and its trainer."""
    whitespace = options.pre_tokenizer == "whitespace"
    unk = UNK if (not options.byte_level and options.fallback == "unk") else None
    model_kwargs: dict[str, Any] = {"unk_token": unk}
    trainer_kwargs: dict[str, Any] = {}
    if whitespace:
        model_kwargs["end_of_word_suffix"] = END_OF_WORD
        trainer_kwargs["end_of_word_suffix"] = END_OF_WORD
    tokenizer = Tokenizer(models.BPE(**model_kwargs))
    normalizer = make_normalizer(options.normalizer)
    if normalizer is not None:
        tokenizer.normalizer = normalizer
    pre = make_pre_tokenizer(options.pre_tokenizer)
    if pre is not None:
        tokenizer.pre_tokenizer = pre
    tokenizer.decoder = make_decoder(options.pre_tokenizer, options.byte_fallback)
    # byte fallback's 256 ids are added after training, so the trainer gets 256 fewer
    target = options.vocab_size - (256 if options.byte_fallback else 0)
    trainer = trainers.BpeTrainer(
        vocab_size=target,
        min_frequency=options.min_frequency,
        show_progress=False,
        special_tokens=list(options.specials),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet() if options.byte_level else [],
        **trainer_kwargs,
    )
    return tokenizer, trainer


def chunk_text(text: str, pre_tokenizer: str, target: int = CHUNK_CHARS) -> list[str]:
    """`text` cut into pieces of about `target` characters at boundaries the pre-tokenizer splits at anyway."""
    if pre_tokenizer == "none":
        target = 1  # each line is its own word
    boundary = _CHUNK_BOUNDARY[pre_tokenizer]
    pieces, pos, n = [], 0, len(text)
    while pos < n:
        m = boundary.search(text, pos + target) if pos + target < n else None
        end = m.start() if m else n
        pieces.append(text[pos:end])
        pos = end
    return pieces


def base_alphabet_size(text: str, options: TokenizerOptions) -> int:
    """How many ids a BPE vocabulary needs before its first merge: specials + bytes or characters.

    For ``whitespace`` the trainer also adds ``x</w>`` for each word-final character, which is
    only known after training; `build` checks the final size as well.
    """
    specials = len(options.specials)
    if options.byte_level:
        return 256 + specials
    normalizer = make_normalizer(options.normalizer)
    normalized = normalizer.normalize_str(text) if normalizer is not None else text
    chars = set(normalized)
    if options.pre_tokenizer == "whitespace":
        chars = {c for c in chars if not c.isspace()}
    elif options.pre_tokenizer == "metaspace" and " " in chars:
        chars.discard(" ")
        chars.add(METASPACE)
    return specials + len(chars - set(options.specials)) + (256 if options.byte_fallback else 0)


def _alphabet_words(options: TokenizerOptions) -> str:
    if options.byte_level:
        return f"256 byte tokens + {len(options.specials)} special tokens"
    extra = " + 256 byte-fallback tokens" if options.byte_fallback else ""
    return f"the distinct characters of the corpus + {len(options.specials)} special tokens{extra}"


def check_corpus(text: str) -> None:
    """DataError unless there is some non-whitespace text to learn from."""
    if text is None or not str(text).strip():
        raise DataError("The corpus is empty: give some text to build the tokenizer from.")


def longest_word(text: str, pre_tokenizer: str, longer_than: int) -> int:
    """The length of the longest "word" the pre-tokenizer leaves in `text`, if any is longer than
    `longer_than` characters (else 0). Linear time: only runs longer than the bound are split."""
    if pre_tokenizer == "none":  # each line is one word
        pattern = rf"(?<![^\n])[^\n]{{{longer_than + 1},}}"
    elif pre_tokenizer == "byte-level":  # runs of spaces are words too
        pattern = rf"(?<!\S)\S{{{longer_than + 1},}}|(?<!\s)\s{{{longer_than + 1},}}"
    else:
        pattern = rf"(?<!\S)\S{{{longer_than + 1},}}"
    pre = make_pre_tokenizer(pre_tokenizer)
    longest = 0
    for match in re.finditer(pattern, text):
        run = match.group()
        pieces = [w for w, _ in pre.pre_tokenize_str(run)] if pre is not None else [run]
        longest = max(longest, max((len(w) for w in pieces), default=0))
    return longest if longest > longer_than else 0


def check_build_cost(text: str, options: TokenizerOptions, caps: DemoCaps | None = None) -> None:
    """TooBigError unless building on `text` is bounded: corpus size, corpus x vocabulary, and the
    longest pre-tokenized word (BPE training time grows with the square of a word's length)."""
    n = len(text)
    max_chars = int(limits.cap(caps, "max_corpus_chars"))
    if n > max_chars:
        raise TooBigError(f"The corpus has {n:,} characters; this server builds tokenizers on at most "
                          f"{max_chars:,}. Use a smaller corpus (or a part of it).")
    if options.kind != "bpe":
        return
    work, max_work = n * options.vocab_size, limits.cap(caps, "max_bpe_work")
    if work > max_work:
        raise TooBigError(f"{n:,} characters x vocabulary {options.vocab_size:,} is more work than this server "
                          f"allows ({max_work:,.0f}); use at most {int(max_work // options.vocab_size):,} "
                          f"characters or a vocabulary of at most {max(1, int(max_work // max(n, 1))):,}.")
    max_word = int(limits.cap(caps, "max_pretoken_chars"))
    word = longest_word(text, options.pre_tokenizer, max_word)
    if word:
        unit = "line" if options.pre_tokenizer == "none" else "word (text without whitespace)"
        raise TooBigError(
            f"The corpus has a {unit} of {word:,} characters after pre-tokenizing ({options.pre_tokenizer}); "
            f"this server allows {max_word:,}, because BPE training time grows with the square of a word's "
            "length. Add spaces or line breaks, pick a pre-tokenizer that splits this text "
            "(byte-level or whitespace), or build a character-level tokenizer.")


# -- building ----------------------------------------------------------------------------------

def iter_build(text: str, options: TokenizerOptions, caps: DemoCaps | None = None,
               cancel: threading.Event | None = None, poll_s: float = 0.25) -> Generator[BuildProgress, None, Tokenizer]:
    """Build a tokenizer on `text`, yielding progress; the generator's return value is the tokenizer.

    Closing the generator (or setting `cancel`) stops the build while the corpus is being read;
    once `tokenizers` is learning merges it cannot be interrupted and runs to the end in its
    thread, and the result is dropped.
    """
    options = options.checked(caps)
    check_corpus(text)
    check_build_cost(text, options, caps)
    start = time.perf_counter()
    yield BuildProgress("checking", f"Checking {len(text):,} characters of text", 0.0, 0.0)
    if options.kind == "char":
        return _build_char(text, options, caps)

    base = base_alphabet_size(text, options)
    if options.vocab_size < base:
        raise DataError(
            f"Vocabulary size {options.vocab_size:,} is smaller than the base alphabet: {base:,} "
            f"({_alphabet_words(options)}). Choose at least {base:,}."
        )
    tokenizer, trainer = untrained_tokenizer(options)
    chunks = chunk_text(text, options.pre_tokenizer)
    cancel = cancel or threading.Event()
    read = [0]
    outcome: dict[str, BaseException | bool] = {}

    def feed() -> Iterator[list[str]]:
        for i in range(0, len(chunks), _BATCH):
            if cancel.is_set():
                raise BuildCancelled("The build was stopped.")
            batch = chunks[i : i + _BATCH]
            yield batch
            read[0] += sum(len(c) for c in batch)

    def work() -> None:
        try:
            tokenizer.train_from_iterator(feed(), trainer, length=(len(chunks) + _BATCH - 1) // _BATCH)
            outcome["ok"] = True
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            outcome["error"] = exc

    worker = threading.Thread(target=work, name="bpe-train", daemon=True)
    worker.start()
    total = max(1, len(text))
    try:
        while True:
            worker.join(poll_s)
            if not worker.is_alive():
                break
            elapsed = time.perf_counter() - start
            if read[0] < total:
                yield BuildProgress("counting", f"Counting words and pairs: {read[0]:,} of {total:,} characters read",
                                    read[0] / total, elapsed)
            else:
                yield BuildProgress("merging", f"Learning merges up to {options.vocab_size:,} tokens "
                                    f"({elapsed:.1f} s so far; tokenizers reports no finer progress)", None, elapsed)
    finally:
        if worker.is_alive():  # the consumer went away: stop reading
            cancel.set()
    error = outcome.get("error")
    if isinstance(error, BaseException):
        if cancel.is_set() or isinstance(error, BuildCancelled):
            raise BuildCancelled("The build was stopped before it finished; nothing was kept.")
        raise error
    yield BuildProgress("finishing", "Finishing the vocabulary", None, time.perf_counter() - start)
    if options.byte_fallback:
        tokenizer = add_byte_fallback(tokenizer, len(options.specials))
    size = tokenizer.get_vocab_size()
    if size > options.vocab_size:
        raise DataError(
            f"Vocabulary size {options.vocab_size:,} is smaller than the base alphabet of this corpus: the tokenizer "
            f"needs {size:,} ids before any merge ({_alphabet_words(options)}"
            f"{', plus an end-of-word form of word-final characters' if options.pre_tokenizer == 'whitespace' else ''}). "
            f"Choose at least {size:,}."
        )
    return tokenizer


def build_tokenizer(text: str, options: TokenizerOptions, caps: DemoCaps | None = None,
                    on_progress: Callable[[BuildProgress], None] | None = None) -> Tokenizer:
    """Build a tokenizer on `text` (blocking); progress goes to `on_progress` if given."""
    gen = iter_build(text, options, caps)
    while True:
        try:
            event = next(gen)
        except StopIteration as stop:
            return stop.value
        if on_progress is not None:
            on_progress(event)


def _build_char(text: str, options: TokenizerOptions, caps: DemoCaps | None) -> Tokenizer:
    tokenizer = build_char_tokenizer([text], list(options.special_tokens))
    size = tokenizer.get_vocab_size()
    cap = caps.max_vocab_size if caps and caps.max_vocab_size else MAX_VOCAB_SIZE
    if size > cap:
        raise DataError(f"This corpus has {size:,} distinct characters, above the vocabulary cap of {cap:,}; "
                        "use a BPE tokenizer with byte fallback instead.")
    return tokenizer


def add_byte_fallback(tokenizer: Tokenizer, n_specials: int) -> Tokenizer:
    """The same BPE with <0x00>..<0xFF> placed right after the special tokens and byte_fallback on."""
    data = json.loads(tokenizer.to_str())
    model = data["model"]
    order = sorted(model["vocab"].items(), key=lambda kv: kv[1])
    vocab: dict[str, int] = {}
    for token, _ in order[:n_specials]:
        vocab[token] = len(vocab)
    for token in BYTE_TOKENS:
        vocab.setdefault(token, len(vocab))
    for token, _ in order[n_specials:]:
        vocab.setdefault(token, len(vocab))
    model["vocab"] = vocab
    model["byte_fallback"] = True
    for added in data.get("added_tokens", []):
        added["id"] = vocab[added["content"]]
    return Tokenizer.from_str(json.dumps(data, ensure_ascii=False))


def truncate_bpe(tokenizer: Tokenizer, vocab_size: int) -> Tokenizer:
    """The BPE tokenizer that training with `vocab_size` would have produced.

    BPE learns greedily, one merge at a time, so a smaller vocabulary is exactly a prefix of a
    larger one's merges (tested against training directly). Ids are kept as they are.
    """
    data = json.loads(tokenizer.to_str())
    model = data["model"]
    if model.get("type") != "BPE":
        raise ConfigError("Only BPE tokenizers can be cut to a smaller vocabulary.")
    vocab: dict[str, int] = model["vocab"]
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ", 1)) for m in model["merges"]]
    kept_merges = []
    for left, right in merges:
        merged = _merged(left, right, model)
        if vocab.get(merged, vocab_size) >= vocab_size:
            break
        kept_merges.append([left, right])
    model["vocab"] = {t: i for t, i in vocab.items() if i < vocab_size}
    model["merges"] = kept_merges
    data["added_tokens"] = [a for a in data.get("added_tokens", []) if a["id"] < vocab_size]
    return Tokenizer.from_str(json.dumps(data, ensure_ascii=False))


def _merged(left: str, right: str, model: dict[str, Any]) -> str:
    """The token a merge of (left, right) produces (a continuing-subword prefix on `right` drops)."""
    prefix = model.get("continuing_subword_prefix") or ""
    if prefix and right.startswith(prefix):
        right = right[len(prefix):]
    return left + right
