"""Char and word tokenizers: exact round trips, special ids, unknowns, tokenizer.json round trip."""

import pytest
from tokenizers import Tokenizer

from playground.errors import DataError
from playground.tokenization.simple import (SEQ2SEQ_SPECIALS, build_char_tokenizer,
                                            build_word_tokenizer, special_ids, unknown_chars,
                                            unknown_words)

TEXT = "First Citizen:\nBefore we proceed  any further,\thear me speak.\r\n\nÉté — naïve café 😀 e\u0301 日本語\n"


def test_char_exact_round_trip_with_whitespace_and_unicode():
    tok = build_char_tokenizer([TEXT])
    enc = tok.encode(TEXT)
    assert len(enc.ids) == len(TEXT)                 # one token per character
    assert enc.tokens == list(TEXT)
    assert tok.decode(enc.ids) == TEXT               # spaces, tabs, \r\n, newlines, emoji intact
    for piece in ["  ", "\n\n", " a ", "😀"]:
        if not unknown_chars(tok, piece):
            assert tok.decode(tok.encode(piece).ids) == piece


def test_char_vocabulary_order_and_specials():
    tok = build_char_tokenizer(["banana\n", "cab"])
    vocab = tok.get_vocab()
    assert [vocab[s] for s in SEQ2SEQ_SPECIALS] == [0, 1, 2, 3]
    chars = sorted(set("banana\ncab"))
    assert [vocab[c] for c in chars] == list(range(4, 4 + len(chars)))
    assert tok.get_vocab_size() == 4 + len(chars)
    assert special_ids(tok) == {"pad_id": 0, "bos_id": 1, "eos_id": 2, "unk_id": 3}


def test_char_without_specials_still_has_unk():
    tok = build_char_tokenizer(["abc"], special_tokens=[])
    assert tok.get_vocab() == {"<unk>": 0, "a": 1, "b": 2, "c": 3}
    assert special_ids(tok) == {"unk_id": 0}
    custom = build_char_tokenizer(["ab"], special_tokens=["<|endoftext|>"])
    assert custom.token_to_id("<|endoftext|>") == 0 and custom.token_to_id("<unk>") == 1


def test_unknown_chars_are_detectable_and_map_to_unk():
    tok = build_char_tokenizer(["hello world"])
    assert unknown_chars(tok, "hello world") == []
    assert unknown_chars(tok, "help! é!") == ["p", "!", "é"]
    ids = tok.encode("hep").ids
    assert ids[2] == tok.token_to_id("<unk>") and len(ids) == 3


def test_specials_are_whole_tokens_and_skippable():
    tok = build_char_tokenizer(["ab"])
    bos, eos = tok.token_to_id("<bos>"), tok.token_to_id("<eos>")
    ids = [bos, *tok.encode("ab").ids, eos]
    assert tok.decode(ids) == "ab"
    assert tok.decode(ids, skip_special_tokens=False) == "<bos>ab<eos>"


@pytest.mark.parametrize("build", [build_char_tokenizer, build_word_tokenizer])
def test_json_round_trip(build, tmp_path):
    text = "the cat sat\non the mat  again"
    tok = build([text])
    again = Tokenizer.from_str(tok.to_str())
    assert again.get_vocab() == tok.get_vocab()
    assert again.encode(text).ids == tok.encode(text).ids
    assert again.decode(again.encode(text).ids) == tok.decode(tok.encode(text).ids)
    tok.save(str(tmp_path / "tokenizer.json"))
    loaded = Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    assert loaded.encode(text).ids == tok.encode(text).ids


def test_word_tokenizer():
    tok = build_word_tokenizer(["la maison blanche", "le chat  noir\net la maison"])
    vocab = tok.get_vocab()
    words = sorted({"la", "maison", "blanche", "le", "chat", "noir", "et"})
    assert [vocab[w] for w in words] == list(range(4, 4 + len(words)))
    enc = tok.encode("le chat   blanche\n")
    assert enc.tokens == ["le", "chat", "blanche"]
    assert tok.decode(enc.ids) == "le chat blanche"   # joined with single spaces
    assert tok.encode("le chien").ids[1] == vocab["<unk>"]
    assert unknown_words(tok, "le chien et le loup") == ["chien", "loup"]
    assert special_ids(tok)["pad_id"] == 0


def test_empty_and_bad_input():
    with pytest.raises(DataError, match="empty"):
        build_char_tokenizer([""])
    with pytest.raises(DataError, match="empty"):
        build_word_tokenizer(["   \n"])
    with pytest.raises(DataError, match="distinct"):
        build_char_tokenizer(["ab"], special_tokens=["<pad>", "<pad>"])
