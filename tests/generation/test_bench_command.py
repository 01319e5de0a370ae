"""`python -m playground bench generate` runs end to end (tiny settings; no timing asserted)."""
from __future__ import annotations

import torch

from playground.__main__ import main


def test_bench_generate_prints_each_contender_and_ratios(capsys):
    threads = torch.get_num_threads()
    try:
        code = main(["bench", "generate", "--new-tokens", "12", "--repeats", "1", "--sizes", "tiny-block64",
                     "--threads", "1", "--no-hf"])
    finally:
        torch.set_num_threads(threads)
    out = capsys.readouterr().out
    assert code == 0
    for label in ("ours, KV cache, streaming events", "ours, KV cache, ids only", "ours, no cache",
                  "cache / no cache (streaming)"):
        assert label in out
    assert "transformers" not in out.split("tiny-block64")[1]
