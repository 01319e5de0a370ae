"""The BERT families' tokenizers: [PAD] [UNK] [CLS] [SEP] [MASK] first, then characters or words.

- ``char``: one token per character of the corpus (:func:`build_char_tokenizer` with these specials);
- ``words``: lower-cased words and punctuation marks, like the text classifier's, most frequent first;
- any other name: a workspace tokenizer, which must hold the five specials (build a BPE with
  them in the Tokenizer tab's special-token box).

A typed "[MASK]" encodes as the mask token (special tokens match the raw text).
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers

from playground.data.reviews import WORD_PATTERN, normalize_text
from playground.errors import DataError
from playground.tokenization.simple import build_char_tokenizer

PAD, UNK, CLS, SEP, MASK = "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"
BERT_SPECIALS = [PAD, UNK, CLS, SEP, MASK]
BUILT_IN = ("char", "words")


def bert_word_tokenizer(texts: Iterable[str], max_vocab: int = 20_000, min_count: int = 1) -> Tokenizer:
    """Word-level: the five specials, then the ``max_vocab`` most frequent lower-cased words and
    punctuation marks seen at least ``min_count`` times (in alphabetical order)."""
    counts = Counter(w for t in texts for w in normalize_text(t).split())
    kept = sorted((w for w, c in counts.items() if c >= min_count), key=lambda w: (-counts[w], w))[:max_vocab]
    if not kept:
        raise DataError("No words to build a tokenizer from: the text is empty.")
    vocab = {s: i for i, s in enumerate(BERT_SPECIALS)}
    vocab.update({w: i + len(BERT_SPECIALS) for i, w in enumerate(sorted(set(kept) - set(BERT_SPECIALS)))})
    tok = Tokenizer(models.WordLevel(vocab, unk_token=UNK))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(),
                                                 pre_tokenizers.Split(Regex(WORD_PATTERN), behavior="isolated")])
    tok.add_special_tokens(BERT_SPECIALS)
    return tok


def build_tokenizer(kind: str, texts: list[str], max_vocab: int = 20_000) -> Tokenizer:
    """A ``char`` or ``words`` tokenizer over ``texts`` with the BERT specials."""
    if kind == "char":
        return build_char_tokenizer(texts, list(BERT_SPECIALS))
    return bert_word_tokenizer(texts, max_vocab)


def special_ids(tokenizer: Tokenizer) -> dict[str, int]:
    """pad_id, cls_id, sep_id and mask_id of ``tokenizer``; DataError saying how to get them otherwise."""
    ids = {name: tokenizer.token_to_id(tok) for name, tok in
           (("pad_id", PAD), ("cls_id", CLS), ("sep_id", SEP), ("mask_id", MASK))}
    missing = [tok for tok, i in zip((PAD, CLS, SEP, MASK), ids.values()) if i is None]
    if missing:
        raise DataError(f"The tokenizer lacks {', '.join(missing)}: a BERT model needs {' '.join(BERT_SPECIALS)}. "
                        "Use data.tokenizer = char or words, or build a tokenizer with these special tokens.")
    return ids  # type: ignore[return-value]


def non_special_ids(tokenizer: Tokenizer) -> list[int]:
    """Every id that is not a special token (what a random replacement is drawn from)."""
    specials = {tokenizer.token_to_id(s) for s in BERT_SPECIALS}
    added = {i for i, t in tokenizer.get_added_tokens_decoder().items() if t.special}
    return [i for i in range(tokenizer.get_vocab_size()) if i not in specials | added]
