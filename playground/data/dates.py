"""Date normalisation pairs: a human-written date in one of many formats -> ISO 8601.

"3rd of March 1999", "Mar 3, 99", "03/03/1999", "Wednesday 3 March 1999", ... -> "1999-03-03".
Units are characters. Conventions (documented, so the task is unambiguous):

- Numeric day/month orders are day first (European): "03/04/1999" is 3 April 1999.
  The only month-first forms spell the month out ("March 3rd, 1999", "Mar 3, 99").
- Two-digit years follow POSIX / Python ``%y``: 00-68 -> 2000-2068, 69-99 -> 1969-1999
  (``TWO_DIGIT_YEAR_PIVOT``); a date is rendered with a two-digit year only when its year is in
  1969..2068, so the source always determines the target.
- Weekday names, when present, are the real weekday of the date.

Gold alignment, in characters (target index, source index): every digit of the ISO year, month
and day is aligned to the source characters of that field. Digits are matched right to left
("99" -> the "99" of "1999"); a target digit with no source counterpart (the century of a
two-digit year, the leading zero of "3") and month digits for a spelled-out month are aligned
to the whole source field. The hyphens are unaligned; weekday names and ordinal suffixes are
never aligned to.
"""

from __future__ import annotations

import datetime as _dt
import random
from collections.abc import Callable

from playground.data.types import PairExample
from playground.errors import ConfigError

__all__ = ["make_dates", "render_date", "FORMATS", "TWO_DIGIT_YEAR_PIVOT", "MIN_DATE", "MAX_DATE"]

TWO_DIGIT_YEAR_PIVOT = 69  # yy < 69 -> 20yy, yy >= 69 -> 19yy (Python's %y)
MIN_DATE = _dt.date(1900, 1, 1)
MAX_DATE = _dt.date(2099, 12, 31)
_TWO_DIGIT_RANGE = (1969, 2068)

MONTHS = ["January", "February", "March", "April", "May", "June", "July",
          "August", "September", "October", "November", "December"]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]

# A piece of a rendered date: (text, field) with field in {"year", "month", "day", None}.
Piece = tuple[str, "str | None"]


def _ordinal_suffix(day: int) -> str:
    if 11 <= day % 100 <= 13:
        return "th"
    return {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")


def _d(x: _dt.date) -> Piece:
    return (str(x.day), "day")


def _dd(x: _dt.date) -> Piece:
    return (f"{x.day:02d}", "day")


def _m(x: _dt.date) -> Piece:
    return (str(x.month), "month")


def _mm(x: _dt.date) -> Piece:
    return (f"{x.month:02d}", "month")


def _month(x: _dt.date) -> Piece:
    return (MONTHS[x.month - 1], "month")


def _mon(x: _dt.date) -> Piece:
    return (MONTHS[x.month - 1][:3], "month")


def _yyyy(x: _dt.date) -> Piece:
    return (f"{x.year:04d}", "year")


def _yy(x: _dt.date) -> Piece:
    return (f"{x.year % 100:02d}", "year")


def _weekday(x: _dt.date) -> Piece:
    return (WEEKDAYS[x.weekday()], None)


def _wkd(x: _dt.date) -> Piece:
    return (WEEKDAYS[x.weekday()][:3], None)


def _lit(text: str) -> Callable[[_dt.date], Piece]:
    return lambda x: (text, None)


def _ord(x: _dt.date) -> list[Piece]:
    return [(str(x.day), "day"), (_ordinal_suffix(x.day), None)]


# Each format: name -> list of piece makers (a maker returns one Piece or a list of Pieces).
# The name is a strftime-like description; "o" marks an ordinal day ("3rd").
FORMATS: dict[str, list[Callable]] = {
    "o of B Y": [_ord, _lit(" of "), _month, _lit(" "), _yyyy],             # 3rd of March 1999
    "the o of B, Y": [_lit("the "), _ord, _lit(" of "), _month, _lit(", "), _yyyy],
    "b d, y": [_mon, _lit(" "), _d, _lit(", "), _yy],                        # Mar 3, 99
    "b d, Y": [_mon, _lit(" "), _d, _lit(", "), _yyyy],                      # Mar 3, 1999
    "dd/mm/Y": [_dd, _lit("/"), _mm, _lit("/"), _yyyy],                      # 03/03/1999
    "d/m/y": [_d, _lit("/"), _m, _lit("/"), _yy],                            # 3/3/99
    "A d B Y": [_weekday, _lit(" "), _d, _lit(" "), _month, _lit(" "), _yyyy],  # Wednesday 3 March 1999
    "a, d b Y": [_wkd, _lit(", "), _d, _lit(" "), _mon, _lit(" "), _yyyy],   # Wed, 3 Mar 1999
    "A, B d, Y": [_weekday, _lit(", "), _month, _lit(" "), _d, _lit(", "), _yyyy],  # Wednesday, March 3, 1999
    "d.m.Y": [_d, _lit("."), _m, _lit("."), _yyyy],                          # 3.3.1999
    "dd.mm.y": [_dd, _lit("."), _mm, _lit("."), _yy],                        # 03.03.99
    "B o, Y": [_month, _lit(" "), _ord, _lit(", "), _yyyy],                  # March 3rd, 1999
    "B d Y": [_month, _lit(" "), _d, _lit(" "), _yyyy],                      # March 3 1999
    "Y-mm-dd": [_yyyy, _lit("-"), _mm, _lit("-"), _dd],                      # 1999-03-03
    "Y/mm/dd": [_yyyy, _lit("/"), _mm, _lit("/"), _dd],                      # 1999/03/03
    "Ymmdd": [_yyyy, _mm, _dd],                                              # 19990303
    "d b Y": [_d, _lit(" "), _mon, _lit(" "), _yyyy],                        # 3 Mar 1999
    "dd-b-Y": [_dd, _lit("-"), _mon, _lit("-"), _yyyy],                      # 03-Mar-1999
    "d B y": [_d, _lit(" "), _month, _lit(" "), _yy],                        # 3 March 99
}
_TWO_DIGIT_FORMATS = {name for name, makers in FORMATS.items() if _yy in makers}
_CASES = ("as is", "lower", "upper")
_CASE_WEIGHTS = (0.6, 0.2, 0.2)


def render_date(date: _dt.date, fmt: str, case: str = "as is") -> tuple[str, dict[str, tuple[int, int]]]:
    """Render ``date`` in format ``fmt`` (a key of FORMATS); return (text, {field: (start, end)})."""
    if fmt not in FORMATS:
        raise ConfigError(f"unknown date format {fmt!r}; choose one of: {', '.join(FORMATS)}")
    if fmt in _TWO_DIGIT_FORMATS and not (_TWO_DIGIT_RANGE[0] <= date.year <= _TWO_DIGIT_RANGE[1]):
        raise ConfigError(
            f"format {fmt!r} has a two-digit year, which only covers {_TWO_DIGIT_RANGE[0]}-"
            f"{_TWO_DIGIT_RANGE[1]}; pick a four-digit format for {date.year}")
    pieces: list[Piece] = []
    for maker in FORMATS[fmt]:
        out = maker(date)
        pieces.extend(out if isinstance(out, list) else [out])
    text, spans, pos = "", {}, 0
    for piece, field in pieces:
        if field is not None:
            spans[field] = (pos, pos + len(piece))
        text += piece
        pos += len(piece)
    if case == "lower":
        text = text.lower()
    elif case == "upper":
        text = text.upper()
    elif case != "as is":
        raise ConfigError(f"unknown case {case!r}; choose one of: {', '.join(_CASES)}")
    return text, spans


def _align(source: str, spans: dict[str, tuple[int, int]]) -> list[tuple[int, int]]:
    """Gold (target char, source char) pairs for the ISO target 'YYYY-MM-DD'."""
    target_fields = {"year": (0, 4), "month": (5, 7), "day": (8, 10)}
    pairs: list[tuple[int, int]] = []
    for field, (t0, t1) in target_fields.items():
        s0, s1 = spans[field]
        numeric = source[s0:s1].isdigit()
        for t in range(t0, t1):
            from_right = t1 - 1 - t
            if numeric and from_right < s1 - s0:
                pairs.append((t, s1 - 1 - from_right))
            else:
                pairs.extend((t, s) for s in range(s0, s1))
    return sorted(pairs)


def make_dates(n: int, seed: int) -> list[PairExample]:
    """``n`` (source, ISO target) date pairs, deterministic for ``seed``; char-level units.

    Dates are uniform over 1900-01-01..2099-12-31; the format is uniform over those valid
    for the date (two-digit years only for 1969..2068); the case is kept (60%), lowered (20%)
    or upper-cased (20%).
    """

    if n < 0:
        raise ConfigError(f"n must be >= 0, got {n}")
    rng = random.Random(seed)
    span_days = (MAX_DATE - MIN_DATE).days
    four_digit = [f for f in FORMATS if f not in _TWO_DIGIT_FORMATS]
    all_formats = list(FORMATS)
    out: list[PairExample] = []
    for _ in range(n):
        date = MIN_DATE + _dt.timedelta(days=rng.randint(0, span_days))
        in_range = _TWO_DIGIT_RANGE[0] <= date.year <= _TWO_DIGIT_RANGE[1]
        fmt = rng.choice(all_formats if in_range else four_digit)
        case = rng.choices(_CASES, weights=_CASE_WEIGHTS)[0]
        text, spans = render_date(date, fmt, case)
        out.append(PairExample(src=text, tgt=date.isoformat(), alignment=_align(text, spans)))
    return out
