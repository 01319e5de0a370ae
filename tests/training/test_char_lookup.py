"""A character tokenizer's corpus goes through a code-point lookup table at each training start;
its ids must be exactly those `tokenizers` gives, and anything it is not sure of goes the slow way."""
from __future__ import annotations

import time

import pytest
import torch

from playground.data.corpora import python_docs_text, tinyshakespeare_text
from playground.tokenization.simple import build_char_tokenizer, build_word_tokenizer
from playground.training.data import encode_chars, encode_text


def _slow(tokenizer, text: str) -> torch.Tensor:
    return torch.tensor(tokenizer.encode(text, add_special_tokens=False).ids, dtype=torch.long)


@pytest.mark.parametrize("corpus", [tinyshakespeare_text, python_docs_text])
def test_lookup_ids_equal_the_tokenizers_ids_on_the_shipped_corpora(corpus):
    text = corpus()[:400_000]
    tokenizer = build_char_tokenizer([text[: len(text) // 2]], [])  # the second half has unseen characters
    fast = encode_chars(tokenizer, text)
    assert fast is not None and fast.dtype == torch.long
    assert torch.equal(fast, _slow(tokenizer, text))
    assert torch.equal(encode_text(tokenizer, text), fast)


def test_unknown_characters_emoji_and_seq2seq_specials_map_as_tokenizers_does():
    tokenizer = build_char_tokenizer(["abc déf\n\t"], None)  # <pad> <bos> <eos> <unk> first
    text = "abcz 😀 déf\r\n\t" * 50
    assert torch.equal(encode_chars(tokenizer, text), _slow(tokenizer, text))


def test_what_the_table_cannot_promise_goes_through_tokenizers():
    tokenizer = build_char_tokenizer(["abc<>eos"], None)
    assert encode_chars(tokenizer, "ab<eos>c") is None  # tokenizers matches the special token
    assert torch.equal(encode_text(tokenizer, "ab<eos>c"), _slow(tokenizer, "ab<eos>c"))
    assert encode_chars(tokenizer, "a\ud800b") is None  # a lone surrogate
    assert encode_chars(build_word_tokenizer(["hello world"], []), "hello") is None


def test_the_lookup_encodes_a_megabyte_in_well_under_a_second():
    text = tinyshakespeare_text()
    tokenizer = build_char_tokenizer([text], [])
    started = time.process_time()  # CPU time: holds on a loaded machine
    encode_chars(tokenizer, text)
    assert time.process_time() - started < 0.5
