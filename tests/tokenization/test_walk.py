"""The merge walk replays BPE encoding exactly: it ends in the tokens `encode` returns."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from playground.errors import DataError
from playground.tokenization.vocab import TokenizerInfo
from playground.tokenization.walk import MAX_WALK_CHARS, merge_word, walk, walk_table
from tests.tokenization.conftest import MIXED_LINES, OPTION_SETS

SPECIALS = ["<|endoftext|>", "<pad>", "<bos>", "<eos>", "<unk>"]
WORDS = ["the", " statement", "tokenization", "Jürgen", "日本語", "🙂", "  ", "\n\n", "\t", "x²", "<pad", "|>"]
texts = st.one_of(
    st.text(max_size=60),
    st.lists(st.sampled_from(WORDS + SPECIALS), max_size=12).map("".join),
    st.lists(st.one_of(st.sampled_from(SPECIALS), st.text(max_size=8)), max_size=6).map("".join),
)


def _check(tok, info, text):
    result = walk(tok, text, info)
    assert result.tokens == tok.encode(text, add_special_tokens=False).tokens


@pytest.mark.parametrize("name", list(OPTION_SETS))
def test_walk_ends_in_encode_tokens_on_corpus_lines(tokenizers_by_name, corpus, name):
    tok = tokenizers_by_name[name]
    info = TokenizerInfo.from_tokenizer(tok)
    lines = [line for line in corpus.splitlines(keepends=True)[:300] if line] + MIXED_LINES
    for line in lines:
        _check(tok, info, line)


@pytest.mark.parametrize("name", list(OPTION_SETS))
def test_walk_ends_in_encode_tokens_on_any_text(tokenizers_by_name, name):
    tok = tokenizers_by_name[name]
    info = TokenizerInfo.from_tokenizer(tok)

    @settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(text=texts)
    def check(text):
        if text:
            _check(tok, info, text)

    check()


def test_ranks_never_decrease_within_a_word(tokenizers_by_name, corpus):
    # a merge creates a token; any merge using it was learned later, so ranks only go up
    tok = tokenizers_by_name["byte-level"]
    info = TokenizerInfo.from_tokenizer(tok)
    result = walk(tok, corpus[:1500], info)
    assert result.n_merges > 100
    for word in result.words:
        ranks = [s.rank for s in word.steps]
        assert ranks == sorted(ranks)


def test_walk_starts_from_bytes_and_merges_lowest_rank_first():
    info = TokenizerInfo(
        model_type="BPE", vocab={c: i for i, c in enumerate(["a", "b", "c", "ab", "bc", "abc"])},
        merges=[("b", "c"), ("a", "b"), ("a", "bc")], byte_level=False, metaspace=False, byte_fallback=False,
        fuse_unk=False, unk_token=None, end_of_word_suffix=None, continuing_subword_prefix=None,
        ignore_merges=False, added_tokens=[],
    )
    steps = merge_word(list("abc"), info, info.merge_ranks())
    # (b, c) has rank 0 and fires first even though (a, b) is leftmost; then (a, bc)
    assert [(s.left, s.right, s.rank) for s in steps] == [("b", "c", 0), ("a", "bc", 2)]
    assert steps[-1].symbols == ("abc",)


def test_walk_shows_byte_level_words_readably(tokenizers_by_name):
    tok = tokenizers_by_name["byte-level"]
    result = walk(tok, " statement\n")
    table = walk_table(result, tok)
    assert table.iloc[0]["merge"] == "start"
    assert table.iloc[0]["symbols"].startswith("␣ | s | t")
    assert "↵" in " ".join(table["symbols"])
    assert list(table["step"][table["word"] == 0]) == list(range(len(result.words[0].steps) + 1))


def test_char_tokenizer_walk_has_no_merges(tokenizers_by_name):
    tok = tokenizers_by_name["char"]
    result = walk(tok, "hello")
    assert result.n_merges == 0 and result.tokens == list("hello")


def test_walk_refuses_empty_and_long_text(tokenizers_by_name):
    tok = tokenizers_by_name["byte-level"]
    with pytest.raises(DataError, match="Type a word"):
        walk(tok, "")
    with pytest.raises(DataError, match="at most"):
        walk(tok, "x" * (MAX_WALK_CHARS + 1))
