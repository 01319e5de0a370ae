"""`python -m playground lesson ...` in-process: the same numbers as the lessons, JSON that parses,
the listing, and one clear line with exit code 2 for bad input."""
from __future__ import annotations

import json

import pytest

from playground.__main__ import main
from playground.lessons.sampling import LESSON as SAMPLING

MINE = ("attention_steps", "scaling", "positions", "sampling")


def test_json_output_is_the_lessons_numbers(capsys):
    assert main(["lesson", "sampling", "--set", "temperature=0.5", "--set", "top_k=2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["lesson"] == "sampling"
    assert out["numbers"] == SAMPLING.run({"temperature": 0.5, "top_k": 2}).numbers
    assert out["numbers"]["kept"] == ["#1", "#2"]


def test_example_preset_and_text_output(capsys):
    assert main(["lesson", "attention_steps", "--example", "Soft dictionary lookup (notes)"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# Attention step by step")
    assert "## Stages 1–4 (one row per query)" in out and "0.411" in out
    assert "(15.6, 26.0)" in out  # the note on the printed slip
    assert main(["lesson", "positions", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["numbers"]["cosine_pairs"]["0,50"] == pytest.approx(0.4898, abs=1e-4)


def test_list(capsys):
    assert main(["lesson", "--list", "--json"]) == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert set(MINE) <= set(rows)
    assert rows["sampling"]["examples"][0] == "The notes' scores (2, 1, 0.5, −0.5)"
    assert {"name": "top_k", "kind": "int", "default": 0, "range": "0..32"} in rows["sampling"]["settings"]
    assert main(["lesson", "--list"]) == 0
    assert "scaling" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["lesson", "sampling", "--set", "temperature=9"], "at most 5"),
    (["lesson", "sampling", "--set", "colour=red"], "has no setting 'colour'"),
    (["lesson", "sampling", "--set", "temperature"], "KEY=VALUE"),
    (["lesson", "nope"], "No lesson 'nope'"),
    (["lesson", "scaling", "--example", "nope"], "Unknown example"),
    (["lesson", "scaling", "--set", "keys=512", "--set", "queries=1000"], "draws at most"),
    (["lesson"], "name a lesson"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, argv, message):
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert message in captured.err and len(captured.err.strip().splitlines()) == 1 and captured.out == ""
