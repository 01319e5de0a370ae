"""Bottleneck lesson: curves read back from metrics.csv, the alignment of the shipped model, the
sentence checks and the live throughput probe."""
from __future__ import annotations

import csv
import json
import shutil

import numpy as np
import pytest

from playground.data.toy_translation import translate
from playground.families import get_family
from playground.lessons import LessonInputError
from playground.lessons.bottleneck import (
    ATTENTION,
    EXAMPLES,
    LESSON,
    NO_ATTENTION,
    accuracy_by_length,
    check_sentence,
    gold_agreement,
    long_source_summary,
    translate_with,
)
from playground.lessons.seq2seq_speed import matched_configs, throughput
from playground.settings import SHIPPED_LIBRARY
from playground.workspace import Workspace

SHIPPED = SHIPPED_LIBRARY / "models"


def _last_row(path) -> dict[str, str]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))[-1]


def _long_exact(row: dict[str, str]) -> float:
    """Exact match over the 40-49 and 50-59 buckets, weighted by their sizes (read straight from the CSV)."""
    n = [int(row[f"n@{b}"]) for b in ("40-49", "50-59")]
    em = [float(row[f"exact_match@{b}"]) for b in ("40-49", "50-59")]
    return (n[0] * em[0] + n[1] * em[1]) / (n[0] + n[1])


@pytest.fixture
def two_runs(tmp_path):
    """A workspace with the shipped attention run and a copy of it under the no-attention name."""
    for name in (ATTENTION, NO_ATTENTION):
        shutil.copytree(SHIPPED / ATTENTION, tmp_path / "models" / name)
    return Workspace(tmp_path)


def test_curve_reads_every_bucket_of_each_run(two_runs):
    buckets = accuracy_by_length(two_runs, [ATTENTION, NO_ATTENTION])
    row = _last_row(SHIPPED / ATTENTION / "metrics.csv")
    labels = [k.split("@")[1] for k in row if k.startswith("exact_match@")]
    assert sorted(buckets["run"].unique()) == sorted([ATTENTION, NO_ATTENTION])
    for label in labels:
        got = buckets[(buckets["run"] == NO_ATTENTION) & (buckets["bucket"] == label)].iloc[0]
        assert got["exact_match"] == pytest.approx(float(row[f"exact_match@{label}"]))
        assert got["token_accuracy"] == pytest.approx(float(row[f"token_accuracy@{label}"]))
        assert got["n"] == int(row[f"n@{label}"])
    summary = long_source_summary(buckets, "exact_match")
    assert summary[ATTENTION] == pytest.approx(_long_exact(row))
    assert summary[ATTENTION] == pytest.approx((86 * 0.9069767441860465 + 86 * 0.9069767441860465) / 172)


@pytest.mark.skipif(not (SHIPPED / NO_ATTENTION / "metrics.csv").is_file(), reason="noattn checkpoint not shipped")
def test_shipped_runs_show_the_bottleneck():
    attention = _long_exact(_last_row(SHIPPED / ATTENTION / "metrics.csv"))
    without = _long_exact(_last_row(SHIPPED / NO_ATTENTION / "metrics.csv"))
    assert attention == pytest.approx(0.9069767441860465)  # 78 of 86 in both buckets
    assert without == 0.0  # not one of the 172 long sources right
    view = LESSON.run({"max_length": "16"})
    assert view.numbers["exact_match_long_sources"] == pytest.approx({ATTENTION: attention, NO_ATTENTION: without})
    row = _last_row(SHIPPED / NO_ATTENTION / "metrics.csv")
    # without attention, short sources still come out right and accuracy falls with every bucket
    assert float(row["exact_match@0-9"]) == pytest.approx(27 / 46)
    by_bucket = [float(row[f"token_accuracy@{b}"]) for b in ("0-9", "10-19", "20-29", "30-39", "40-49", "50-59")]
    assert by_bucket == sorted(by_bucket, reverse=True)
    assert by_bucket[0] == pytest.approx(0.9176136363636364) and by_bucket[-1] == pytest.approx(0.3758169934640523)


def test_alignment_of_the_shipped_model_follows_the_reordering():
    sentence = EXAMPLES["Adjectives reordered"]
    reference = translate(sentence)
    result = translate_with(SHIPPED / ATTENTION, sentence)
    assert result.text == reference.tgt == "le chien noir grand voit le chat blanc petit"
    alignment = np.asarray(result.alignment)  # [T,S], one row per output step (<eos> included)
    assert alignment.shape == (len(reference.tgt.split()) + 1, len(sentence.split()))
    assert np.allclose(alignment.sum(1), 1.0, atol=1e-5)
    # big black dog -> chien noir grand: dog (2) first, then black (1), then big (0)
    assert [int(i) for i in alignment[:4].argmax(1)] == [0, 3, 2, 1]
    view = LESSON.run({"max_length": "16", "sentence": sentence})
    assert view.numbers["alignment_agrees_with_gold"] == 1.0
    assert view.numbers[f"output:{ATTENTION}"] == reference.tgt
    json.dumps(view.numbers)  # the CLI's --json


def test_gold_agreement_by_hand():
    alignment = np.array([[0.9, 0.1, 0.0], [0.1, 0.2, 0.7], [0.5, 0.4, 0.1]])
    gold = [(0, 0), (1, 1), (2, 0), (2, 2)]
    assert gold_agreement(alignment, gold, 3) == pytest.approx(2 / 3)  # row 1 looks at 2, gold says 1
    assert gold_agreement(alignment, [], 3) is None


def test_examples_are_sentences_of_the_toy_language():
    for sentence in EXAMPLES.values():
        assert translate(sentence).tgt
        assert check_sentence(sentence) == sentence.split()


def test_sentence_checks():
    with pytest.raises(LessonInputError, match=r"'is'.*'purple'"):
        check_sentence("the dog is purple")
    with pytest.raises(LessonInputError, match="at most 60"):
        check_sentence(" ".join(["the dog sleeps"] * 21))
    with pytest.raises(LessonInputError, match="Type an English sentence"):
        LESSON.run({"sentence": "  "})
    with pytest.raises(LessonInputError, match="at most 600 characters"):
        LESSON.run({"sentence": "the dog sleeps " * 50})
    with pytest.raises(LessonInputError, match="choose one of"):
        LESSON.run({"max_length": "512"})


def test_throughput_probe_compares_models_of_about_the_same_size():
    speed, sizes = throughput([8, 16])
    configs = matched_configs(319, 17)
    for family, config in configs.items():
        assert sizes[family] == get_family(family).sizes.count_parameters(config)
    assert abs(sizes["transformer_seq2seq"] - sizes["rnn_seq2seq"]) < 0.1 * sizes["rnn_seq2seq"]
    assert len(speed) == 2 * 3 * 2 and (speed["tokens_per_s"] > 0).all()
    row = speed.iloc[0]
    assert row["tokens_per_s"] == pytest.approx(8 * row["length"] / row["seconds"])
