"""`bench browser`'s pooled line: every Save after the start, session tab against fresh tabs."""
from __future__ import annotations

import statistics

from playground.bench.browser import GenerateProbe, Point, format_generate_probe, format_pooled


def point(phase: str, mine: list[float], fresh: list[float]) -> Point:
    return Point(phase, 40.0, 10_000, 1_000, 1, 100, 5, statistics.median(mine),
                 statistics.median(fresh) if fresh else None, mine, fresh)


def test_the_pooled_line_takes_every_click_after_the_start():
    points = [point("start", [9.0], [0.001]),  # the start is left out
              point("after a training", [0.10, 0.14], [0.09, 0.10]),
              point("after generations", [0.12, 0.30, 0.11], [0.10, 0.20, 0.08])]
    # session: 0.10 0.11 0.12 0.14 0.30 -> 0.12; fresh: 0.08 0.09 0.10 0.10 0.20 -> 0.10
    assert format_pooled(points) == ("pooled after the start: session tab median 120 ms over 5 Saves, "
                                     "fresh tabs 100 ms over 5: x1.20")


def test_no_fresh_tab_no_pooled_line():
    assert format_pooled([point("start", [0.1], [0.1]), point("after", [0.1], [])]) is None


def test_the_generate_line_gives_each_tabs_median_beside_the_servers_time():
    probe = GenerateProbe(session=[3.0, 2.0, 2.6], session_server=[1.9, 1.8, 1.7],
                          fresh=[2.0, 2.4, 2.5], fresh_server=[1.8, 1.8, 1.9])
    assert format_generate_probe(probe) == (
        "Generate (200 tokens) at the end, 3 in each tab: session tab click-to-result median 2.60 s "
        "(the server's own time 1.80 s), fresh tab 2.40 s (1.80 s): x1.08")
