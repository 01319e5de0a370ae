"""The Train tab's fields for the RNN decoder's local window and coverage: shown for the RNN
seq2seq only, filled from a preset, written back into its TOML (which then trains)."""
from __future__ import annotations

from playground.config import parse_preset
from playground.models.rnn_seq2seq import RNNSeq2SeqConfig
from playground.ui import train_tab as tt

KEYS = ("model.local", "model.local_d", "model.coverage", "model.coverage_weight")


def _field(key: str) -> int:
    return [f.key for f in tt.FORM_FIELDS].index(key)


def test_fields_show_for_the_rnn_with_the_presets_values():
    form = tt.preset_selected("seq2seq-dates-luong-local-p")[3:]
    assert form[_field("model.local")] == {"__type__": "update", "value": "predictive", "visible": True}
    assert form[_field("model.local_d")]["value"] == 4
    assert form[_field("model.coverage")]["value"] is False  # absent: the default
    gpt = tt.preset_selected("nanogpt-cpu-tiny")[3:]
    assert not any(gpt[_field(k)]["visible"] for k in KEYS)


def test_form_edits_write_the_options():
    toml = tt.preset_selected("seq2seq-dates-bahdanau")[0]
    for key, value in zip(KEYS, ("monotonic", 3.0, True, 0.5)):
        toml = tt.set_field(key, toml, value)
    model = parse_preset(toml).model
    assert (model["local"], model["local_d"], model["coverage"], model["coverage_weight"]) == ("monotonic", 3, True, 0.5)
    config = RNNSeq2SeqConfig(vocab_size=20, **model)
    assert (config.local, config.local_d, config.coverage) == ("monotonic", 3, True)
