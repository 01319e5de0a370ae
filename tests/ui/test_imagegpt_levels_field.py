"""The Train form's grey-levels field (ImageGPT's data.levels): shown for ImageGPT only, filled from
the preset, written back into the TOML panel, and bounded when the run is resolved."""
from __future__ import annotations

import pytest

from playground.config import parse_preset
from playground.errors import ConfigError
from playground.families.imagegpt.pixels import MAX_LEVELS, MIN_LEVELS
from playground.training.spec import resolve_run
from playground.ui import train_tab as tt

KEY = "data.levels"


def _index() -> int:
    return [f.key for f in tt.FORM_FIELDS].index(KEY)


def test_levels_shows_for_imagegpt_only_with_the_presets_value():
    form = tt.preset_selected("imagegpt-digits")[3:]
    assert form[_index()] == {"__type__": "update", "value": 4, "visible": True}
    assert not tt.preset_selected("nanogpt-cpu-tiny")[3:][_index()]["visible"]
    assert not tt.preset_selected("vit-digits")[3:][_index()]["visible"]  # an image set without levels
    assert f"{MIN_LEVELS} to {MAX_LEVELS}" in tt.FORM_FIELDS[_index()].info


def test_levels_round_trips_through_the_toml_panel():
    toml = tt.preset_selected("imagegpt-digits")[0]
    edited = tt.set_field(KEY, toml, 8.0)  # gr.Number sends a float
    assert parse_preset(edited).data["levels"] == 8
    assert tt.form_updates(edited)[_index()]["value"] == 8  # the panel's text fills the field back
    values = [u.get("value") for u in tt.form_updates(edited)]
    values[_index()] = 6
    synced = tt.apply_form(edited, values)  # Start reads every field as shown
    assert parse_preset(synced).data["levels"] == 6
    assert resolve_run(parse_preset(synced)).data.levels == 6


@pytest.mark.parametrize("bad", [1, 11, 10**18, -3])
def test_levels_out_of_bounds_is_refused_before_the_run(bad):
    toml = tt.set_field(KEY, tt.preset_selected("imagegpt-digits")[0], bad)
    with pytest.raises(ConfigError, match=f"data.levels must be a whole number from {MIN_LEVELS} to {MAX_LEVELS}"):
        resolve_run(parse_preset(toml))


def test_levels_that_is_not_a_number_gets_a_clear_message():
    toml = tt.preset_selected("imagegpt-digits")[0]
    values = [u.get("value") for u in tt.form_updates(toml)]
    values[_index()] = "many"
    with pytest.raises(ConfigError, match="Grey levels must be a number"):
        tt.apply_form(toml, values)
