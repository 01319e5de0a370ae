"""Toy translation: lengths, determinism, alignments, agreement (checked against the lexicon)."""

import pytest

from playground.data.toy_translation import (ADJECTIVES, CONJUNCTIONS, DETERMINERS, NOUNS,
                                             PREPOSITIONS, VERBS, lexicon_words,
                                             make_toy_translation, translate)
from playground.errors import ConfigError, DataError


@pytest.fixture(scope="module")
def examples():
    return make_toy_translation(300, seed=0)


def _non_monotonic(alignment):
    return any(t1 < t2 and s1 > s2 for t1, s1 in alignment for t2, s2 in alignment)


def test_deterministic_for_a_seed():
    assert make_toy_translation(50, 4) == make_toy_translation(50, 4)
    assert make_toy_translation(50, 4) != make_toy_translation(50, 5)


def test_lengths_within_bounds(examples):
    lengths = [len(e.src.split()) for e in examples]
    assert min(lengths) >= 3 and max(lengths) <= 60
    assert min(lengths) <= 8 and max(lengths) >= 50  # the range is used, not just one end
    short = make_toy_translation(100, 1, min_len=5, max_len=9)
    assert all(5 <= len(e.src.split()) <= 9 for e in short)
    assert {len(e.src.split()) for e in make_toy_translation(20, 2, min_len=3, max_len=3)} == {3}


def test_bad_length_range():
    with pytest.raises(ConfigError, match="min_len"):
        make_toy_translation(5, 0, min_len=2)
    with pytest.raises(ConfigError, match="min_len"):
        make_toy_translation(5, 0, min_len=10, max_len=9)


def test_alignment_covers_every_word(examples):
    for ex in examples:
        src, tgt = ex.src.split(), ex.tgt.split()
        assert {t for t, _ in ex.alignment} == set(range(len(tgt)))
        assert {s for _, s in ex.alignment} == set(range(len(src)))


def test_adjectives_make_alignment_non_monotonic(examples):
    adjectives = {a.en for a in ADJECTIVES}
    with_adj = [e for e in examples if adjectives & set(e.src.split())]
    assert len(with_adj) > 100
    for ex in with_adj:
        assert _non_monotonic(ex.alignment), ex
    without = translate("the cat sees a dog in the garden")
    assert not _non_monotonic(without.alignment)


@pytest.mark.parametrize("src, tgt", [
    ("the white house", "la maison blanche"),
    ("the white houses", "les maisons blanches"),
    ("a white car", "une voiture blanche"),
    ("this old boat", "ce bateau vieux"),
    ("these old boats sleep", "ces bateaux vieux dorment"),
    ("this old woman sleeps", "cette femme vieille dort"),
    ("my green cars", "mes voitures vertes"),
    ("my green book", "mon livre vert"),
    ("a small european economic area", "une zone economique europeenne petite"),
    ("the cats sleep near the big house", "les chats dorment pres de la maison grande"),
    ("our young women watch every red bridge in front of the old school",
     "nos femmes jeunes regardent chaque pont rouge devant la ecole vieille"),
    ("the happy horses run and my friend waits next to the new trains",
     "les chevaux heureux courent et mon ami attend a cote de les trains nouveaux"),
])
def test_hand_checked_agreement(src, tgt):
    assert translate(src).tgt == tgt


def test_hand_checked_alignment():
    ex = translate("the white house")
    assert ex.alignment == [(0, 0), (1, 2), (2, 1)]
    ex = translate("a small european economic area")
    assert ex.alignment == [(0, 0), (1, 4), (2, 3), (3, 2), (4, 1)]
    ex = translate("the cat sleeps near the dog")   # "near" -> "pres de"
    assert ex.tgt == "le chat dort pres de le chien"
    assert (3, 3) in ex.alignment and (4, 3) in ex.alignment
    ex = translate("the cat sleeps in front of the dog")  # many-to-one
    assert ex.tgt == "le chat dort devant le chien"
    assert [s for t, s in ex.alignment if t == 3] == [3, 4, 5]


def test_generated_agreement_checked_against_the_lexicon(examples):
    """Walk each target: every determiner and adjective form fits its noun's gender and number."""
    noun_forms = {}
    for n in NOUNS:
        noun_forms[n.fr_sg] = (n.gender, False)
        noun_forms[n.fr_pl] = (n.gender, True)
    adj_forms: dict[str, set] = {}
    for a in ADJECTIVES:
        for key, form in {("m", False): a.m_sg, ("f", False): a.f_sg,
                          ("m", True): a.m_pl, ("f", True): a.f_pl}.items():
            adj_forms.setdefault(form, set()).add(key)
    det_forms: dict[str, set] = {}
    for d in DETERMINERS:
        for g in "mf":
            for plural in d.numbers:
                form = d.pl if plural else (d.m_sg if g == "m" else d.f_sg)
                det_forms.setdefault(form, set()).add((g, plural))
    checked = 0
    for ex in examples:
        words = ex.tgt.split()
        for i, w in enumerate(words):
            if w in noun_forms and i > 0 and words[i - 1] in det_forms:
                key = noun_forms[w]
                assert key in det_forms[words[i - 1]], (ex.tgt, i)
                j = i + 1
                while j < len(words) and words[j] in adj_forms:
                    assert key in adj_forms[words[j]], (ex.tgt, j)
                    j += 1
                    checked += 1
    assert checked > 200


def test_verbs_agree_with_the_subject(examples):
    fr_verbs = {v.fr_sg: False for v in VERBS} | {v.fr_pl: True for v in VERBS}
    en_verbs = {v.en_sg: False for v in VERBS} | {v.en_pl: True for v in VERBS}
    for ex in examples:
        src = ex.src.split()
        for t, s in ex.alignment:
            if src[s] in en_verbs:
                assert fr_verbs[ex.tgt.split()[t]] == en_verbs[src[s]]


def test_lexicon_is_unambiguous():
    words = ([n.en_sg for n in NOUNS] + [n.en_pl for n in NOUNS] + [a.en for a in ADJECTIVES]
             + [d.en for d in DETERMINERS] + [v.en_sg for v in VERBS] + [v.en_pl for v in VERBS])
    assert len(words) == len(set(words))
    phrase_words = {w for p in list(PREPOSITIONS) + list(CONJUNCTIONS) for w in p}
    assert not phrase_words & set(words)
    assert len(lexicon_words()) >= 120


def test_translate_errors():
    with pytest.raises(DataError, match="unknown word 'meows'"):
        translate("the cat meows")
    with pytest.raises(DataError, match="singular"):
        translate("a cats sleep")
    with pytest.raises(DataError, match="determiner"):
        translate("cats sleep")
    with pytest.raises(DataError, match="noun"):
        translate("the big sleeps")
    with pytest.raises(DataError, match="empty"):
        translate("   ")
