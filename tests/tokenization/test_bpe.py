"""Building BPE and char tokenizers: options, sizes, round trips, errors, chunking, progress."""
from __future__ import annotations

import json
import threading
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from playground.errors import ConfigError, DataError
from playground.settings import DEMO_CAPS
from playground.tokenization.bpe import (
    BYTE_TOKENS, BuildCancelled, TokenizerOptions, base_alphabet_size, build_tokenizer, chunk_text, iter_build,
    make_pre_tokenizer, truncate_bpe, untrained_tokenizer,
)


def _merges(tok) -> list:
    return json.loads(tok.to_str())["model"]["merges"]


@pytest.mark.parametrize("name", ["byte-level", "whitespace-bytes", "metaspace-bytes", "metaspace-unk", "none-bytes"])
def test_vocabulary_size_is_honoured(tokenizers_by_name, name):
    from tests.tokenization.conftest import OPTION_SETS

    assert tokenizers_by_name[name].get_vocab_size() == OPTION_SETS[name].vocab_size


def test_byte_level_round_trip_on_corpus_samples(tokenizers_by_name):
    tok = tokenizers_by_name["byte-level"]
    for text in ["", " ", "  leading and trailing  ", "line\n\n\nbreaks\r\n", "日本語 🙂 naïve", "<pad> is special"]:
        assert tok.decode(tok.encode(text).ids, skip_special_tokens=False) == text


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=200))
def test_byte_level_decode_encode_is_identity_on_any_unicode(tokenizers_by_name, text):
    tok = tokenizers_by_name["byte-level"]
    ids = tok.encode(text, add_special_tokens=False).ids
    assert all(0 <= i < tok.get_vocab_size() for i in ids)
    assert tok.decode(ids, skip_special_tokens=False) == text


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=80))
def test_byte_fallback_never_needs_unk(tokenizers_by_name, text):
    tok = tokenizers_by_name["metaspace-bytes"]
    assert "<unk>" not in tok.encode(text).tokens


def test_byte_fallback_spells_unseen_characters_as_bytes(tokenizers_by_name):
    tok = tokenizers_by_name["metaspace-bytes"]
    vocab = tok.get_vocab()
    # the 256 byte tokens sit right after the three special tokens
    assert [vocab[t] for t in BYTE_TOKENS] == list(range(3, 259))
    assert tok.encode("ꙮ").tokens[-3:] == ["<0xEA>", "<0x99>", "<0xAE>"]
    text = "Hello  there ꙮ world"
    assert tok.decode(tok.encode(text).ids) == text


def test_unknown_token_fallback(tokenizers_by_name):
    tok = tokenizers_by_name["metaspace-unk"]
    assert "<unk>" in tok.get_vocab()
    assert "<unk>" in tok.encode("ꙮ").tokens


def test_whitespace_decoder_puts_spaces_between_words(tokenizers_by_name):
    tok = tokenizers_by_name["whitespace-bytes"]
    assert tok.decode(tok.encode("the  function returns").ids) == "the function returns"
    assert all(t.endswith("</w>") for t in tok.encode("the function").tokens[-1:])


def test_char_kind_uses_simple_builder(tokenizers_by_name, corpus):
    tok = tokenizers_by_name["char"]
    vocab = tok.get_vocab()
    assert set(corpus) <= set(vocab)
    assert {"<|endoftext|>", "<pad>", "<unk>"} <= set(vocab)
    assert tok.get_vocab_size() == len(set(corpus)) + 3
    assert tok.encode("Jürgen").tokens == list("Jürgen")
    assert tok.encode("ꙮ").tokens == ["<unk>"]


def test_special_tokens_come_first_in_order(tokenizers_by_name):
    tok = tokenizers_by_name["metaspace-bytes"]
    assert [tok.token_to_id(t) for t in ("<pad>", "<bos>", "<eos>")] == [0, 1, 2]
    assert tok.encode("<bos>hi<eos>").tokens[0] == "<bos>"


def test_empty_corpus_is_refused():
    for text in ("", "   \n\t "):
        with pytest.raises(DataError, match="empty"):
            build_tokenizer(text, TokenizerOptions(vocab_size=300))


def test_vocabulary_below_byte_alphabet_is_refused(corpus):
    with pytest.raises(DataError, match=r"smaller than the base alphabet: 258 \(256 byte tokens \+ 2 special"):
        build_tokenizer(corpus, TokenizerOptions(vocab_size=200))


def test_vocabulary_below_character_alphabet_is_refused(corpus):
    options = TokenizerOptions(vocab_size=100, pre_tokenizer="metaspace", fallback="unk")
    base = base_alphabet_size(corpus, options)
    assert base > 100
    with pytest.raises(DataError, match=f"Choose at least {base:,}"):
        build_tokenizer(corpus, options)


def test_word_final_forms_that_overflow_are_caught_after_training(corpus):
    # whitespace + </w>: the trainer adds "x</w>" for word-final characters on top of the alphabet
    base = base_alphabet_size(corpus, TokenizerOptions(pre_tokenizer="whitespace", fallback="unk"))
    with pytest.raises(DataError, match="base alphabet of this corpus"):
        build_tokenizer(corpus, TokenizerOptions(vocab_size=base, pre_tokenizer="whitespace", fallback="unk"))


def test_vocabulary_above_demo_cap_is_refused(corpus):
    with pytest.raises(ConfigError, match="demo cap"):
        build_tokenizer(corpus, TokenizerOptions(vocab_size=DEMO_CAPS.max_vocab_size + 1), caps=DEMO_CAPS)


@pytest.mark.parametrize("bad", [dict(pre_tokenizer="sentencepiece"), dict(normalizer="NFD"), dict(kind="wordpiece"),
                                 dict(min_frequency=0), dict(vocab_size=2.5), dict(special_tokens=("<pad>", "<pad>")),
                                 dict(special_tokens=("",))])
def test_bad_options_say_what_to_change(bad):
    with pytest.raises(ConfigError):
        TokenizerOptions(**bad).checked()


def test_options_round_trip_through_dict():
    options = TokenizerOptions(vocab_size=1234, pre_tokenizer="metaspace", special_tokens=("<pad>", "<eos>"))
    assert TokenizerOptions.from_dict(json.loads(json.dumps(options.to_dict()))) == options
    with pytest.raises(ConfigError, match="vocab_sise"):
        TokenizerOptions.from_dict({"vocab_sise": 3})


@pytest.mark.parametrize("pre", ["byte-level", "whitespace", "metaspace"])
def test_chunking_counts_the_same_words_as_the_whole_text(corpus, pre):
    pieces = chunk_text(corpus, pre, target=500)
    assert "".join(pieces) == corpus and len(pieces) > 50
    pt = make_pre_tokenizer(pre)
    whole = Counter(w for w, _ in pt.pre_tokenize_str(corpus))
    chunked = Counter(w for p in pieces for w, _ in pt.pre_tokenize_str(p))
    assert whole == chunked


def test_builder_learns_the_same_merges_as_tokenizers_directly(corpus):
    options = TokenizerOptions(vocab_size=700)
    ours = build_tokenizer(corpus, options)
    direct, trainer = untrained_tokenizer(options)
    direct.train_from_iterator([corpus], trainer)
    assert _merges(ours) == _merges(direct)
    assert ours.get_vocab() == direct.get_vocab()


@pytest.mark.parametrize("small", [258, 300, 450])
def test_truncated_bpe_equals_training_the_smaller_vocabulary(corpus, small):
    big = build_tokenizer(corpus, TokenizerOptions(vocab_size=700))
    direct = build_tokenizer(corpus, TokenizerOptions(vocab_size=small))
    cut = truncate_bpe(big, small)
    assert cut.get_vocab_size() == small
    assert _merges(cut) == _merges(direct)
    sample = corpus[1000:3000]
    assert cut.encode(sample).ids == direct.encode(sample).ids


def test_truncation_keeps_byte_fallback_consistent(corpus):
    big = build_tokenizer(corpus, TokenizerOptions(vocab_size=800, pre_tokenizer="metaspace"))
    size = base_alphabet_size(corpus, TokenizerOptions(pre_tokenizer="metaspace")) + 50
    cut = truncate_bpe(big, size)
    assert cut.get_vocab_size() == size
    text = "Hello ꙮ world"
    assert cut.decode(cut.encode(text).ids) == text


def test_progress_reports_phases_and_returns_the_tokenizer(corpus):
    events = []
    gen = iter_build(corpus * 4, TokenizerOptions(vocab_size=800), poll_s=0.001)
    while True:
        try:
            events.append(next(gen))
        except StopIteration as stop:
            tok = stop.value
            break
    phases = [e.phase for e in events]
    assert phases[0] == "checking" and phases[-1] == "finishing"
    assert tok.get_vocab_size() == 800
    fractions = [e.fraction for e in events if e.phase == "counting"]
    assert fractions == sorted(fractions) and all(0 <= f <= 1 for f in fractions)


def test_cancelled_build_raises_and_returns_nothing(corpus):
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(BuildCancelled):
        build_gen = iter_build(corpus, TokenizerOptions(vocab_size=600), cancel=cancel, poll_s=0.001)
        for _ in build_gen:
            pass


def test_closing_the_progress_generator_stops_the_build(corpus):
    gen = iter_build(corpus * 20, TokenizerOptions(vocab_size=600), poll_s=0.0001)
    assert next(gen).phase == "checking"
    assert next(gen).phase in ("counting", "merging")
    gen.close()  # the consumer went away (e.g. Stop in the app): no exception escapes
    for thread in [t for t in threading.enumerate() if t.name == "bpe-train"]:
        thread.join(60)
        assert not thread.is_alive()
