"""A toy English -> French-like translation task with known word alignments.

The grammar is small and regular so a model can learn it in minutes, yet the alignment is not
monotonic: adjectives follow the noun on the target side, in mirrored order ("the small european
economic area" -> "la zone economique europeenne petite", like "European Economic Area" ->
"zone economique europeenne"), and determiners, adjectives and verbs inflect for gender and
number. Some phrases translate one-to-many ("near" -> "pres de") or many-to-one ("in front of"
-> "devant"). Everything is lower case ASCII (no accents, no elision or contraction: "le arbre",
"pres de le jardin" are correct in this language) and tokenized by whitespace.

Grammar (English side):
    sentence := clause (conjunction clause)*
    clause   := np verb_intransitive [pp] | np verb_transitive np [pp]
    np       := determiner adjective{0..3} noun [pp]        (no pp inside a pp's np)
    pp       := preposition np

The English is generated first; :func:`translate` then produces the French and the gold
alignment, so the data set and the reference translator can never disagree.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from playground.data.types import PairExample
from playground.errors import ConfigError, DataError

__all__ = ["make_toy_translation", "translate", "lexicon_words", "NOUNS", "ADJECTIVES",
           "DETERMINERS", "VERBS", "PREPOSITIONS", "CONJUNCTIONS"]


@dataclass(frozen=True)
class Noun:
    en_sg: str
    en_pl: str
    fr_sg: str
    fr_pl: str
    gender: str  # "m" | "f"


@dataclass(frozen=True)
class Adjective:
    en: str
    m_sg: str
    f_sg: str
    m_pl: str
    f_pl: str

    def form(self, gender: str, plural: bool) -> str:
        return {("m", False): self.m_sg, ("f", False): self.f_sg,
                ("m", True): self.m_pl, ("f", True): self.f_pl}[(gender, plural)]


@dataclass(frozen=True)
class Determiner:
    en: str
    numbers: tuple[bool, ...]  # which numbers it can take: False = singular, True = plural
    m_sg: str
    f_sg: str
    pl: str

    def form(self, gender: str, plural: bool) -> str:
        if plural:
            return self.pl
        return self.m_sg if gender == "m" else self.f_sg


@dataclass(frozen=True)
class Verb:
    en_sg: str  # third person singular: "sees"
    en_pl: str  # plural: "see"
    fr_sg: str
    fr_pl: str
    transitive: bool


def _n(spec: str) -> Noun:
    return Noun(*spec.split())


NOUNS: tuple[Noun, ...] = tuple(_n(s) for s in """
cat cats chat chats m
dog dogs chien chiens m
house houses maison maisons f
car cars voiture voitures f
book books livre livres m
table tables table tables f
city cities ville villes f
tree trees arbre arbres m
bird birds oiseau oiseaux m
flower flowers fleur fleurs f
garden gardens jardin jardins m
river rivers riviere rivieres f
child children enfant enfants m
woman women femme femmes f
man men homme hommes m
apple apples pomme pommes f
window windows fenetre fenetres f
boat boats bateau bateaux m
letter letters lettre lettres f
friend friends ami amis m
song songs chanson chansons f
train trains train trains m
road roads route routes f
area areas zone zones f
market markets marche marches m
council councils conseil conseils m
school schools ecole ecoles f
horse horses cheval chevaux m
teacher teachers professeur professeurs m
bridge bridges pont ponts m
""".strip().splitlines())

ADJECTIVES: tuple[Adjective, ...] = tuple(Adjective(*s.split()) for s in """
big grand grande grands grandes
small petit petite petits petites
red rouge rouge rouges rouges
green vert verte verts vertes
black noir noire noirs noires
white blanc blanche blancs blanches
old vieux vieille vieux vieilles
new nouveau nouvelle nouveaux nouvelles
happy heureux heureuse heureux heureuses
blue bleu bleue bleus bleues
european europeen europeenne europeens europeennes
economic economique economique economiques economiques
quiet calme calme calmes calmes
long long longue longs longues
young jeune jeune jeunes jeunes
strong fort forte forts fortes
cold froid froide froids froides
warm chaud chaude chauds chaudes
dark sombre sombre sombres sombres
famous celebre celebre celebres celebres
""".strip().splitlines())

_SG, _PL, _BOTH = (False,), (True,), (False, True)
DETERMINERS: tuple[Determiner, ...] = (
    Determiner("the", _BOTH, "le", "la", "les"),
    Determiner("a", _SG, "un", "une", "-"),
    Determiner("some", _PL, "-", "-", "des"),
    Determiner("this", _SG, "ce", "cette", "-"),
    Determiner("these", _PL, "-", "-", "ces"),
    Determiner("my", _BOTH, "mon", "ma", "mes"),
    Determiner("our", _BOTH, "notre", "notre", "nos"),
    Determiner("every", _SG, "chaque", "chaque", "-"),
)

def _v(spec: str) -> Verb:
    en_sg, en_pl, fr_sg, fr_pl, kind = spec.split()[:5]
    return Verb(en_sg, en_pl, fr_sg, fr_pl, transitive=kind == "t")


VERBS: tuple[Verb, ...] = tuple(_v(s) for s in """
sees see voit voient t
likes like aime aiment t
finds find trouve trouvent t
follows follow suit suivent t
watches watch regarde regardent t
has have a ont t
takes take prend prennent t
visits visit visite visitent t
builds build construit construisent t
paints paint peint peignent t
sleeps sleep dort dorment i
runs run court courent i
sings sing chante chantent i
waits wait attend attendent i
dances dance danse dansent i
""".strip().splitlines())

# Multi-word phrases: English words -> French words; every French word of a phrase is aligned
# to every English word of it.
PREPOSITIONS: dict[tuple[str, ...], tuple[str, ...]] = {
    ("in",): ("dans",),
    ("near",): ("pres", "de"),
    ("with",): ("avec",),
    ("under",): ("sous",),
    ("on",): ("sur",),
    ("behind",): ("derriere",),
    ("for",): ("pour",),
    ("in", "front", "of"): ("devant",),
    ("next", "to"): ("a", "cote", "de"),
}
CONJUNCTIONS: dict[tuple[str, ...], tuple[str, ...]] = {
    ("and",): ("et",),
    ("but",): ("mais",),
    ("because",): ("parce", "que"),
    ("while",): ("pendant", "que"),
    ("when",): ("quand",),
}

_NOUN_BY_WORD: dict[str, tuple[Noun, bool]] = {}
for _noun in NOUNS:
    _NOUN_BY_WORD[_noun.en_sg] = (_noun, False)
    _NOUN_BY_WORD[_noun.en_pl] = (_noun, True)
_ADJ_BY_WORD = {a.en: a for a in ADJECTIVES}
_DET_BY_WORD = {d.en: d for d in DETERMINERS}
_VERB_BY_WORD: dict[str, tuple[Verb, bool]] = {}
for _verb in VERBS:
    _VERB_BY_WORD[_verb.en_sg] = (_verb, False)
    _VERB_BY_WORD[_verb.en_pl] = (_verb, True)
_PHRASES = {**PREPOSITIONS, **CONJUNCTIONS}
_MAX_PHRASE = max(len(k) for k in _PHRASES)


def lexicon_words() -> list[str]:
    """Every English word the translator knows, sorted."""
    words = set(_NOUN_BY_WORD) | set(_ADJ_BY_WORD) | set(_DET_BY_WORD) | set(_VERB_BY_WORD)
    for phrase in _PHRASES:
        words.update(phrase)
    return sorted(words)


def translate(english: str) -> PairExample:
    """Translate a sentence of the toy language; return the pair with its gold alignment.

    Works chunk by chunk (noun phrases, verbs, prepositions, conjunctions), so it also accepts
    word sequences the generator would not produce. Raises DataError on an unknown word or a
    noun phrase that is not ``determiner adjective* noun`` with a determiner that fits the
    noun's number.
    """

    words = english.lower().split()
    if not words:
        raise DataError("nothing to translate: the sentence is empty")
    fr: list[str] = []
    alignment: list[tuple[int, int]] = []

    def emit(word: str, sources: list[int]) -> None:
        alignment.extend((len(fr), s) for s in sources)
        fr.append(word)

    i = 0
    while i < len(words):
        word = words[i]
        phrase = next((words[i:i + k] for k in range(_MAX_PHRASE, 0, -1)
                       if tuple(words[i:i + k]) in _PHRASES), None)
        if phrase is not None:
            sources = list(range(i, i + len(phrase)))
            for fr_word in _PHRASES[tuple(phrase)]:
                emit(fr_word, sources)
            i += len(phrase)
        elif word in _DET_BY_WORD:
            det = _DET_BY_WORD[word]
            j = i + 1
            while j < len(words) and words[j] in _ADJ_BY_WORD:
                j += 1
            if j >= len(words) or words[j] not in _NOUN_BY_WORD:
                got = repr(words[j]) if j < len(words) else "the end of the sentence"
                raise DataError(f"word {i + 1} {word!r} starts a noun phrase, but {got} follows where "
                                f"a noun was expected (determiner, adjectives, then a noun)")
            noun, plural = _NOUN_BY_WORD[words[j]]
            if plural not in det.numbers:
                need = "plural" if det.numbers == _PL else "singular"
                raise DataError(f"determiner {word!r} needs a {need} noun, got {words[j]!r}")
            emit(det.form(noun.gender, plural), [i])
            emit(noun.fr_pl if plural else noun.fr_sg, [j])
            for k in range(j - 1, i, -1):  # adjectives in mirrored order
                emit(_ADJ_BY_WORD[words[k]].form(noun.gender, plural), [k])
            i = j + 1
        elif word in _VERB_BY_WORD:
            verb, plural = _VERB_BY_WORD[word]
            emit(verb.fr_pl if plural else verb.fr_sg, [i])
            i += 1
        elif word in _ADJ_BY_WORD or word in _NOUN_BY_WORD:
            raise DataError(f"word {i + 1} {word!r} needs a determiner before it (e.g. 'the')")
        else:
            raise DataError(f"unknown word {word!r} (word {i + 1}); the toy language knows "
                            f"{len(lexicon_words())} words, see toy_translation.lexicon_words()")
    return PairExample(src=" ".join(words), tgt=" ".join(fr), alignment=sorted(alignment))


class _Generator:
    """Random English sentences of the toy grammar."""

    ADJ_COUNTS, ADJ_WEIGHTS = (0, 1, 2, 3), (0.4, 0.33, 0.2, 0.07)

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def np(self, allow_pp: bool) -> list[str]:
        rng = self.rng
        noun = rng.choice(NOUNS)
        plural = rng.random() < 0.4
        det = rng.choice([d for d in DETERMINERS if plural in d.numbers])
        k = rng.choices(self.ADJ_COUNTS, weights=self.ADJ_WEIGHTS)[0]
        adjs = [a.en for a in rng.sample(ADJECTIVES, k)]
        words = [det.en, *adjs, noun.en_pl if plural else noun.en_sg]
        if allow_pp and rng.random() < 0.15:
            words += self.pp()
        return words

    def pp(self) -> list[str]:
        return [*self.rng.choice(list(PREPOSITIONS)), *self.np(allow_pp=False)]

    def clause(self) -> list[str]:
        rng = self.rng
        subject = self.np(allow_pp=True)
        # the verb agrees with the head noun of the subject (the word before any pp)
        head = next(w for w in subject if w in _NOUN_BY_WORD)
        plural = _NOUN_BY_WORD[head][1]
        verb = rng.choice(VERBS)
        words = subject + [verb.en_pl if plural else verb.en_sg]
        if verb.transitive:
            words += self.np(allow_pp=True)
        if rng.random() < 0.35:
            words += self.pp()
        return words

    def sentence(self, min_len: int, max_len: int) -> list[str]:
        rng = self.rng
        for _ in range(1000):
            goal = rng.randint(min_len, max_len)
            limit = min(max_len, goal + 3)  # stop near the goal, so short sentences are common too
            words: list[str] = []
            while len(words) < goal:
                for _try in range(10):
                    clause = self.clause()
                    extra = clause if not words else [*rng.choice(list(CONJUNCTIONS)), *clause]
                    if len(words) + len(extra) <= limit:
                        words += extra
                        break
                else:
                    break
            if min_len <= len(words) <= max_len:
                return words
        raise ConfigError(f"could not build a sentence of {min_len}..{max_len} words; "
                          f"widen the range (the shortest clause has 3 words)")


def make_toy_translation(n: int, seed: int, min_len: int = 3, max_len: int = 60) -> list[PairExample]:
    """``n`` toy English -> French-like pairs with gold word alignments; deterministic for ``seed``.

    Source lengths (in words) lie in ``[min_len, max_len]``; each sentence aims at a length drawn
    uniformly from that range and chains clauses with conjunctions to reach it.
    """
    if n < 0:
        raise ConfigError(f"n must be >= 0, got {n}")
    if min_len < 3 or max_len < min_len:
        raise ConfigError(f"need 3 <= min_len <= max_len (the shortest sentence has 3 words), "
                          f"got min_len={min_len}, max_len={max_len}")
    gen = _Generator(random.Random(seed))
    return [translate(" ".join(gen.sentence(min_len, max_len))) for _ in range(n)]
