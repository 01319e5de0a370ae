"""The generated review corpus (labels follow the cues, rationales point at them) and text,label uploads."""
from __future__ import annotations

import urllib.error
import urllib.request

import pytest

from playground.data import reviews as rv
from playground.data.reviews import (
    INTENSIFIERS,
    NEGATIVE,
    NEGATORS,
    POSITIVE,
    cue_words,
    download_sst2,
    held_out_cue_words,
    make_reviews,
    parse_labelled,
    text_tokenizer,
)
from playground.errors import ConfigError, DataError

SINGLE_POS = {w for w in POSITIVE if " " not in w}
SINGLE_NEG = {w for w in NEGATIVE if " " not in w}


def _polarity(words: list[str]) -> int:
    """A cue's polarity read back from its words alone: the sentiment word, flipped by a negator."""
    text = " ".join(w for w in words if w not in INTENSIFIERS and w not in NEGATORS)
    base = 1 if text in POSITIVE else -1 if text in NEGATIVE else 0
    assert base != 0, words
    return -base if words[0] in NEGATORS else base


def test_labels_follow_the_cues_and_rationales_point_at_them() -> None:
    reviews = make_reviews(400, seed=3)
    assert {r.label for r in reviews} == {0, 1}
    negated = intensified = 0
    for r in reviews:
        words = r.words
        polarities = [_polarity(words[c.start:c.end]) for c in r.cues]
        assert [c.polarity for c in r.cues] == polarities
        assert sum(polarities) != 0 and (sum(polarities) > 0) == bool(r.label)  # the majority decides
        sign = 1 if r.label else -1
        expected = sorted(p for c in r.cues if c.polarity == sign for p in range(c.start, c.end)
                          if words[p] not in INTENSIFIERS)
        assert list(r.rationale) == expected and expected  # cue words (and negators) that agree with the label
        assert all(words[p] in SINGLE_POS | SINGLE_NEG | set(NEGATORS) or any(words[p] in ph.split()
                   for ph in POSITIVE + NEGATIVE) for p in r.rationale)
        negated += sum(c.negated for c in r.cues)
        intensified += sum(c.intensified for c in r.cues)
    assert negated > 20 and intensified > 20  # both devices occur


def test_generation_is_seeded_and_positions_vary() -> None:
    a, b = make_reviews(50, seed=1), make_reviews(50, seed=1)
    assert a == b and make_reviews(50, seed=2) != a
    firsts = {r.rationale[0] for r in make_reviews(200, seed=0)}
    assert len(firsts) > 10  # cues are not always in the same place
    assert all(not c.negated for r in make_reviews(100, seed=0, negation=0.0) for c in r.cues)
    with pytest.raises(ConfigError, match="negation"):
        make_reviews(5, negation=1.5)


def test_one_sided_reviews_have_the_asked_cue_count_all_of_the_labels_polarity() -> None:
    reviews = make_reviews(300, seed=5, negation=0.0, cues=[2, 4])
    counts = {len(r.cues) for r in reviews}
    assert counts == {2, 3, 4}
    for r in reviews:
        sign = 1 if r.label else -1
        polarities = [_polarity(r.words[c.start:c.end]) for c in r.cues]  # read back from the words alone
        assert polarities == [sign] * len(r.cues)
        assert not any(c.negated for c in r.cues) and not set(r.words) & set(NEGATORS)
        assert all(w in (POSITIVE if sign > 0 else NEGATIVE) for w in cue_words(r))
    assert {r.label for r in reviews} == {0, 1}
    assert make_reviews(40, seed=5, negation=0.0, cues=[2, 4]) == reviews[:40]  # seeded
    assert any(c.negated for r in make_reviews(200, seed=5, cues=[2, 4]) for c in r.cues)  # negation still applies
    for bad in ([0, 2], [3, 2], [1, 99], [2], [1.5, 2], 3, "ab"):
        with pytest.raises(ConfigError, match=r"data.cues must be \[lo, hi\]"):
            make_reviews(5, cues=bad)


def test_held_out_cue_words_are_half_of_each_polarity_and_cue_words_read_them_back() -> None:
    held = held_out_cue_words()
    assert len(held & set(POSITIVE)) == len(POSITIVE) // 2 and len(held & set(NEGATIVE)) == len(NEGATIVE) // 2
    for r in make_reviews(200, seed=2):
        words = cue_words(r)
        assert len(words) == len(r.cues) and all(w in POSITIVE + NEGATIVE for w in words)
        for w in words:
            assert f" {w} " in f" {r.text} "


def test_tokenizer_tokens_are_the_review_words() -> None:
    reviews = make_reviews(100, seed=0)
    tok = text_tokenizer(r.text for r in reviews)
    assert tok.token_to_id("<pad>") == 0 and tok.token_to_id("<unk>") == 1
    for r in reviews[:20]:
        assert tok.encode(r.text).tokens == r.words  # word i is token i: rationales index tokens
    assert tok.encode("The PLOT was Not good, zzz!").tokens == ["the", "plot", "was", "not", "good", "<unk>",
                                                                "<unk>", "<unk>"]


def test_parse_labelled_csv_and_tsv() -> None:
    rows, names = parse_labelled(b'text,label\n"Great, really great",pos\nawful film,neg\n\nok then,pos\n')
    assert names == ["neg", "pos"]
    assert [(r.text, r.label) for r in rows] == [("great , really great", 1), ("awful film", 0), ("ok then", 1)]
    rows, names = parse_labelled("a fine film\t1\nbad\t0\nworse\t0\n")
    assert names == ["0", "1"] and [r.label for r in rows] == [1, 0, 0] and rows[0].rationale is None


@pytest.mark.parametrize("data, message", [
    (b"", "empty"),
    (b"just text\n", "no comma"),
    (b"a,1\n,0\n", "empty text"),
    (b"a,1\nb,1\n", "at least two"),
    (b"\xff\xfe,1\n", "not UTF-8"),
])
def test_parse_labelled_refuses_with_a_clear_message(data: bytes, message: str) -> None:
    with pytest.raises(DataError, match=message):
        parse_labelled(data)


def test_parse_labelled_caps_rows_and_size() -> None:
    text = "".join(f"t{i},{i % 2}\n" for i in range(20))
    with pytest.raises(DataError, match="more than 10"):
        parse_labelled(text, max_rows=10)
    with pytest.raises(DataError, match="characters"):
        parse_labelled(text, max_chars=50)


def test_sst2_download_offline_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    def offline(*args, **kwargs):
        raise urllib.error.URLError("no network")

    monkeypatch.setattr(urllib.request, "urlopen", offline)
    with pytest.raises(DataError, match="offline.*data.texts = reviews"):
        download_sst2()
    assert rv.SST2_URL.startswith("https://")
