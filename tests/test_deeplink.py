"""playground.deeplink: query -> DeepLink, settings checked against the preset's family and caps."""
from __future__ import annotations

from playground.config import list_presets, load_preset
from playground.deeplink import DeepLink, apply_settings, exercise_query, parse_query, parse_value
from playground.settings import DEMO_CAPS

PRESETS = list_presets()


def test_parse_query_reads_tab_preset_and_settings():
    link = parse_query([("tab", "train"), ("preset", "nanogpt-cpu-tiny"), ("set", "train.max_steps=300"),
                        ("set", "model.n_layer = 2")], PRESETS)
    assert link == DeepLink("train", "nanogpt-cpu-tiny", (("train.max_steps", "300"), ("model.n_layer", "2")), ())
    assert parse_query({"preset": "vit-digits"}, PRESETS).tab == "train"  # a preset implies the Train tab
    assert parse_query({"tab": "analyze"}, PRESETS) == DeepLink(tab="analyze")
    assert parse_query({"tab": "lessons"}, PRESETS) == DeepLink(tab="lessons")  # every top-level tab
    assert parse_query({}, PRESETS).empty and parse_query({"__theme": "dark"}, PRESETS).empty


def test_parse_query_skips_unknown_things_with_notices():
    link = parse_query({"tab": "admin", "preset": "../../etc/passwd", "set": ["nodot=1", "os.system=1", "train.lr"]},
                       PRESETS)
    assert link.tab is None and link.preset is None and link.settings == ()
    text = " ".join(link.notices)
    assert "no tab 'admin'" in text and "no preset" in text and text.count("skipped set=") == 3
    many = parse_query({"set": [f"train.seed={i}" for i in range(100)]}, PRESETS)
    assert len(many.settings) == 30 and any("first 30" in n for n in many.notices)


def test_parse_value():
    assert parse_value("300") == 300 and parse_value("3e-4") == 3e-4 and parse_value("true") is True
    assert parse_value("rope") == "rope" and parse_value('"quoted"') == "quoted" and parse_value("[1, 2]") == "[1, 2]"


def test_apply_settings_checks_keys_types_caps_and_paths():
    preset = load_preset("nanogpt-cpu-tiny")
    new, applied, notices = apply_settings(preset, [
        ("train.max_steps", "300"), ("model.n_layer", "2"), ("model.pos_encoding", "rope"),  # fine
        ("model.n_layer", "two"),  # wrong type
        ("model.no_such_key", "1"),  # unknown key
        ("model.pos_encoding", "sideways"),  # not a choice
        ("data.corpus", "/etc/passwd"), ("data.corpus", "~/secrets.txt"), ("data.path", "x"),  # files
        ("train.max_steps", "1000000"),  # over the demo cap
    ], DEMO_CAPS)
    assert applied == {"train.max_steps": 300, "model.n_layer": 2, "model.pos_encoding": "rope"}
    assert new.train["max_steps"] == 300 and new.model["n_layer"] == 2 and preset.model["n_layer"] == 4
    assert new.data["corpus"] == "tinyshakespeare"
    assert len(notices) == 7 and all(n.startswith("Link: skipped") for n in notices)
    assert sum("path" in n or "files" in n for n in notices) == 3


def test_exercise_query_round_trips():
    original = load_preset("nanogpt-cpu-tiny")
    edited, _, _ = apply_settings(original, [("train.max_steps", "300"), ("model.attn_scale", "false")])
    query = exercise_query("nanogpt-cpu-tiny", edited, original)
    assert query == "?tab=train&preset=nanogpt-cpu-tiny&set=model.attn_scale=false&set=train.max_steps=300"
    from urllib.parse import parse_qsl

    link = parse_query(parse_qsl(query[1:]), PRESETS)
    again, _, notices = apply_settings(load_preset(link.preset), link.settings)
    assert again == edited and not notices
