"""Deep links in the built app: the load handler opens a tab with a preset and settings filled."""
from __future__ import annotations

import types

import gradio as gr
import pytest

from playground.config import list_presets
from playground.deeplink import parse_query
from playground.settings import DEMO_CAPS, make_settings
from playground.ui.deeplink_view import link_query, load_updates
from playground.ui.train_tab import FORM_FIELDS


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    app = build(tmp_path_factory.mktemp("deeplink-ws"))
    return app, _fn(app, "deep_link")


def build(root):
    from playground.ui.app import build_app

    return build_app(make_settings(root, device="cpu", app=True))


def _fn(app: gr.Blocks, api_name: str):
    return next(f for f in app.fns.values() if f.api_name == api_name)


def _value(update):
    return update.get("value") if isinstance(update, dict) else update


def test_load_updates_fill_the_train_tab():
    link = parse_query({"tab": "train", "preset": "vit-digits", "set": ["train.max_steps=50", "model.n_layer=3",
                                                                        "model.n_layer=lots"]}, list_presets())
    tab, values, notices = load_updates(link, "", DEMO_CAPS)
    assert tab == "train" and len(values) == 4 + len(FORM_FIELDS)
    preset, text, description, name, *form = values
    assert preset == "vit-digits" and "max_steps = 50" in text and "n_layer = 3" in text
    assert "vit-digits" in description and _value(name) == "vit-digits"
    by_key = {f.key: _value(u) for f, u in zip(FORM_FIELDS, form)}
    assert by_key["train.max_steps"] == 50 and by_key["model.n_layer"] == 3
    assert len(notices) == 1 and "model.n_layer='lots'" in notices[0]


def test_load_handler_is_registered_and_reads_query_params(built):
    app, block_fn = built
    assert block_fn.outputs[0].elem_id == "deeplink-tab" and block_fn.outputs[1].elem_id == "train-preset"
    toml = block_fn.inputs[0]
    assert toml.elem_id == "train-toml"
    request = types.SimpleNamespace(query_params={"preset": "nanogpt-cpu-tiny", "set": "train.max_steps=300"})
    out = block_fn.fn(toml.value, request)
    assert out[0] == "train"  # the tab id; the browser then clicks that tab (playground.ui.tab_switch)
    assert out[1] == "nanogpt-cpu-tiny" and "max_steps = 300" in out[2]
    plain = block_fn.fn(toml.value, types.SimpleNamespace(query_params={}))
    assert all(isinstance(v, type(gr.skip())) for v in plain)  # a plain visit changes nothing


def test_tab_only_and_unknown_links(built):
    _, block_fn = built
    out = block_fn.fn("", types.SimpleNamespace(query_params={"tab": "analyze"}))
    assert out[0] == "analyze"
    assert all(isinstance(v, type(gr.skip())) for v in out[1:])
    out = block_fn.fn("", types.SimpleNamespace(query_params={"tab": "nope", "preset": "/etc/passwd"}))
    assert all(isinstance(v, type(gr.skip())) for v in out)  # only notices


def test_link_button_writes_the_query(built):
    app, _ = built
    assert _fn(app, "train_link") is not None
    from playground.config import load_preset
    from playground.training.config import preset_to_toml

    preset = load_preset("nanogpt-cpu-tiny")
    preset.train["max_steps"] = 300
    assert link_query("nanogpt-cpu-tiny", preset_to_toml(preset)) == "?tab=train&preset=nanogpt-cpu-tiny&set=train.max_steps=300"
    assert link_query("nanogpt-cpu-tiny", "not = [toml") == ""


@pytest.mark.parametrize("name", ["nanogpt-cpu-tiny", "textclf-reviews-bilstm-additive", "vit-digits",
                                  "seq2seq-dates-bahdanau"])
def test_the_link_names_only_what_the_user_changed(name):
    """The form writes every field into the TOML when one is left, the preset's omitted ones at the
    defaults it showed: the link lists none of those, only the field the user edited."""
    from playground.ui import train_tab

    text, _, _, *form = train_tab.preset_selected(name)
    values = [u.get("value") for u in form]
    assert link_query(name, train_tab.sync_form(text, None, *values)) == f"?tab=train&preset={name}"
    values[[f.key for f in train_tab.FORM_FIELDS].index("train.max_steps")] = 123
    assert link_query(name, train_tab.sync_form(text, None, *values)) == \
        f"?tab=train&preset={name}&set=train.max_steps=123"


def test_every_tab_of_the_app_can_be_linked():
    from playground.deeplink import TAB_IDS
    from playground.ui.app import TABS

    assert set(TAB_IDS) == {tab_id for tab_id, _, _ in TABS}


def test_deep_link_over_http(app_server):
    """Browser-free end to end: the load endpoint reads the query of the request that calls it."""
    import httpx

    url = app_server.url.rstrip("/")
    r = httpx.post(f"{url}/gradio_api/run/deep_link?preset=vit-digits&set=train.max_steps=40",
                   json={"data": [""]}, timeout=60)
    assert r.status_code == 200, r.text
    data = r.json()["data"]
    assert data[1] == "vit-digits" and "max_steps = 40" in data[2]
