"""Tables show at most 4 significant digits: `round_sig` and the `Table` component that uses it."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from playground.ui.tables import Table, round_sig


def test_floats_keep_four_significant_digits():
    frame = pd.DataFrame({"x": [5.617342877388, 0.000123456, 12345.6, -2.0000001, 0.0, 1e-12]})
    assert round_sig(frame)["x"].tolist() == [5.617, 0.0001235, 12350.0, -2.0, 0.0, 1e-12]


def test_ints_text_nan_and_inf_stay_and_the_input_is_not_touched():
    frame = pd.DataFrame({"n": [1, 123456789], "s": ["a", "b"], "f": [np.nan, np.inf], "b": [True, False]})
    out = round_sig(frame)
    assert out["n"].tolist() == [1, 123456789] and out["n"].dtype == frame["n"].dtype
    assert out["s"].tolist() == ["a", "b"] and out["b"].tolist() == [True, False]
    assert math.isnan(out["f"][0]) and out["f"][1] == math.inf
    unrounded = pd.DataFrame({"x": [5.617342877388]})
    round_sig(unrounded)
    assert unrounded["x"][0] == 5.617342877388  # a copy: the handler's frame keeps full precision


def test_float32_and_object_columns():
    frame = pd.DataFrame({"f32": np.float32([1 / 3]), "o": pd.Series([0.123456], dtype=object)})
    frame = pd.concat([frame, pd.DataFrame({"f32": np.float32([2.0]), "o": ["text"]})], ignore_index=True)
    out = round_sig(frame)
    assert out["f32"].tolist() == [0.3333, 2.0] and out["f32"].dtype == np.float64  # no float32 noise back
    assert out["o"].tolist() == [0.1235, "text"]
    assert round_sig(frame, digits=2)["f32"].tolist() == [0.33, 2.0]


def test_the_table_sends_rounded_numbers_and_keeps_dataframes_frontend():
    frame = pd.DataFrame({"run": ["a"], "loss": [5.617342877388], "steps": [200]})
    table = Table(interactive=False)
    assert table.get_block_name() == "dataframe"
    sent = table.postprocess(frame)
    assert sent.headers == ["run", "loss", "steps"] and sent.data == [["a", 5.617, 200]]
    assert frame["loss"][0] == 5.617342877388
