"""Tables that show rounded numbers: `round_sig` (pure) and `Table`, a gr.Dataframe that uses it.

A table of raw floats reads as noise (5.617342877388); four significant digits are plenty on
screen. Only what the browser shows is rounded: handlers keep full frames, and CSV/JSON
downloads are written from those, not from the table.
"""
from __future__ import annotations

import math
from typing import Any

import gradio as gr
import numpy as np
import pandas as pd

DIGITS = 4


def _round_value(value: Any, digits: int) -> Any:
    """One float rounded to `digits` significant digits; anything else (ints, bools, text) as is."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (float, np.floating)):
        return value
    if not math.isfinite(value) or value == 0:
        return float(value)
    return float(f"{float(value):.{digits}g}")


def round_sig(frame: pd.DataFrame, digits: int = DIGITS) -> pd.DataFrame:
    """A copy of `frame` whose floats have at most `digits` significant digits.

    Float columns become float64 (a float32 would bring the noise back); floats inside object
    columns are rounded one by one; integer, bool and text columns, NaN and ±inf stay as they are.
    """
    out = frame.copy()
    for i, dtype in enumerate(out.dtypes):
        column = out.iloc[:, i]
        if pd.api.types.is_float_dtype(dtype):
            out.isetitem(i, column.astype("float64").map(lambda v: _round_value(v, digits)).astype("float64"))
        elif dtype == object:  # noqa: E721 - numpy's dtype('O') equals object but is not it
            out.isetitem(i, column.map(lambda v: _round_value(v, digits)))
    return out


# What a table with nothing to show yet holds: one blank column. (gr.Dataframe's own empty
# value shows the made-up headers "1 | 2 | 3", which read as data.)
BLANK = pd.DataFrame(columns=[" "])


class Table(gr.Dataframe):
    """gr.Dataframe that shows floats with 4 significant digits (`round_sig`) and, empty, a blank
    header instead of "1 | 2 | 3"; same arguments."""

    def get_block_name(self) -> str:
        """Drawn by gr.Dataframe's frontend (a subclass's own name has none: it would not show)."""
        return "dataframe"

    def postprocess(self, value: Any) -> Any:
        """Round a pandas frame's floats for display, then let gr.Dataframe do the rest."""
        if value is None and self.headers == [str(i) for i in range(1, len(self.headers) + 1)]:
            value = BLANK  # no value and gradio's made-up headers (a subclass may not change the
            # constructor's signature: gradio builds the browser's config from it)
        if isinstance(value, pd.DataFrame):
            value = round_sig(value)
        return super().postprocess(value)


HEADER_EXTRA = 3  # characters' room beside a header for gradio's column menu button (⋮)
MAX_COLUMN_CHARS = 40  # a long text cell wraps instead of taking the table


def column_widths(frame: pd.DataFrame) -> list[str]:
    """Percent widths for `frame`'s columns, each as wide as its header's longest word plus the menu
    button, or its longest cell (up to MAX_COLUMN_CHARS), whichever is more. Gradio sizes columns
    by their cells, so a short number under a long header ("vocabulary") had it broken mid-word."""
    if frame.shape[1] == 0:
        return []
    chars = []
    for name in frame.columns:
        head = max((len(w) for w in str(name).split()), default=1) + HEADER_EXTRA
        cells = round_sig(frame[[name]]).iloc[:, 0].astype(str).str.len().max() if len(frame) else 0
        chars.append(max(head, min(int(cells or 0) + 2, MAX_COLUMN_CHARS)))
    total = sum(chars)
    return [f"{100 * c / total:.1f}%" for c in chars]
