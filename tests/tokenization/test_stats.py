"""Compression, held-out split, token spans, comparisons, vocabulary sweeps."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from playground.errors import DataError
from playground.tokenization.bpe import TokenizerOptions
from playground.tokenization.stats import (
    MIN_CHARS_TO_HOLD_OUT, compare, compression, encode, ids_table, spans, split_held_out, token_counts, tokens_html,
    vocab_sweep,
)
from playground.tokenization.vocab import TokenizerInfo


def test_held_out_is_the_tail_cut_at_a_line_start(corpus):
    train, held = split_held_out(corpus, 0.1)
    assert train + held == corpus
    assert 0.05 * len(corpus) < len(held) <= 0.1 * len(corpus)
    assert train.endswith("\n")
    assert split_held_out("short text", 0.1) == ("short text", "")
    assert len("x" * MIN_CHARS_TO_HOLD_OUT) >= MIN_CHARS_TO_HOLD_OUT


@pytest.mark.parametrize("name", ["byte-level", "metaspace-bytes", "whitespace-bytes", "none-bytes", "char"])
def test_compression_and_counts_match_encoding_the_whole_text(tokenizers_by_name, corpus, name):
    tok = tokenizers_by_name[name]
    text = corpus[:20_000]
    n = len(tok.encode(text, add_special_tokens=False).ids)
    comp = compression(tok, text)
    assert comp.tokens == n
    assert comp.chars_per_token == pytest.approx(len(text) / n)
    assert comp.tokens_per_word == pytest.approx(n / len(text.split()))
    counts = token_counts(tok, text)
    assert len(counts) == tok.get_vocab_size() and sum(counts) == n


def test_bigger_vocabulary_compresses_more(tokenizers_by_name, corpus):
    assert compression(tokenizers_by_name["byte-level"], corpus).chars_per_token > 2 * compression(
        tokenizers_by_name["char"], corpus).chars_per_token


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=80))
def test_spans_cover_the_text_exactly(tokenizers_by_name, text):
    for name in ("byte-level", "metaspace-bytes", "whitespace-unk"):
        enc = encode(tokenizers_by_name[name], text)
        pieces = spans(enc)
        assert "".join(p for p, _ in pieces) == text
        covered = sorted(i for _, idx in pieces for i in idx)
        assert covered == list(range(enc.n_tokens))


def test_tokens_html_escapes_and_marks_whitespace(tokenizers_by_name):
    tok = tokenizers_by_name["byte-level"]
    info = TokenizerInfo.from_tokenizer(tok)
    html = tokens_html(encode(tok, "<script>alert(1)</script>\nnext"), info)
    assert "<script>" not in html and "&lt;" in html
    assert "↵<br>" in html
    table = ids_table(encode(tok, "a b"), info)
    assert list(table.columns) == ["position", "id", "token", "text"] and list(table["text"]) == ["a", "␣b"]


def test_compare_identical_tokenizers_has_no_differences(tokenizers_by_name, corpus):
    tok = tokenizers_by_name["byte-level"]
    result = compare(tok, tok, corpus[:3000], ("x", "x"))
    assert result.differences.empty
    assert result.summary["tokens"].nunique() == 1


def test_compare_finds_words_split_differently(tokenizers_by_name, corpus):
    a, b = tokenizers_by_name["byte-level"], tokenizers_by_name["char"]
    text = corpus[:3000]
    result = compare(a, b, text, ("bpe", "char"))
    assert list(result.summary["tokenizer"]) == ["bpe", "char"]
    assert result.summary.loc[1, "tokens"] == len(text)  # one token per character
    row = result.differences.iloc[0]
    assert row["char pieces"] == len(row["word"]) and row["bpe pieces"] < row["char pieces"]
    assert row["occurrences"] >= result.differences["occurrences"].iloc[-1]
    with pytest.raises(DataError):
        compare(a, b, "   ")


def test_vocab_sweep_trains_once_and_measures_every_size(corpus):
    table = vocab_sweep(corpus, TokenizerOptions(), largest=1024, sizes=(256, 512, 1024))
    assert list(table["vocab_size"]) == [258, 512, 1024]
    assert table["chars_per_token"].iloc[-1] > table["chars_per_token"].iloc[0]
    assert table["bytes_per_token"].iloc[0] == pytest.approx(1.0)  # no merges: one token per byte
    assert list(table["merges"]) == [0, 512 - 258, 1024 - 258]
    with pytest.raises(DataError, match="BPE"):
        vocab_sweep(corpus, TokenizerOptions(kind="char"))
