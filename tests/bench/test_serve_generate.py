"""bench serve-generate: its report (the ratios the goal is stated in, the checks), its
reading of Generate's token table, and its lean queue client on the real app (the bench's own
servers run only in the bench)."""
from __future__ import annotations

import pytest
import torch

from playground.bench.queue_client import QueueClient, QueueError
from playground.bench.serve import DEMO_GPT
from playground.bench.serve_generate import (
    Figures,
    _prompt,
    _token_ids,
    format_engine,
    format_report,
    pass_floor,
)
from playground.bench.step_ops import StepOps
from playground.models.gpt import GPT, GPTConfig


def test_report_prints_ratios_and_checks():
    batched = Figures(many=[1.0, 1.2, 1.4], alone=[0.5, 0.5], many_tps=[1000.0], alone_tps=[200.0], inside=[0.8])
    unbatched = Figures(many=[3.0, 4.0], alone=[0.4], many_tps=[250.0], alone_tps=[250.0],
                        failures=["TimeoutError: x"])
    result = {"users": 20, "rounds": 1, "new_tokens": 100, "figures": {"batched": batched, "unbatched": unbatched},
              "compared": 5, "differ": [], "cross_talk": [], "alive": {"batched": True, "unbatched": True},
              "load": (1.0, 1.0, 1.0)}
    text = format_report(result)
    assert "2.76x" in text  # p95 1.38 s over one user alone 0.5 s
    assert "4.00x" in text  # 1000 over 250 tok/s
    assert "5 of 5 generations" in text
    assert "failure (unbatched): TimeoutError: x" in text


def test_engine_only_report_names_the_device_and_prints_both_ratios():
    ops = {20: StepOps(20, decode_ops=[76, 79, 76], decode_passes=101, prefill_passes=25),
           1: StepOps(1, decode_ops=[73, 74, 73], decode_passes=95, prefill_passes=5)}
    engine = {"batched": Figures(many=[0.8, 0.9, 1.0], alone=[0.25, 0.25], many_tps=[2400.0], alone_tps=[390.0],
                                 pass_many=[0.0018, 0.0017, 0.0019], pass_one=[0.0007, 0.0008, 0.0006], ops=ops),
              "unbatched": Figures(many=[4.0, 7.0], alone=[0.26], many_tps=[300.0], alone_tps=[380.0])}
    text = format_engine(engine, 20, 3, 100, "cuda")
    assert "on cuda" in text and "no app" in text
    assert "p95 / one user alone: 3.96x" in text  # p95 of 0.8, 0.9, 1.0 (inclusive) 0.99 over 0.25
    assert "throughput batched / unbatched: 8.00x" in text  # 2400 over 300 tok/s
    assert "20 rows / one row (medians, interleaved): 1.80 ms / 0.70 ms = 2.57x" in text
    assert "views excluded (on a GPU about one launch each), 20 users / one user: 76 / 73" in text  # the medians
    assert "20 users together / one user: 101 decode + 25 prefill / 95 decode + 5 prefill" in text


def test_pass_floor_times_both_passes_on_a_real_model():
    """The floor is measured, not assumed: real decode passes of N rows and of one row, every
    repeat from the same positions."""
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=20, block_size=16, n_layer=1, n_head=2, d_model=16)).eval()
    many, one = pass_floor(model, rows=5, repeats=3)
    assert len(many) == len(one) == 3 and all(t > 0 for t in many + one)


def test_token_ids_from_the_token_table():
    table = {"headers": ["sample", "index", "token", "token_id"], "data": [[1, 0, "a", 7], [1, 1, "b", 3]]}
    assert _token_ids(["html", "stats", table]) == [7, 3]
    assert _token_ids(["html", "stats", None]) is None


def _generate_args(seed: int) -> tuple:
    return (DEMO_GPT, _prompt("u00-abcdef", 1), 0.8, 40, 1.0, 0.0, 1.0, 0.0, 0.0, 12, seed, 1, "", 1, 0.0)


def test_queue_client_gets_what_gradio_client_gets(app_server):
    """The bench's lean client on the real app: the same outputs as gradio_client for the same
    call (state outputs left out alike), and the app's own message for a refused input."""
    from gradio_client import Client

    lean = QueueClient(app_server.url, timeout_s=60)
    reference = Client(app_server.url, verbose=False)
    try:
        choices = lean.predict(None, api_name="/refresh_generate_models")[0]["choices"]
        assert DEMO_GPT in [c[0] for c in choices]
        reference.predict(None, api_name="/refresh_generate_models")
        ours = lean.predict(*_generate_args(7), api_name="/generate_text", timeout_s=60)
        theirs = reference.predict(*_generate_args(7), api_name="/generate_text")
        assert len(ours) == len(theirs)
        assert _token_ids(ours) == _token_ids(theirs) and len(_token_ids(ours)) == 12
        assert ours[1].split(" in ")[0] == theirs[1].split(" in ")[0]  # the stats line, up to its timing
        with pytest.raises(QueueError, match="seed must be between 0"):
            lean.predict(*_generate_args(-5), api_name="/generate_text", timeout_s=60)
        with pytest.raises(QueueError, match="no endpoint"):
            lean.predict(api_name="/no_such_endpoint")
    finally:
        lean.close()
        reference.close()
