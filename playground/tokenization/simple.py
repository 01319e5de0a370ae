"""Character- and word-level tokenizers built with HF ``tokenizers`` (saved as tokenizer.json).

Both use a WordLevel model over a fixed vocabulary: special tokens first (in the given order,
so ``<pad>`` is id 0 with the seq2seq defaults), then the sorted set of characters / words.

- char: one token per Unicode code point (spaces, tabs and newlines included); the ``Fuse``
  decoder concatenates the pieces, so ``decode(encode(s).ids) == s`` exactly for in-vocabulary
  text.
- word: whitespace-split words; decode joins them with single spaces.

``<unk>`` is always in the vocabulary (appended after the given specials when missing), so an
unseen character or word encodes as ``<unk>`` instead of failing; detect them beforehand with
:func:`unknown_chars` / :func:`unknown_words`. A special token's literal text inside the input
(e.g. "<eos>") is encoded as that special token, as HF tokenizers always do.
"""

from __future__ import annotations

from collections.abc import Iterable

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers

from playground.errors import DataError

__all__ = [
    "SEQ2SEQ_SPECIALS",
    "UNK",
    "build_char_tokenizer",
    "build_word_tokenizer",
    "special_ids",
    "unknown_chars",
    "unknown_words",
]

SEQ2SEQ_SPECIALS: list[str] = ["<pad>", "<bos>", "<eos>", "<unk>"]
UNK = "<unk>"
CHAR_PATTERN = r"[\s\S]"  # the char tokenizer's pre-tokenizer: every code point is a piece
_ID_KEYS = {"<pad>": "pad_id", "<bos>": "bos_id", "<eos>": "eos_id", "<unk>": "unk_id"}


def _specials(special_tokens: list[str] | None) -> list[str]:
    specials = list(SEQ2SEQ_SPECIALS if special_tokens is None else special_tokens)
    if len(set(specials)) != len(specials):
        raise DataError(f"special tokens must be distinct, got {specials}")
    if any(not s for s in specials):
        raise DataError("a special token cannot be the empty string")
    if UNK not in specials:
        specials.append(UNK)
    return specials


def _build(symbols: Iterable[str], specials: list[str]) -> Tokenizer:
    vocab = {s: i for i, s in enumerate(specials)}
    for sym in sorted(set(symbols) - set(specials)):
        vocab[sym] = len(vocab)
    tok = Tokenizer(models.WordLevel(vocab, unk_token=UNK))
    tok.add_special_tokens(specials)  # already in the vocabulary: ids unchanged
    return tok


def build_char_tokenizer(texts: Iterable[str], special_tokens: list[str] | None = None) -> Tokenizer:
    """One token per character of ``texts``; ids: specials, then sorted characters.

    ``special_tokens`` None -> SEQ2SEQ_SPECIALS (<pad>=0, <bos>, <eos>, <unk>); [] -> only <unk>.
    """
    specials = _specials(special_tokens)
    chars: set[str] = set()
    for text in texts:
        chars.update(text)
    if not chars:
        raise DataError("no characters to build a tokenizer from: the text is empty")
    tok = _build(chars, specials)
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(CHAR_PATTERN), behavior="isolated")
    tok.decoder = decoders.Fuse()
    return tok


def build_word_tokenizer(texts: Iterable[str], special_tokens: list[str] | None = None) -> Tokenizer:
    """One token per whitespace-separated word; decode joins words with single spaces."""
    specials = _specials(special_tokens)
    words: set[str] = set()
    for text in texts:
        words.update(text.split())
    if not words:
        raise DataError("no words to build a tokenizer from: the text is empty")
    tok = _build(words, specials)
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return tok


def unknown_chars(tokenizer: Tokenizer, text: str) -> list[str]:
    """Distinct characters of ``text`` that are not in the vocabulary, in first-seen order."""
    vocab = tokenizer.get_vocab()
    return [c for c in dict.fromkeys(text) if c not in vocab]


def unknown_words(tokenizer: Tokenizer, text: str) -> list[str]:
    """Distinct whitespace-split words of ``text`` not in the vocabulary, in first-seen order."""
    vocab = tokenizer.get_vocab()
    return [w for w in dict.fromkeys(text.split()) if w not in vocab]


def special_ids(tokenizer: Tokenizer) -> dict[str, int]:
    """{"pad_id", "bos_id", "eos_id", "unk_id"} for those of <pad>/<bos>/<eos>/<unk> in the vocabulary."""
    out: dict[str, int] = {}
    for token, key in _ID_KEYS.items():
        idx = tokenizer.token_to_id(token)
        if idx is not None:
            out[key] = idx
    return out
