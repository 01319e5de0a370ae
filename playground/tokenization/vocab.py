"""Looking inside a tokenizer: its vocabulary, its merges, and tokens shown readably.

Byte-level BPE stores every byte as one printable character (GPT-2's table: space -> ``Ġ``,
newline -> ``Ċ``, ...). `readable` turns a stored token back into its bytes, decodes them, and
shows whitespace as visible symbols (``␣`` space, ``↵`` newline, ``⇥`` tab) and bytes that are
only part of a character as ``\\xNN``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import pandas as pd
from tokenizers import Tokenizer

from playground.tokenization.bpe import METASPACE

VISIBLE = {" ": "␣", "\n": "↵", "\t": "⇥", "\r": "␍", "\x0b": "␋", "\x0c": "␌"}


@lru_cache(maxsize=1)
def byte_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> printable character table (the one `tokenizers`' ByteLevel uses)."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    chars = printable[:]
    extra = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + extra)
            extra += 1
    return {b: chr(c) for b, c in zip(printable, chars)}


@lru_cache(maxsize=1)
def unicode_to_byte() -> dict[str, int]:
    """Inverse of `byte_to_unicode`."""
    return {c: b for b, c in byte_to_unicode().items()}


def _has(component: Any, type_name: str) -> bool:
    if not isinstance(component, dict):
        return False
    if component.get("type") == type_name:
        return True
    return any(_has(c, type_name) for key in ("pretokenizers", "decoders", "normalizers") for c in component.get(key) or [])


@dataclass(frozen=True)
class TokenizerInfo:
    """What the inspection views need, read once from a tokenizer's JSON."""

    model_type: str
    vocab: dict[str, int]
    merges: list[tuple[str, str]]
    byte_level: bool
    metaspace: bool
    byte_fallback: bool
    fuse_unk: bool
    unk_token: str | None
    end_of_word_suffix: str | None
    continuing_subword_prefix: str | None
    ignore_merges: bool
    added_tokens: list[dict[str, Any]]
    special_ids: frozenset[int] = field(default_factory=frozenset)

    @classmethod
    def from_tokenizer(cls, tokenizer: Tokenizer) -> TokenizerInfo:
        """Parse `tokenizer.to_str()`."""
        data = json.loads(tokenizer.to_str())
        model = data.get("model") or {}
        raw_merges = model.get("merges") or []
        merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ", 1)) for m in raw_merges]
        vocab = model.get("vocab") or {}
        if isinstance(vocab, list):  # Unigram: [[piece, score], ...]
            vocab = {piece: i for i, (piece, _score) in enumerate(vocab)}
        added = data.get("added_tokens") or []
        for a in added:
            vocab.setdefault(a["content"], a["id"])
        return cls(
            model_type=model.get("type", "?"),
            vocab=vocab,
            merges=merges,
            byte_level=_has(data.get("pre_tokenizer"), "ByteLevel") or _has(data.get("decoder"), "ByteLevel"),
            metaspace=_has(data.get("pre_tokenizer"), "Metaspace"),
            byte_fallback=bool(model.get("byte_fallback")),
            fuse_unk=bool(model.get("fuse_unk")),
            unk_token=model.get("unk_token"),
            end_of_word_suffix=model.get("end_of_word_suffix") or None,
            continuing_subword_prefix=model.get("continuing_subword_prefix") or None,
            ignore_merges=bool(model.get("ignore_merges")),
            added_tokens=added,
            special_ids=frozenset(a["id"] for a in added if a.get("special")),
        )

    @property
    def id_to_token(self) -> dict[int, str]:
        """Id -> stored token string."""
        return {i: t for t, i in self.vocab.items()}

    def merge_ranks(self) -> dict[tuple[str, str], int]:
        """(left, right) -> rank (0 = learned first = applied first)."""
        ranks: dict[tuple[str, str], int] = {}
        for rank, pair in enumerate(self.merges):
            ranks.setdefault(pair, rank)
        return ranks

    def merged_token(self, left: str, right: str) -> str:
        """The token a merge produces."""
        prefix = self.continuing_subword_prefix or ""
        if prefix and right.startswith(prefix):
            right = right[len(prefix):]
        return left + right

    def rank_of_token(self) -> dict[str, int]:
        """Token -> rank of the merge that created it (base tokens and specials are absent)."""
        out: dict[str, int] = {}
        for rank, (left, right) in enumerate(self.merges):
            out.setdefault(self.merged_token(left, right), rank)
        return out


def token_bytes(token: str, info: TokenizerInfo) -> bytes:
    """The bytes a stored token stands for (markers like ▁ / </w> / <0xNN> resolved)."""
    if info.byte_level and token not in _special_contents(info):
        table = unicode_to_byte()
        if all(c in table for c in token):
            return bytes(table[c] for c in token)
    if info.byte_fallback and len(token) == 6 and token.startswith("<0x") and token.endswith(">"):
        try:
            return bytes([int(token[3:5], 16)])
        except ValueError:
            pass
    text = token
    if info.end_of_word_suffix and text.endswith(info.end_of_word_suffix) and text != info.end_of_word_suffix:
        text = text[: -len(info.end_of_word_suffix)]
    if info.continuing_subword_prefix and text.startswith(info.continuing_subword_prefix):
        text = text[len(info.continuing_subword_prefix):]
    if info.metaspace:
        text = text.replace(METASPACE, " ")
    return text.encode("utf-8")


def _special_contents(info: TokenizerInfo) -> frozenset[str]:
    return frozenset(a["content"] for a in info.added_tokens)


def visible(text: str) -> str:
    """Whitespace and control characters as visible symbols."""
    out = []
    for ch in text:
        if ch in VISIBLE:
            out.append(VISIBLE[ch])
        elif ord(ch) < 32 or ord(ch) == 127:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return "".join(out)


def readable(token: str, info: TokenizerInfo) -> str:
    """A stored token as a person should see it: text with visible whitespace, partial bytes as \\xNN."""
    if token in _special_contents(info):
        return token
    if info.byte_fallback and len(token) == 6 and token.startswith("<0x") and token.endswith(">"):
        return token
    suffix = ""
    if info.end_of_word_suffix and token.endswith(info.end_of_word_suffix) and token != info.end_of_word_suffix:
        suffix = info.end_of_word_suffix
    if info.byte_level or info.metaspace:
        shown = token_bytes(token, info).decode("utf-8", errors="backslashreplace")
    else:
        shown = token[: len(token) - len(suffix)] if suffix else token
    return visible(shown) + suffix


def vocabulary_table(tokenizer: Tokenizer, counts: list[int] | None = None, query: str = "",
                     info: TokenizerInfo | None = None, limit: int | None = None) -> pd.DataFrame:
    """One row per token: id, token (readable), stored form, bytes, merge rank, count in the corpus.

    `query` keeps rows whose readable or stored token contains it; `counts[id]` are occurrences
    in the training text (None where unknown).
    """
    info = info or TokenizerInfo.from_tokenizer(tokenizer)
    ranks = info.rank_of_token()
    specials = _special_contents(info)
    rows = []
    for token, idx in sorted(info.vocab.items(), key=lambda kv: kv[1]):
        shown = readable(token, info)
        if query and query not in shown and query not in token:
            continue
        kind = "special" if token in specials else ("merge" if token in ranks else "base")
        rows.append({
            "id": idx,
            "token": shown,
            "stored": token,
            "bytes": len(token.encode("utf-8")) if token in specials else len(token_bytes(token, info)),
            "merge_rank": ranks.get(token),
            "kind": kind,
            "count": counts[idx] if counts is not None and idx < len(counts) else None,
        })
        if limit is not None and len(rows) >= limit:
            break
    df = pd.DataFrame(rows, columns=["id", "token", "stored", "bytes", "merge_rank", "kind", "count"])
    df["merge_rank"] = df["merge_rank"].astype("Int64")
    df["count"] = df["count"].astype("Int64")
    return df


def merges_table(tokenizer: Tokenizer, query: str = "", info: TokenizerInfo | None = None,
                 limit: int | None = None) -> pd.DataFrame:
    """The merges in learned order: rank, left + right -> merged (readable), the merged id."""
    info = info or TokenizerInfo.from_tokenizer(tokenizer)
    rows = []
    for rank, (left, right) in enumerate(info.merges):
        merged = info.merged_token(left, right)
        row: dict[str, Any] = {"rank": rank, "left": readable(left, info), "right": readable(right, info),
               "merged": readable(merged, info), "id": info.vocab.get(merged)}
        if query and not any(query in row[k] for k in ("left", "right", "merged")) and query not in merged:
            continue
        rows.append(row)
        if limit is not None and len(rows) >= limit:
            break
    df = pd.DataFrame(rows, columns=["rank", "left", "right", "merged", "id"])
    df["id"] = df["id"].astype("Int64")
    return df


def token_length_table(vocab: pd.DataFrame) -> pd.DataFrame:
    """Token length (bytes) distribution: share of the vocabulary and of the corpus' tokens."""
    body = vocab[vocab["kind"] != "special"]
    by_len = body.groupby("bytes").agg(tokens=("id", "size"), occurrences=("count", lambda c: c.fillna(0).sum()))
    by_len = by_len.reset_index().rename(columns={"bytes": "length_bytes"})
    by_len["vocabulary_share"] = by_len["tokens"] / max(1, by_len["tokens"].sum())
    total_occ = by_len["occurrences"].sum()
    by_len["corpus_share"] = by_len["occurrences"] / total_occ if total_occ else float("nan")
    by_len["occurrences"] = by_len["occurrences"].astype("int64")
    return by_len
