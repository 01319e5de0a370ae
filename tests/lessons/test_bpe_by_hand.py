"""BPE by hand: the toy corpus's merges and counts checked by hand and against `tokenizers`."""
from __future__ import annotations

import pytest
from tokenizers import models

from playground.lessons import LessonInputError
from playground.lessons.bpe_by_hand import (
    END,
    LESSON,
    TOY,
    learn,
    library_merges,
    merge,
    pair_counts,
    start_words,
    word_counts,
)

# Worked by hand on low ×5, lower ×2, newest ×6, widest ×3 (end mark glued to the last letter).
TOY_MERGES = [("e", "s"), ("es", "t</w>"), ("l", "o"), ("e", "w"), ("n", "ew"), ("new", "est</w>"), ("lo", "w</w>"),
              ("d", "est</w>"), ("i", "dest</w>"), ("w", "idest</w>"), ("e", "r</w>"), ("w", "er</w>"),
              ("lo", "wer</w>")]
TOY_COUNTS = [9, 9, 7, 6, 6, 6, 5, 3, 3, 3, 2, 2, 2]


def test_first_pair_counts_by_hand():
    counts = pair_counts(start_words(TOY))
    assert counts[("e", "s")] == 6 + 3 and counts[("s", "t</w>")] == 6 + 3  # newest, widest: a tie
    assert counts[("l", "o")] == 5 + 2 and counts[("w", "e")] == 2 + 6  # lower, newest
    assert counts[("o", "w</w>")] == 5 and counts[("o", "w")] == 2
    assert sum(counts.values()) == 5 * 2 + 2 * 4 + 6 * 5 + 3 * 5  # (letters - 1) pairs per word


def test_toy_corpus_merges_counts_and_vocabulary():
    view = LESSON.run(preset="The toy corpus to the end")
    assert [tuple(p) for p in view.numbers["merges"]] == TOY_MERGES
    assert view.numbers["counts"] == TOY_COUNTS
    assert view.numbers["vocab_sizes"] == list(range(14, 27))  # 10 letters + 3 end symbols, then one per merge
    assert view.numbers["symbols"][-1] == 16  # every word one symbol: 5 + 2 + 6 + 3
    table = view.tables["Merge by merge"]
    assert table.loc[0, "symbols in corpus"] == 5 * 3 + 2 * 5 + 6 * 6 + 3 * 6
    assert table.loc[1, "tied with"] == "s + t</w>"
    assert table.loc[13, "word: lower"] == "lower</w>"


def test_toy_corpus_matches_the_tokenizers_trainer():
    assert library_merges(TOY, 13) == TOY_MERGES
    view = LESSON.run(preset="The toy corpus, 10 merges")
    assert view.numbers["first_difference"] is None
    assert [tuple(p) for p in view.numbers["tokenizers_merges"]] == TOY_MERGES[:10]


@pytest.mark.parametrize("text", [
    "the cat sat on the mat and the cat ate the rat",
    "run runs running runner jump jumps jumping jumper walk walks walking",
    "aaa aaa aab abb bbb",
])
def test_library_merges_are_a_greedy_sequence_under_our_counts(text):
    """Whatever tokenizers does on ties, each of its merges has the largest count our counter finds."""
    counts = word_counts(text)
    words = start_words(counts)
    for pair in library_merges(counts, 15):
        pairs = pair_counts(words)
        assert pairs[pair] == max(pairs.values())
        words = merge(words, pair)


def test_final_segmentation_equals_the_library_applying_our_merges():
    text = "run runs running runner jump jumps jumping jumper walk walks walking"
    steps = learn(word_counts(text), 12)
    merges = [s.pair for s in steps]
    symbols = {s for w in start_words(word_counts(text)) for s in w} | {a + b for a, b in merges}
    vocab = {s: i for i, s in enumerate(sorted(symbols) + sorted({c for c in text if c != " "} - symbols))}
    model = models.BPE(vocab, merges, end_of_word_suffix=END)
    for symbols_of_word in steps[-1].words:
        word = "".join(symbols_of_word).removesuffix(END)
        assert tuple(t.value for t in model.tokenize(word)) == symbols_of_word


def test_user_text_view_and_caps():
    view = LESSON.run({"corpus": "your text", "text": "ab ab ab cd step", "merges": 5})
    assert view.tables["Merge by merge"].loc[0, "word: step"] == "s t e p</w>"  # a word named like a column
    view = LESSON.run({"corpus": "your text", "text": "ab ab ab cd", "merges": 5})
    assert [tuple(p) for p in view.numbers["merges"]] == [("a", "b</w>"), ("c", "d</w>")]  # no pairs are left
    assert view.numbers["counts"] == [3, 1]
    for chart in view.charts:
        chart.to_dict()
    with pytest.raises(LessonInputError, match="at most 5,000 characters"):
        LESSON.run({"corpus": "your text", "text": "a" * 5001})
    with pytest.raises(LessonInputError, match="at most 200"):
        LESSON.run({"merges": 201})
    with pytest.raises(LessonInputError, match="distinct words"):
        LESSON.run({"corpus": "your text", "text": " ".join(f"{i:x}" for i in range(1001))})
    with pytest.raises(LessonInputError, match="Type some text"):
        LESSON.run({"corpus": "your text", "text": "   "})
