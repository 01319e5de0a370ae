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
    assert [r.split(" | ")[0] for r in rows] == ["| 6", "| 12"] * 2  # as each length ends, and the table at the end
    assert rows[:2] == rows[2:]
    has_inseq = importlib.util.find_spec("inseq") is not None
    for n in (6, 12):
        assert any(line.startswith(f"  {n} tokens, round 1: ours ") and "ig " in line and "loo " in line
                   for line in lines)
        assert any(line.startswith(f"  {n} tokens, estimated GFLOPs: ours ") for line in lines)
        assert any(line.startswith(f"  {n} tokens, like for like: our IG alone ") for line in lines) == has_inseq
    for row in rows:
        cells = row.strip("| ").split(" | ")
        assert all(c.endswith("s CPU") for c in cells[1:3]) and float(cells[4]) > 0
        assert (cells[3].endswith("s CPU") and float(cells[5]) > 0) if has_inseq else cells[3] == "–"


def test_flops_estimate_counts_each_sides_work() -> None:
    """The printed estimate, recomputed by hand for GPT-2 small's shape at 16 tokens and 50 steps."""
    from playground.bench.analyze_real import GPT2_SMALL, flops

    d, L, V, n = 768, 12, 50257, 16
    body, head = 24 * d * d * L + 2 * n * d * L, 2 * d * V
    est = flops(n, 50, GPT2_SMALL)
    assert est["inseq"] == 50 * n * 2 * (body + head)
    assert est["ours"] == 50 * n * 2 * body + (6 * n + n * (n + 1) // 2 + 2 * n) * body
    assert est["captum"] == est["inseq"] + n * n * (body + head)
    assert 0.5 < est["ours"] / est["inseq"] < 1.0  # equal IG work costs ours less (no head at every position) ...
    assert flops(256, 50, GPT2_SMALL)["ours"] > flops(256, 50, GPT2_SMALL)["inseq"]  # ... until LOO's n²/2 dominates
