"""Generate tab: handlers called directly, and the real app driven through gradio_client."""
from __future__ import annotations

import dataclasses
import uuid

import numpy as np
import pandas as pd
import pytest
import torch

from playground.ui.generate_tab import (
    Env,
    classify,
    distribution,
    explain,
    generate_text,
    pick_sample,
    refresh_models,
    select_model,
    show_token,
    table_select,
)

TEXT = "the quick brown fox jumps over the lazy dog.\n"
GREEDY = dict(temperature=0.0, top_k=0, top_p=1.0, min_p=0.0, rep=1.0, freq=0.0, pres=0.0)


def _save_gpt(ws, name: str) -> None:
    from playground.bundle import save_bundle
    from playground.models.gpt import GPT, GPTConfig
    from playground.tokenization.simple import build_char_tokenizer

    tok = build_char_tokenizer([TEXT], special_tokens=[])
    cfg = GPTConfig(vocab_size=tok.get_vocab_size(), block_size=16, n_layer=1, n_head=2, d_model=16)
    torch.manual_seed(0)
    save_bundle(ws, name, GPT(cfg), "gpt", cfg, tokenizer=tok, step=3, metrics={"val_loss": 3.1})


def _save_vit(ws, name: str) -> None:
    from playground.bundle import save_bundle
    from playground.models.vit import ViT, ViTConfig

    cfg = ViTConfig(image_size=8, patch_size=4, channels=1, n_classes=10, d_model=16, n_layer=1, n_head=2)
    save_bundle(ws, name, ViT(cfg), "vit", cfg, class_names=[str(i) for i in range(10)],
                data={"dataset": "digits", "n": 0, "seed": 0, "val_fraction": 0.2})


def _gen(env, name, prompt="the", max_new=12, seed=None, num_samples=1, stop="", beam_width=1, alpha=0.0, **knobs):
    k = {**GREEDY, **knobs}
    outs = list(generate_text(env, name, prompt, k["temperature"], k["top_k"], k["top_p"], k["min_p"], k["rep"],
                              k["freq"], k["pres"], max_new, seed, num_samples, stop, beam_width, alpha))
    return outs


@pytest.fixture
def env(workspace):
    _save_gpt(workspace, "g")
    return Env(workspace, "cpu", None)


def test_refresh_lists_models(env):
    update = refresh_models(env, None)
    assert update["choices"] == ["g"] and update["value"] == "g"


def test_select_model_adapts_controls(env, workspace):
    from tests.generation.conftest import _seq2seq_bundle

    _save_vit(workspace, "v")
    _seq2seq_bundle(workspace, "rnn_seq2seq", "s")
    gpt = select_model(env, "g")
    assert "gpt" in gpt.info and gpt.prompt["label"] == "Prompt" and gpt.prompt["visible"]
    assert gpt.lm_group["visible"] and not gpt.s2s_group["visible"] and not gpt.image_col["visible"]  # sampling shown
    s2s = select_model(env, "s")
    assert s2s.prompt["label"] == "Source" and s2s.s2s_group["visible"] and not s2s.lm_group["visible"]
    vit = select_model(env, "v")
    assert vit.image_col["visible"] and not vit.prompt["visible"] and vit.classify_btn["visible"]
    assert not vit.gen_btn["visible"]
    assert not vit.max_new["visible"] and gpt.max_new["visible"]  # max new tokens only for text models
    assert vit.stats == gpt.stats == select_model(env, None).stats == ""  # the previous model's stats line goes
    assert len(vit.sample["choices"]) == 20  # digits validation images, rebuilt from the seed
    assert len(vit.values()) == len(dataclasses.fields(vit)) == 22  # what gradio gets, in wired order
    assert not gpt.routing_csv["visible"] and not vit.routing_csv["visible"]  # expert routing: MoE models only
    assert gpt.context["visible"] and gpt.length_box["visible"]  # window / extend and the loss per position: GPT only
    assert not vit.context["visible"] and not s2s.context["visible"] and not s2s.length_box["visible"]
    _, image = pick_sample(env, "v", vit.sample["choices"][0])
    assert isinstance(image, np.ndarray) and image.shape[2] == 3


def test_generate_streams_and_fills_table_picker_and_state(env):
    outs = _gen(env, "g", max_new=12)
    html, stats, table, _, state, picker, table_csv, _, _, _, _ = outs[-1].values()
    assert html.count("data-index=") == 12
    assert "12 tokens" in stats
    assert isinstance(table, pd.DataFrame) and len(table) == 12
    assert list(table.columns[:5]) == ["sample", "index", "token", "token_id", "probability"]
    assert state["checkpoint"] == "g" and len(state["done"].samples[0].ids) == 12
    assert len(picker["choices"]) == 12 and picker["choices"][3][1] == "0:3"
    assert pd.read_csv(table_csv).shape[0] == 12
    # the streamed text is the greedy continuation
    from playground.bundle import cached_bundle
    from playground.generation import GenerateRequest, SamplingConfig, generate

    bundle = cached_bundle("g", env.workspace, "cpu")
    ref = generate(bundle, GenerateRequest(prompt="the", max_new_tokens=12, sampling=SamplingConfig(temperature=0)))
    assert state["done"].samples[0].ids == ref.samples[0].ids


def test_demo_cap_limits_new_tokens(workspace):
    _save_gpt(workspace, "g")
    capped = Env(workspace, "cpu", 5)
    state = _gen(capped, "g", max_new=50)[-1].result
    assert len(state["done"].samples[0].ids) == 5


def test_several_samples_and_seed(env):
    a = _gen(env, "g", max_new=8, seed=11, num_samples=3, temperature=1.5)[-1]
    b = _gen(env, "g", max_new=8, seed=11, num_samples=3, temperature=1.5)[-1]
    assert [s.ids for s in a.result["done"].samples] == [s.ids for s in b.result["done"].samples]
    assert a.output.count("Sample ") == 3 and len(a.table) == 24
    assert "seed **11**" in a.stats


def test_distribution_follows_the_knobs_and_the_picked_token(env):
    chart, csv = distribution(env, "g", "the", 1.0, 3, 1.0, 0.0, None, None)
    df = pd.read_csv(csv)
    assert chart is not None
    assert df[df.stage == "after top-k"]["kept"].sum() == 3
    _, csv1 = distribution(env, "g", "the", 1.0, 1, 1.0, 0.0, None, None)
    assert pd.read_csv(csv1).query("stage == 'after top-k'")["kept"].sum() == 1
    state = _gen(env, "g", max_new=6)[-1].result
    _, csv2 = distribution(env, "g", "the", 1.0, 0, 1.0, 0.0, state, "0:4")
    df2 = pd.read_csv(csv2)
    # before token #4 the most likely token under greedy decoding is token #4 itself
    top = df2[(df2.stage == "model (T = 1)") & (df2["rank"] == 1)]["token_id"].item()
    assert top == state["done"].samples[0].ids[4]
    # a character outside the vocabulary while typing: no chart, no error popup
    assert distribution(env, "g", "thé", 1.0, 0, 1.0, 0.0, None, None) == (None, None)


def test_pick_token_outline_table_select_and_explain(env):
    state = _gen(env, "g", max_new=6)[-1].result
    html = show_token(state, "0:2")
    assert html.count("outline:2px") == 1
    table = _gen(env, "g", max_new=6)[-1].table

    class Evt:
        index = [4, 1]

    assert table_select(Evt(), table) == "0:4"
    selection = explain(state, "0:2", {})
    assert selection["checkpoint"] == "g" and selection["target_position"] == 3 + 2
    assert set(selection) >= {"checkpoint", "input", "target_position", "target_token"}
    from playground.errors import PlaygroundError

    with pytest.raises(PlaygroundError):
        explain(None, None, {})


def test_seq2seq_generate_gives_alignment(workspace):
    from tests.generation.conftest import _seq2seq_bundle

    _seq2seq_bundle(workspace, "transformer_seq2seq", "t")
    env = Env(workspace, "cpu", None)
    outputs = _gen(env, "t", prompt="abcd", max_new=10, beam_width=3, alpha=0.6)[-1].values()
    html, stats, table, plot, state, picker, _, align_csv, _, _, _ = outputs
    assert plot is not None and "beam 3" in stats
    df = pd.read_csv(align_csv)
    sample = state["done"].samples[0]
    assert df.shape[0] == sample.alignment.size
    assert "Output:" in html
    selection = explain(state, "0:0", None)
    assert selection["input"] == "abcd" and selection["target_position"] == 0


def test_classify_image(workspace, tmp_path):
    from PIL import Image

    _save_vit(workspace, "v")
    env = Env(workspace, "cpu", None)
    path = tmp_path / "img.png"
    Image.fromarray((np.random.default_rng(0).random((16, 16)) * 255).astype(np.uint8)).save(path)
    chart, df, stats, csv, state, picker = classify(env, "v", str(path), False)
    assert chart is not None and len(df) == 10 and df["probability"].sum() == pytest.approx(1.0, abs=1e-5)
    assert "Predicted" in stats and pd.read_csv(csv).shape == (10, 3)
    top_class = df["class"].iloc[0]
    assert picker["choices"][0][1] == f"c:{int(top_class)}"  # class names are "0".."9" here
    selection = explain(state, picker["choices"][0][1], {})
    assert selection == {"checkpoint": "v", "kind": "classifier", "input": str(path), "invert": False,
                         "target_position": int(top_class), "target_token": top_class}
    assert distribution(env, "v", "", 1.0, 0, 1.0, 0.0, state, None) == (None, None)


def test_through_the_app(app_server):
    from gradio_client import Client
    from gradio_client.exceptions import AppError


    name = f"gen-{uuid.uuid4().hex[:6]}"
    _save_gpt(app_server.library, name)
    client = Client(app_server.url, verbose=False)
    update = client.predict(None, api_name="/refresh_generate_models")
    assert name in [c[0] for c in update["choices"]]
    info = client.predict(name, api_name="/generate_select_model")[0]
    assert name in info
    out = client.predict(name, "the", 0.0, 0, 1.0, 0.0, 1.0, 0.0, 0.0, 10, 5, 1, "", 1, 0.0, api_name="/generate_text")
    html, stats = out[0], out[1]
    assert html.count("data-index=") == 10 and "10 tokens" in stats and "seed **5**" in stats
    plot = client.predict(name, "the", 0.8, 4, 0.9, 0.0, None, api_name="/generate_distribution")[0]
    assert plot["type"] == "altair"
    with pytest.raises(AppError, match="outside this model's vocabulary"):
        client.predict(name, "thé", 0.0, 0, 1.0, 0.0, 1.0, 0.0, 0.0, 10, 5, 1, "", 1, 0.0, api_name="/generate_text")


def test_the_streaming_stats_line_counts_in_words():
    from playground.ui.generate_tab import streaming_stats

    assert [streaming_stats(n) for n in (1, 2, 0)] == ["generating… 1 token", "generating… 2 tokens",
                                                       "generating… 0 tokens"]
