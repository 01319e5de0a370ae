"""`python -m playground bench train` runs end to end: our engine and both GPT-2 peers train on
the same batches (tiny settings; no timing asserted)."""
from __future__ import annotations

import re

import torch

from playground.__main__ import main


def test_bench_train_prints_ours_both_peers_and_ratios(capsys):
    threads = torch.get_num_threads()
    try:
        code = main(["bench", "train", "--steps", "2", "--warmup", "1", "--rounds", "1", "--threads", "1",
                     "--set", "model.n_layer=1", "--set", "model.ffn=gelu"])
    finally:
        torch.set_num_threads(threads)
    out = capsys.readouterr().out
    assert code == 0
    assert "1 layers" in out and "ffn gelu;" in out  # the override reached the configuration
    assert re.search(r"ours \(playground engine\)\s*:\s*[\d,]+ tokens/s", out)
    assert "GPT-2's gelu_new" in out  # the stock baseline
    assert "gelu_pytorch_tanh: our activation" in out  # like for like: same torch kernel
    assert len(re.findall(r"ratio ours/peer \d+\.\d\dx", out)) == 2
