"""bench serve-generate: its report (the ratios the goal is stated in, the checks) and its
reading of Generate's token table; the servers themselves run only in the bench."""
from __future__ import annotations

from playground.bench.serve_generate import Figures, _token_ids, format_report


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


def test_token_ids_from_the_token_table():
    table = {"headers": ["sample", "index", "token", "token_id"], "data": [[1, 0, "a", 7], [1, 1, "b", 3]]}
    assert _token_ids(["html", "stats", table]) == [7, 3]
    assert _token_ids(["html", "stats", None]) is None
