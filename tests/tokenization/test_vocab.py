"""Vocabulary and merge tables, readable tokens."""
from __future__ import annotations

from tokenizers import pre_tokenizers

from playground.tokenization.stats import token_counts
from playground.tokenization.vocab import (
    TokenizerInfo, byte_to_unicode, merges_table, readable, token_bytes, token_length_table, visible, vocabulary_table,
)


def test_byte_table_is_the_one_tokenizers_uses():
    table = byte_to_unicode()
    assert sorted(table.values()) == sorted(pre_tokenizers.ByteLevel.alphabet())
    pt = pre_tokenizers.ByteLevel(add_prefix_space=False)
    assert [w for w, _ in pt.pre_tokenize_str(" a\n")] == [table[32] + "a", table[10]]
    assert (table[32], table[10]) == ("Ġ", "Ċ")


def test_readable_tokens(tokenizers_by_name):
    info = TokenizerInfo.from_tokenizer(tokenizers_by_name["byte-level"])
    assert readable("Ġhello", info) == "␣hello"
    assert readable("ĊĊ", info) == "↵↵"
    assert readable("ĉ", info) == "⇥"
    assert readable("æĹ", info) == "\\xe6\\x97"  # two of the three bytes of 日
    assert readable("<|endoftext|>", info) == "<|endoftext|>"
    assert token_bytes("æĹ¥", info).decode("utf-8") == "日"
    meta = TokenizerInfo.from_tokenizer(tokenizers_by_name["metaspace-bytes"])
    assert readable("▁the", meta) == "␣the"
    assert readable("<0xE6>", meta) == "<0xE6>" and token_bytes("<0xE6>", meta) == b"\xe6"
    ws = TokenizerInfo.from_tokenizer(tokenizers_by_name["whitespace-bytes"])
    assert readable("the</w>", ws) == "the</w>" and token_bytes("the</w>", ws) == b"the"
    assert visible("a\tb\x07") == "a⇥b\\x07"


def test_vocabulary_table(tokenizers_by_name, corpus):
    tok = tokenizers_by_name["byte-level"]
    counts = token_counts(tok, corpus)
    table = vocabulary_table(tok, counts)
    assert list(table.columns) == ["id", "token", "stored", "bytes", "merge_rank", "kind", "count"]
    assert len(table) == tok.get_vocab_size() and list(table["id"]) == list(range(len(table)))
    assert list(table["kind"][:2]) == ["special", "special"]
    base = table[table["kind"] == "base"]
    assert len(base) == 256 and base["merge_rank"].isna().all() and (base["bytes"] == 1).all()
    merged = table[table["kind"] == "merge"]
    assert merged["merge_rank"].notna().all() and (merged["bytes"] >= 2).all()
    # merged tokens appear in the order of their ranks
    assert list(merged["merge_rank"]) == sorted(merged["merge_rank"])
    assert table["count"].sum() == len(tok.encode(corpus).ids)
    found = vocabulary_table(tok, counts, query="␣th")
    assert len(found) > 0 and all("␣th" in t for t in found["token"])


def test_merges_table_in_learned_order_and_filterable(tokenizers_by_name):
    tok = tokenizers_by_name["byte-level"]
    table = merges_table(tok)
    assert list(table["rank"]) == list(range(len(table)))
    assert len(table) == tok.get_vocab_size() - 258
    first = table.iloc[0]
    assert first["merged"] == first["left"] + first["right"]
    assert tok.token_to_id(table.iloc[0]["merged"].replace("␣", "Ġ")) == first["id"]
    some = merges_table(tok, query="ion")
    assert len(some) > 0 and all("ion" in (r.left + r.right + r.merged) for r in some.itertuples())
    assert len(merges_table(tokenizers_by_name["char"])) == 0


def test_token_length_table_shares(tokenizers_by_name, corpus):
    tok = tokenizers_by_name["byte-level"]
    lengths = token_length_table(vocabulary_table(tok, token_counts(tok, corpus)))
    assert abs(lengths["vocabulary_share"].sum() - 1) < 1e-9
    assert abs(lengths["corpus_share"].sum() - 1) < 1e-9
    assert lengths.loc[lengths["length_bytes"] == 1, "tokens"].item() == 256
