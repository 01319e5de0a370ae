"""Text in and out of a bundle's `tokenizers.Tokenizer`: checked encoding and streaming decoding."""
from __future__ import annotations

import json

from tokenizers import Tokenizer

from playground.errors import DataError
from playground.tokenization.simple import unknown_chars

UNK_TOKENS = ("<unk>", "[UNK]", "<|unk|>", "<UNK>")
REPLACEMENT = "\ufffd"


def _unk_id(tokenizer: Tokenizer) -> int | None:
    for tok in UNK_TOKENS:
        idx = tokenizer.token_to_id(tok)
        if idx is not None:
            return idx
    return None


def _is_char_level(tokenizer: Tokenizer) -> bool:
    """A WordLevel vocabulary whose ordinary entries are single characters."""
    try:
        model = json.loads(tokenizer.to_str()).get("model", {})
    except Exception:  # noqa: BLE001 - an exotic tokenizer: treat as not char-level
        return False
    if model.get("type") != "WordLevel":
        return False
    vocab = model.get("vocab", {})
    singles = sum(1 for t in vocab if len(t) == 1)
    return singles >= max(1, len(vocab) - 16)


def unknown_units(tokenizer: Tokenizer, text: str) -> list[str]:
    """Distinct characters (char-level vocabularies) or pieces of `text` the tokenizer maps to
    its unknown token or cannot encode at all, in first-seen order."""
    if _is_char_level(tokenizer):
        return unknown_chars(tokenizer, text)
    unk = _unk_id(tokenizer)
    try:
        enc = tokenizer.encode(text, add_special_tokens=False)
    except Exception:  # noqa: BLE001 - WordLevel without <unk> raises on unknown input
        vocab = tokenizer.get_vocab()
        return [c for c in dict.fromkeys(text) if c not in vocab]
    if unk is None:
        return []
    found = [text[a:b] for i, (a, b) in zip(enc.ids, enc.offsets) if i == unk]
    return list(dict.fromkeys(found))


def encode_text(tokenizer: Tokenizer | None, text: str, vocab_size: int | None = None, what: str = "prompt") -> list[int]:
    """Token ids of `text`; DataError naming the characters (or pieces) outside the vocabulary."""
    if tokenizer is None:
        raise DataError(f"This checkpoint has no tokenizer.json, so it cannot read a text {what}.")
    unknown = unknown_units(tokenizer, text)
    if unknown:
        shown = ", ".join(repr(u) for u in unknown[:20]) + (" ..." if len(unknown) > 20 else "")
        raise DataError(
            f"The {what} has {len(unknown)} character(s) or piece(s) outside this model's vocabulary: {shown}. "
            "Remove or replace them (a character-level model only knows the characters of its training text)."
        )
    ids = tokenizer.encode(text, add_special_tokens=False).ids
    if vocab_size is not None and any(i >= vocab_size for i in ids):
        raise DataError(
            f"The tokenizer gives ids up to {max(ids)} but the model has only {vocab_size} tokens; "
            "this checkpoint's tokenizer and model do not match (retrain it)."
        )
    return ids


def token_text(tokenizer: Tokenizer, token_id: int) -> str:
    """How one token reads on its own (specials kept, e.g. '<eos>')."""
    return tokenizer.decode([token_id], skip_special_tokens=False)


class Detokenizer:
    """Streaming decoder: `push(id)` returns the text that token adds (vLLM / HF streamer style).

    Decoding a few tokens of context before the new one keeps the spaces word-level and
    SentencePiece decoders insert; a piece that ends in an incomplete UTF-8 character (byte-level
    BPE) returns "" and is emitted with the token that completes it.
    """

    __slots__ = ("tokenizer", "ids", "prefix", "read", "skip_special")

    def __init__(self, tokenizer: Tokenizer, context_ids: list[int] | None = None, skip_special: bool = False) -> None:
        self.tokenizer = tokenizer
        self.ids: list[int] = list(context_ids or [])[-6:]
        self.read = len(self.ids)
        self.prefix = max(0, self.read - 5)
        self.skip_special = skip_special

    def push(self, token_id: int) -> str:
        self.ids.append(token_id)
        decode = self.tokenizer.decode
        before = decode(self.ids[self.prefix : self.read], skip_special_tokens=self.skip_special)
        after = decode(self.ids[self.prefix :], skip_special_tokens=self.skip_special)
        if len(after) > len(before) and not after.endswith(REPLACEMENT) and after.startswith(before):
            piece = after[len(before) :]
            self.prefix, self.read = self.read, len(self.ids)
            if self.prefix > 32:  # keep the window short
                drop = self.prefix
                self.ids = self.ids[drop:]
                self.prefix = 0
                self.read -= drop
            return piece
        if len(self.ids) - self.read > 8:  # give up waiting for a completion: emit what there is
            piece = after[len(before) :] if after.startswith(before) else after
            self.prefix, self.read = self.read, len(self.ids)
            return piece
        return ""
