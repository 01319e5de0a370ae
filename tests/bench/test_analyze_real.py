"""`bench analyze --model gpt2-sized` with a tiny shape: one row per length, every side timed, ratios."""
from __future__ import annotations

import argparse
import importlib.util
import re

from playground.bench.analyze_real import run_real

TINY = {"vocab_size": 300, "block_size": 64, "n_layer": 2, "n_head": 2, "d_model": 32}


def test_one_row_per_length_with_every_side(capsys) -> None:
    args = argparse.Namespace(lengths="6,12", ig_steps=4, repeats=1, threads=1)
    assert run_real(args, shape=TINY) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = [line for line in lines if re.match(r"\| \d+ \|", line)]
    assert [r.split(" | ")[0] for r in rows] == ["| 6", "| 12"]
    has_inseq = importlib.util.find_spec("inseq") is not None
    for row in rows:
        cells = row.strip("| ").split(" | ")
        assert all(c.endswith("s CPU") for c in cells[1:3]) and float(cells[4]) > 0
        assert (cells[3].endswith("s CPU") and float(cells[5]) > 0) if has_inseq else cells[3] == "–"
