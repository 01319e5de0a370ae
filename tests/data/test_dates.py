"""Date pairs: the ISO target is the date the source names, checked by an independent parser."""

import datetime as dt
import re
from collections import Counter

import pytest

from playground.data.dates import FORMATS, make_dates, render_date
from playground.errors import ConfigError

# An independent reading of the sources: normalise the English decorations away, then let
# datetime.strptime (whose %y pivot is the documented 69) try every day-first format.
_STRPTIME_FORMATS = [
    "%d %B %Y", "%b %d %y", "%b %d %Y", "%d/%m/%Y", "%d/%m/%y", "%A %d %B %Y", "%a %d %b %Y",
    "%A %B %d %Y", "%d.%m.%Y", "%d.%m.%y", "%B %d %Y", "%Y-%m-%d", "%Y/%m/%d", "%Y%m%d",
    "%d %b %Y", "%d-%b-%Y", "%d %B %y",
]
_WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]


def _normalise(text: str) -> str:
    s = text.lower()
    s = re.sub(r"^the ", "", s)
    s = s.replace(" of ", " ")
    s = re.sub(r"\b(\d{1,2})(st|nd|rd|th)\b", r"\1", s)
    return re.sub(r"\s+", " ", s.replace(",", " ")).strip()


def _parse_all(text: str) -> set[dt.date]:
    norm = _normalise(text)
    found = set()
    for fmt in _STRPTIME_FORMATS:
        try:
            found.add(dt.datetime.strptime(norm, fmt).date())
        except ValueError:
            pass
    return found


def test_round_trip_every_source_parses_to_its_target():
    examples = make_dates(3000, seed=7)
    for ex in examples:
        target = dt.date.fromisoformat(ex.tgt)
        assert target.isoformat() == ex.tgt
        parsed = _parse_all(ex.src)
        assert parsed == {target}, (ex.src, ex.tgt, parsed)


def test_weekday_names_match_the_date():
    seen = 0
    for ex in make_dates(3000, seed=3):
        target = dt.date.fromisoformat(ex.tgt)
        first = ex.src.split()[0].strip(",").lower()
        for i, name in enumerate(_WEEKDAYS):
            if first in (name, name[:3]):
                assert i == target.weekday(), (ex.src, ex.tgt)
                seen += 1
    assert seen > 100


def test_formats_and_cases_all_occur():
    examples = make_dates(3000, seed=11)
    srcs = [e.src for e in examples]
    assert any(s.isupper() and any(c.isalpha() for c in s) for s in srcs)
    assert any(s.islower() and any(c.isalpha() for c in s) for s in srcs)
    assert any(re.search(r"\d(st|nd|rd|th)\b", s.lower()) for s in srcs)
    assert any(re.fullmatch(r"\d{1,2}/\d{1,2}/\d\d", s) for s in srcs)  # two-digit years
    assert any(re.fullmatch(r"\d{8}", s) for s in srcs)
    lengths = Counter(len(s) for s in srcs)
    assert len(lengths) > 10


def test_two_digit_years_follow_the_pivot():
    for ex in make_dates(3000, seed=5):
        if re.fullmatch(r"\d{1,2}[/.]\d{1,2}[/.]\d\d", ex.src):
            yy = int(ex.src[-2:])
            year = int(ex.tgt[:4])
            assert year == (2000 + yy if yy < 69 else 1900 + yy)
    with pytest.raises(ConfigError, match="two-digit year"):
        render_date(dt.date(1950, 1, 1), "d/m/y")


def test_deterministic_for_a_seed():
    a, b, c = make_dates(200, 1), make_dates(200, 1), make_dates(200, 2)
    assert a == b
    assert a != c


def test_hand_checked_renderings_and_alignment():
    d = dt.date(1999, 3, 3)
    assert render_date(d, "o of B Y")[0] == "3rd of March 1999"
    assert render_date(d, "b d, y")[0] == "Mar 3, 99"
    assert render_date(d, "dd/mm/Y")[0] == "03/03/1999"
    assert render_date(d, "A d B Y")[0] == "Wednesday 3 March 1999"
    assert render_date(d, "d.m.Y")[0] == "3.3.1999"
    assert render_date(d, "B o, Y")[0] == "March 3rd, 1999"
    assert render_date(d, "Y-mm-dd", "upper")[0] == "1999-03-03"
    assert render_date(dt.date(2011, 11, 11), "o of B Y", "lower")[0] == "11th of november 2011"
    assert render_date(dt.date(2012, 11, 12), "d B y")[0] == "12 November 12"
    assert render_date(dt.date(2022, 5, 22), "B o, Y")[0] == "May 22nd, 2022"

    from playground.data.dates import _align

    text, spans = render_date(d, "dd/mm/Y")
    pairs = _align(text, spans)
    # year digits 1:1, month/day digits 1:1, hyphens (4, 7) unaligned
    assert pairs == sorted([(0, 6), (1, 7), (2, 8), (3, 9), (5, 3), (6, 4), (8, 0), (9, 1)])
    text, spans = render_date(d, "b d, y")  # "Mar 3, 99"
    pairs = set(_align(text, spans))
    assert {(5, 0), (5, 1), (5, 2), (6, 0), (6, 1), (6, 2)} <= pairs   # month -> "Mar"
    assert (9, 4) in pairs and (8, 4) in pairs                           # day "03" <- "3"
    assert (2, 7) in pairs and (3, 8) in pairs                           # "99" <- "99"
    assert (0, 7) in pairs and (0, 8) in pairs                           # century <- the year field


def test_alignment_indices_are_valid_and_digits_agree():
    for ex in make_dates(500, seed=9):
        assert ex.alignment
        for t, s in ex.alignment:
            assert t in (0, 1, 2, 3, 5, 6, 8, 9)
            assert 0 <= s < len(ex.src)
        assert {t for t, _ in ex.alignment} == {0, 1, 2, 3, 5, 6, 8, 9}
        if ex.src == ex.tgt:  # the ISO format itself aligns to itself
            assert ex.alignment == [(i, i) for i in (0, 1, 2, 3, 5, 6, 8, 9)]


def test_every_format_renders_a_leap_day():
    leap = dt.date(2000, 2, 29)
    for fmt in FORMATS:
        text, spans = render_date(leap, fmt)
        assert _parse_all(text) == {leap}, (fmt, text)
        assert set(spans) == {"year", "month", "day"}
