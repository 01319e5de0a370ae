"""BPE builds are bounded up front and run in a child process that stopping terminates."""
from __future__ import annotations

import dataclasses
import multiprocessing
import random
import string
import time

import pytest

from playground.errors import TooBigError
from playground.settings import DEMO_CAPS, FULL_CAPS
from playground.tokenization.bpe import TokenizerOptions, build_tokenizer, check_build_cost, longest_word
from playground.tokenization.build_process import iter_build_in_child, run_build_in_child
from playground.tokenization.stats import encode
from playground.tokenization.walk import walk


def _no_space(n: int) -> str:
    rng = random.Random(0)
    return "".join(rng.choice(string.ascii_lowercase) for _ in range(n))


@pytest.mark.parametrize("pre", ["byte-level", "whitespace", "metaspace", "none"])
def test_a_megabyte_without_spaces_is_refused_quickly(pre) -> None:
    text = _no_space(1_000_000)
    start = time.perf_counter()
    with pytest.raises(TooBigError, match="1,000,00[01] characters after pre-tokenizing"):
        build_tokenizer(text, TokenizerOptions(vocab_size=1000, pre_tokenizer=pre), FULL_CAPS)
    assert time.perf_counter() - start < 10


def test_word_length_cap_refuses_just_over_and_accepts_at_the_cap() -> None:
    limit = DEMO_CAPS.max_pretoken_chars
    options = TokenizerOptions(vocab_size=300, pre_tokenizer="whitespace")
    check_build_cost(("a" * limit + " ") * 3, options, DEMO_CAPS)
    with pytest.raises(TooBigError, match=f"{limit + 1:,} characters"):
        check_build_cost(("a" * (limit + 1) + " ") * 3, options, DEMO_CAPS)
    assert longest_word("ab " * 1000, "byte-level", 10) == 0


def test_corpus_times_vocabulary_is_bounded() -> None:
    caps = dataclasses.replace(DEMO_CAPS, max_bpe_work=1000 * 500)
    check_build_cost("ab " * 333 + "a", TokenizerOptions(vocab_size=500), caps)
    with pytest.raises(TooBigError, match="more work than this server allows"):
        check_build_cost("ab " * 334, TokenizerOptions(vocab_size=500), caps)


def test_build_in_a_child_gives_the_same_tokenizer() -> None:
    text = "the quick brown fox jumps over the lazy dog\n" * 200
    options = TokenizerOptions(vocab_size=300)
    assert run_build_in_child(text, options).to_str() == build_tokenizer(text, options).to_str()


def test_child_errors_come_back_as_user_errors() -> None:
    from playground.errors import DataError

    with pytest.raises(DataError, match="smaller than the base alphabet"):
        run_build_in_child("hello world " * 10, TokenizerOptions(vocab_size=100))


@pytest.mark.slow  # a child process built and terminated (about 3 s)
def test_closing_the_build_terminates_the_child_within_seconds() -> None:
    slow = dataclasses.replace(FULL_CAPS, max_pretoken_chars=10**7)
    gen = iter_build_in_child(_no_space(400_000), TokenizerOptions(vocab_size=4000), slow)
    start = time.perf_counter()
    for _event in gen:
        if time.perf_counter() - start > 3.0:  # the child has started and is working
            break
    assert [p.name for p in multiprocessing.active_children()] == ["playground-job-iter_build_json"]
    stopped = time.perf_counter()
    gen.close()
    assert time.perf_counter() - stopped < 3.0
    assert multiprocessing.active_children() == []


def test_encode_and_walk_refuse_over_long_text_quickly() -> None:
    tok = build_tokenizer("hello world\n" * 50, TokenizerOptions(vocab_size=270))
    start = time.perf_counter()
    with pytest.raises(TooBigError, match="The text to encode has 1,000,000 characters"):
        encode(tok, "x" * 1_000_000)
    with pytest.raises(TooBigError, match="at most 20,000"):
        encode(tok, "x" * 20_001, DEMO_CAPS)
    encode(tok, "x" * 20_000, DEMO_CAPS)
    with pytest.raises(Exception, match="at most 2,000 characters"):
        walk(tok, "x" * 1_000_000)
    assert time.perf_counter() - start < 5
