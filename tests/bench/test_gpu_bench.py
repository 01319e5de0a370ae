"""`bench gpu`'s timing of engine runs, on the CPU (the GPU checks themselves need CUDA)."""
from __future__ import annotations

import pytest
import torch

from playground.__main__ import main
from playground.bench.gpu import short_run

TINY = {"model.n_layer": "1", "model.n_head": "2", "model.d_model": "16", "model.block_size": "16",
        "train.batch_size": "4", "data.corpus": "python-docs"}


@pytest.mark.parametrize("log_interval", ["1", "5"])
def test_short_run_times_the_steps_between_two_read_backs(log_interval):
    rate, mfu, loss, fused = short_run("nanogpt-cpu-tiny", {**TINY, "train.log_interval": log_interval},
                                       steps=10, warmup=5, device="cpu")
    assert rate > 0 and loss == loss and mfu is None  # no known peak for a CPU: no MFU
    assert fused  # the engine's optimizer really is the fused AdamW (torch >= 2.4 has it on CPU too)


def test_no_log_steps_in_the_window_is_said():
    with pytest.raises(SystemExit, match="no log steps"):
        short_run("nanogpt-cpu-tiny", {**TINY, "train.log_interval": "100"}, steps=3, warmup=2, device="cpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on a machine without CUDA")
def test_bench_gpu_without_cuda_says_so():
    with pytest.raises(SystemExit, match="needs a CUDA GPU"):
        main(["bench", "gpu"])
