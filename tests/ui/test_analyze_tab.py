"""Analyze tab: handlers called directly, and the real app driven through gradio_client."""
from __future__ import annotations

import json
import uuid
from pathlib import Path

import altair as alt
import pandas as pd
import pytest
import torch

from playground.bundle import save_bundle
from playground.ui import analyze_tab as tab
from playground.workspace import Workspace


def _save_gpt(ws: Workspace, name: str) -> None:
    from playground.models.gpt import GPT, GPTConfig
    from playground.tokenization.simple import build_char_tokenizer

    tok = build_char_tokenizer(["the quick brown fox jumps over the lazy dog"], [])
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=tok.get_vocab_size(), block_size=32, n_layer=2, n_head=2, d_model=16)).eval()
    save_bundle(ws, name, model, "gpt", model.config, tokenizer=tok)


def _save_vit(ws: Workspace, name: str) -> None:
    from playground.models.vit import ViT, ViTConfig

    torch.manual_seed(0)
    model = ViT(ViTConfig(image_size=32, patch_size=8, n_classes=4, d_model=16, n_layer=2, n_head=2)).eval()
    save_bundle(ws, name, model, "vit", model.config, class_names=["circle", "square", "triangle", "cross"],
                extra={"sections": {"data": {"dataset": "shapes", "n": 30, "seed": 0, "image_size": 32}}})


def _save_seq2seq(ws: Workspace, name: str) -> None:
    from playground.families import build_model
    from playground.tokenization.simple import build_char_tokenizer

    tok = build_char_tokenizer(["abcdefghij"])
    torch.manual_seed(0)
    model = build_model("transformer_seq2seq", dict(vocab_size=tok.get_vocab_size(), d_model=16, n_head=2, max_len=24))
    save_bundle(ws, name, model, "transformer_seq2seq", model.config, tokenizer=tok,
                extra={"sections": {"data": {"pairs": "copy", "n": 30, "seed": 0}}})


def test_checkpoint_view_per_family(workspace) -> None:
    _save_gpt(workspace, "g")
    _save_vit(workspace, "v")
    _save_seq2seq(workspace, "s")
    g, v, s = (tab.checkpoint_view(workspace, n) for n in ("g", "v", "s"))
    assert g["kind"] == "lm" and not g["samples"] and "loo_delete" in g["methods"]
    assert v["kind"] == "classifier" and v["classes"][0] == "circle" and len(v["samples"]) == 6
    assert "loo_delete" not in v["methods"] and set(v["defaults"]) <= set(v["methods"])
    assert s["kind"] == "seq2seq" and "flow" not in s["methods"] and s["samples"]
    c = tab.checkpoint_changed(workspace, "v")
    assert c.image["visible"] and not c.text["visible"] and c.sample["visible"] and c.target["choices"]
    assert c.target["value"] is None and c.position["value"] == ""  # nothing of the previous model's target stays
    e = c.explanation
    assert e.summary == "" and e.importance is None and e.heads is None and e.files is None
    assert e.agreement == e.grounding == {"__type__": "update", "value": None, "visible": False}  # no empty tables
    assert len(c.values()) == 13  # what gradio gets: the 7 controls, then the 6 parts of the explanation


def test_from_selection_prefills_the_generate_target(workspace) -> None:
    _save_gpt(workspace, "g")
    _save_seq2seq(workspace, "s")
    sel = {"checkpoint": "g", "kind": "lm", "input": "the quick", "input_ids": [5, 6, 7, 8], "target_position": 3,
           "target_token": "c", "target_id": 8, "context": "the qui"}
    picked = tab.from_selection(workspace, sel)
    c, handoff = picked.controls, picked.handoff
    assert picked.checkpoint["value"] == "g" and c.text["value"] == "the qui" and c.position["value"] == ""
    assert c.target["value"] == "#8" and ("'c'  (token #8)", "#8") in c.target["choices"]  # reads as the token
    assert handoff["text"] == "the qui" and handoff["ids"] == [5, 6, 7] and "'c'" in c.about["value"]
    s2s = tab.from_selection(workspace, {"checkpoint": "s", "kind": "seq2seq", "input": "abc", "target_position": 2,
                                         "target_token": "d", "output_ids": [4, 5, 6]})
    assert s2s.controls.text["value"] == "abc" and s2s.controls.position["value"] == "2"
    assert s2s.handoff["output_ids"] == [4, 5, 6]
    assert "'d'" in s2s.controls.about["value"] and "step 2" in s2s.controls.about["value"]
    nothing = tab.from_selection(workspace, {}).values()
    assert len(nothing) == 15 and all(u == {"__type__": "update"} for u in nothing)  # nothing picked: no change


def test_from_selection_hands_a_vit_its_image_and_class(workspace, tmp_path) -> None:
    """The classified image goes to the image input (inverted when it was classified inverted),
    never its path to the text box; the target is the class name."""
    import numpy as np
    from PIL import Image

    _save_vit(workspace, "v")
    path = tmp_path / "img.png"
    pixels = (np.arange(16 * 16 * 3) % 256).astype(np.uint8).reshape(16, 16, 3)
    Image.fromarray(pixels).save(path)
    sel = {"checkpoint": "v", "kind": "classifier", "input": str(path), "invert": False, "target_position": 2,
           "target_token": "triangle"}
    picked = tab.from_selection(workspace, sel)
    c, handoff = picked.controls, picked.handoff
    assert picked.checkpoint["value"] == "v" and c.image["value"] == str(path) and c.image["visible"]
    assert "value" not in c.text and not c.text["visible"]  # the path never lands in the text box
    assert c.target["value"] == "triangle" and "triangle" in c.target["choices"] and c.sample["value"] is None
    assert "class `triangle`" in c.about["value"]
    inverted = tab.from_selection(workspace, {**sel, "invert": True}).controls.image["value"]
    assert np.array_equal(inverted, 255 - pixels)
    # the checkpoint's own change event (fired by the new value) gives the same prefill
    again = tab.checkpoint_changed(workspace, "v", handoff)
    assert again.image["value"] == str(path) and again.target["value"] == "triangle"
    assert tab.checkpoint_changed(workspace, "v", {**handoff, "checkpoint": "other"}).target["value"] is None


def test_readable_image_is_drawn_by_the_image_frontend() -> None:
    """A subclass's own block name has no frontend: the image box would never show."""
    from playground.ui.components import ReadableImage

    assert ReadableImage().get_block_name() == "image"


@pytest.mark.parametrize("family", ["gpt", "vit", "seq2seq"])
def test_run_analysis_draws_and_exports(workspace, family) -> None:
    {"gpt": _save_gpt, "vit": _save_vit, "seq2seq": _save_seq2seq}[family](workspace, "m")
    text = {"gpt": "the lazy dog", "vit": None, "seq2seq": "abcd"}[family]
    sample = 1 if family == "vit" else None
    out = tab.run_analysis(workspace, "cpu", "m", text, None, sample, None, None,
                           ["attention", "rollout", "ig", "loo"], None, None, 16, True)
    summary, chart, agreement, grounding, heads, files = out.values()
    assert "Target" in summary and "Integrated gradients" in summary
    assert isinstance(chart, alt.TopLevelMixin) and isinstance(heads, alt.TopLevelMixin)
    json.loads(chart.to_json())  # serialisable (inline data, no row limit)
    assert agreement["visible"] and isinstance(agreement["value"], pd.DataFrame) and len(agreement["value"]) == 6
    assert grounding["visible"] == (family != "gpt" and family != "seq2seq")
    names = {Path(f).name for f in files}
    assert {"importances.csv", "agreement.csv", "analysis.json", "heads.csv"} <= names
    if family == "vit":
        assert "pointing.csv" in names
    exported = json.loads(Path([f for f in files if f.endswith(".json")][0]).read_text())
    assert set(exported["importances"]) == {"attention", "rollout", "ig", "loo"}


def test_a_shared_servers_cap_bounds_integrated_gradients_steps(workspace) -> None:
    from playground.settings import DEMO_CAPS

    _save_gpt(workspace, "g")
    summary = tab.run_analysis(workspace, "cpu", "g", "the lazy dog", None, None, None, None, ["ig"], None, None,
                               300, True, max_ig_steps=20).summary
    assert "Integrated gradients: 20 steps" in summary  # asked 300, auto-raise on: both held at the cap
    assert DEMO_CAPS.max_ig_steps is not None


def test_user_errors_become_gradio_errors(workspace) -> None:
    import gradio as gr

    from playground.ui.context import user_errors

    _save_gpt(workspace, "g")
    with pytest.raises(gr.Error, match="single token"):
        user_errors(tab.run_analysis)(workspace, "cpu", "g", "the", None, None, None, "quick", ["loo"], None, None,
                                      50, True)
    with pytest.raises(gr.Error, match="Choose a checkpoint"):
        user_errors(tab.run_analysis)(workspace, "cpu", None, "the", None, None, None, None, ["loo"], None, None,
                                      50, True)


def test_the_app_analyzes_through_gradio_client(app_server) -> None:
    from gradio_client import Client

    ws = app_server.library
    name = f"an-{uuid.uuid4().hex[:6]}"
    _save_gpt(ws, name)
    client = Client(app_server.url, verbose=False)
    client.predict(None, api_name="/refresh_analyze_models")
    about = client.predict(name, api_name="/analyze_checkpoint")
    assert "GPT" in str(about[0])
    summary, chart, agreement, grounding, heads, files = client.predict(
        name, "the quick brown", None, None, "5", "", ["attention", "rollout", "saliency", "loo"], "", "", 20, True,
        None, api_name="/analyze")
    assert "after position 5" in summary
    agreement = agreement.get("value", agreement)  # an update that also shows the table
    rows = agreement["data"] if isinstance(agreement, dict) else agreement
    assert len(rows) == 6
    assert len(files) >= 3
