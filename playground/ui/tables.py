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
        elif dtype == object:
            out.isetitem(i, column.map(lambda v: _round_value(v, digits)))
    return out


class Table(gr.Dataframe):
    """gr.Dataframe that shows floats with 4 significant digits (`round_sig`); same arguments."""

    def get_block_name(self) -> str:
        """Drawn by gr.Dataframe's frontend (a subclass's own name has none: it would not show)."""
        return "dataframe"

    def postprocess(self, value: Any) -> Any:
        """Round a pandas frame's floats for display, then let gr.Dataframe do the rest."""
        if isinstance(value, pd.DataFrame):
            value = round_sig(value)
        return super().postprocess(value)
