"""`bench serve` in-process: 4 users and 1 trainer against the real app in a subprocess."""
from __future__ import annotations

import pytest

from playground.bench.serve import Options, format_table, run_bench

pytestmark = pytest.mark.slow


def test_four_users_and_a_trainer_see_no_failures_and_no_cross_talk(capsys):
    result = run_bench(Options(users=4, trainers=1, steps=2, single=False, settle_s=1.0, action_timeout_s=120.0))
    print(format_table(result))  # the figures, for whoever reads the log; timings are not asserted
    (multi,) = result["passes"]
    assert multi["users"] == 4 and result["server_alive_at_end"]
    assert multi["failures"] == 0, format_table(result)
    assert multi["cross_talk"] == 0, multi["cross_talk_examples"]
    assert {"generate_busy", "analyze", "tokenizer_build", "train"} <= set(multi["actions"])
    assert multi["workspace_tmp_entries"] == 0
    paint = result["first_paint"]  # 4 "browsers" at once, 3 rounds per mode
    # page and config: gzip, identity, rebuilt, visitors (own cookies)
    assert {f["count"] for f in paint.values()} == {12} and len(paint) == 12
    for what in ("page", "config"):  # the page and its config travel compressed, cached or not
        assert paint[f"{what} gzip"]["bytes"] * 4 < paint[f"{what} identity"]["bytes"]
        assert paint[f"{what} gzip"]["bytes"] == paint[f"{what} gzip rebuilt"]["bytes"]
    assert result["start_s"] is not None
