"""The Train tab for a text classifier: its form fields show, a CSV upload points the preset at it."""
from __future__ import annotations

from playground.config import parse_preset
from playground.settings import make_settings
from playground.ui import train_tab as tt


def _field(key: str) -> int:
    return [f.key for f in tt.FORM_FIELDS].index(key)


def test_text_classifier_preset_shows_its_fields_and_takes_a_csv(workspace, tmp_path) -> None:
    toml, description, name, *form = tt.preset_selected("textclf-reviews-bilstm-additive")
    assert parse_preset(toml).family == "text_classifier" and "rationale" in description
    assert form[_field("model.encoder")] == {"__type__": "update", "value": "bilstm", "visible": True}
    assert form[_field("data.texts")]["value"] == "reviews" and form[_field("model.attention")]["visible"] is True
    assert form[_field("model.patch_size")]["visible"] is False and form[_field("data.pairs")]["visible"] is False
    app = make_settings(workspace.root, device="cpu", app=True)
    upload = tmp_path / "gradio" / "sst.csv"
    upload.parent.mkdir()
    upload.write_text("text,label\ngood,1\nbad,0\n", encoding="utf-8")
    preset = parse_preset(tt.use_upload(workspace, app, toml, str(upload)))
    assert (preset.data["texts"], preset.data["path"]) == ("csv", "upload:sst.csv")
