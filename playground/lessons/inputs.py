"""Reading the small numeric inputs of the lessons: vectors and matrices typed as text.

Rows are separated by ';' (or new lines), numbers by ',' or spaces: "1, 0; 0.2 0.1". The text is
already capped in length by its Param; the row and column caps here are checked while splitting,
before any array is made.
"""
from __future__ import annotations

import math
import re

import numpy as np

from playground.lessons.base import LessonInputError

_NUMBER_SEP = re.compile(r"[,\s]+")
_ROW_SEP = re.compile(r"[;\n]+")
LARGEST = 1e4  # no lesson needs a larger entry; bigger ones only overflow the pictures


def _numbers(text: str, label: str) -> list[float]:
    values = []
    for token in _NUMBER_SEP.split(text.strip()):
        if not token:
            continue
        try:
            value = float(token.replace("−", "-"))
        except ValueError:
            raise LessonInputError(f"{label}: {token!r} is not a number; write numbers like 0.5 or -2.") from None
        if not math.isfinite(value) or abs(value) > LARGEST:
            raise LessonInputError(f"{label}: each number must be finite and at most {LARGEST:g} in size (got {token}).")
        values.append(value)
    return values


def parse_vector(text: str, label: str, max_len: int, min_len: int = 1) -> np.ndarray:
    """`text` ("2, 1, 0.5") as a float64 vector of min_len..max_len numbers, or LessonInputError."""
    if len(_NUMBER_SEP.split(text.strip())) > max_len:
        raise LessonInputError(f"{label}: at most {max_len} numbers.")
    values = _numbers(text.replace(";", " "), label)
    if len(values) < min_len:
        raise LessonInputError(f"{label}: give at least {min_len} number{'s' if min_len != 1 else ''}.")
    return np.array(values, dtype=np.float64)


def parse_matrix(text: str, label: str, max_rows: int, max_cols: int) -> np.ndarray:
    """`text` ("1, 0; 0.2, 0.1") as a float64 [rows, cols] matrix, or LessonInputError.

    Every row must have the same number of entries; at most `max_rows` x `max_cols`.
    """
    lines = [line for line in _ROW_SEP.split(text.strip()) if line.strip()]
    if not lines:
        raise LessonInputError(f"{label}: empty; write rows separated by ';', numbers by ',' (e.g. 1, 0; 0, 1).")
    if len(lines) > max_rows:
        raise LessonInputError(f"{label}: at most {max_rows} rows (got {len(lines)}).")
    rows = []
    for line in lines:
        if len(_NUMBER_SEP.split(line.strip())) > max_cols:
            raise LessonInputError(f"{label}: at most {max_cols} numbers per row.")
        rows.append(_numbers(line, label))
    widths = {len(row) for row in rows}
    if len(widths) != 1:
        raise LessonInputError(f"{label}: every row needs the same number of entries (got {sorted(widths)}).")
    return np.array(rows, dtype=np.float64)


def format_matrix(matrix: np.ndarray) -> str:
    """The text form parse_matrix reads back: rows joined by '; ', numbers by ', '."""
    return "; ".join(", ".join(f"{v:g}" for v in row) for row in np.atleast_2d(matrix))
