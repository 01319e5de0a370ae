"""Token HTML/table rendering, validation samples from a bundle's data description, and the
Generate charts (tests for playground/charts/generation.py live here with the rest of generation)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from playground.charts.generation import alignment_chart, alignment_frame, class_chart, distribution_chart
from playground.families.vit.examples import display_image
from playground.generation.api import distribution_table
from playground.generation.events import StepEvent
from playground.generation.filters import SamplingConfig
from playground.generation.render import prob_color, token_choices, token_table, tokens_html
from playground.generation.samples import validation_samples


def _events() -> list[StepEvent]:
    return [
        StepEvent(0, 0, 3, 5, "a", 0.9, 0.95, [(5, "a", 0.9), (6, "<b>", 0.05)]),
        StepEvent(0, 1, 4, 7, " ", 0.1, 0.2, [(8, "x", 0.5), (7, " ", 0.1)]),
        StepEvent(0, 2, 5, 2, "", 0.4, 1.0, [(2, "<eos>", 0.4)], stopped=True),
    ]


def test_tokens_html_colours_escapes_and_tooltips():
    html = tokens_html(None, _events(), prompt="<p>", selected=1)
    assert html.count("data-index=") == 3
    assert "&lt;p&gt;" in html and "<p>" not in html  # prompt escaped
    assert "&lt;b&gt;  0.050" in html  # alternatives in the tooltip, escaped
    assert prob_color(0.9) in html and prob_color(0.1) in html
    assert html.count("outline:2px") == 1
    assert "⟨eos⟩" in html
    assert prob_color(0.0) == "hsl(0,75%,82%)" and prob_color(1.0) == "hsl(120,75%,82%)"


def test_token_table_and_choices():
    df = token_table(_events())
    assert df["token"].tolist() == ["a", "␣", "<eos>"]
    assert df["alt1"].iloc[0] == "a 0.900" and df["alt5"].iloc[0] == ""
    assert [v for _, v in token_choices(_events())] == [0, 1, 2]


def test_distribution_chart_spec():
    df = distribution_table(torch.tensor([2.0, 1.0, 0.5, -0.5]), SamplingConfig(temperature=0.5, top_k=2))
    spec = distribution_chart(df).to_dict()
    assert spec["facet"]["row"]["field"] == "stage"
    values = pd.DataFrame(next(iter(spec["datasets"].values())))
    lecture = values[values.stage == "after temperature"].sort_values("rank")["probability"].round(3).tolist()
    assert lecture == [0.839, 0.114, 0.042, 0.006]  # the lecture's T = 0.5 row
    assert values[values.stage == "after top-k"]["status"].tolist().count("kept") == 2


def test_alignment_chart_rows_are_targets_columns_are_sources():
    a = np.array([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8]])
    df = alignment_frame(a, ["x", "y", "z"], ["Y", "<eos>"])
    assert len(df) == 6 and df.loc[(df.target_index == 1) & (df.source_index == 2), "weight"].item() == 0.8
    spec = alignment_chart(df).to_dict()
    assert spec["encoding"]["x"]["field"] == "source_index" and spec["encoding"]["y"]["field"] == "target_index"
    assert '["x", "y", "z"]' in spec["encoding"]["x"]["axis"]["labelExpr"]
    spec = class_chart(pd.DataFrame({"class": ["a", "b"], "probability": [0.7, 0.3]})).to_dict()
    assert spec["mark"]["type"] == "bar"


def test_validation_samples_pairs_images_and_text(workspace, tmp_path, monkeypatch):
    from playground.bundle import load_bundle, save_bundle
    from playground.data.pairs import load_pair_set
    from playground.data.splits import split_indices
    from playground.models.gpt import GPT, GPTConfig
    from playground.models.rnn_seq2seq import RNNSeq2Seq, RNNSeq2SeqConfig
    from playground.models.vit import ViT, ViTConfig
    from playground.tokenization.simple import build_char_tokenizer

    tok = build_char_tokenizer(["abcdefghij"])
    cfg = RNNSeq2SeqConfig(vocab_size=tok.get_vocab_size(), emb_dim=8, hidden=8)
    data = {"pairs": "reverse", "n": 40, "seed": 3, "val_fraction": 0.25, "min_len": 0, "max_len": 0}
    save_bundle(workspace, "rev", RNNSeq2Seq(cfg), "rnn_seq2seq", cfg, tokenizer=tok, data=data)
    samples = validation_samples(load_bundle("rev", workspace), workspace, n=5)
    examples = load_pair_set("reverse", 40, 3)
    _, val = split_indices(40, 0.25, 3)
    assert [s.input for s in samples] == [examples[i].src for i in val[:5]]
    assert all(s.reference == s.input[::-1] for s in samples)

    vcfg = ViTConfig(image_size=8, patch_size=4, channels=1, n_classes=10, d_model=8, n_layer=1, n_head=2)
    save_bundle(workspace, "dig", ViT(vcfg), "vit", vcfg, data={"dataset": "digits", "seed": 0, "val_fraction": 0.2})
    images = validation_samples(load_bundle("dig", workspace), workspace, n=3)
    assert len(images) == 3 and images[0].input.dtype == np.uint8 and images[0].reference in [str(i) for i in range(10)]

    corpus = workspace.root / "uploads" / "corpus.txt"  # the user's own upload (upload:corpus.txt)
    corpus.parent.mkdir(parents=True)
    corpus.write_text("".join(f"line number {i} of the text\n" for i in range(200)), encoding="utf-8")
    ctok = build_char_tokenizer([corpus.read_text()], special_tokens=[])
    gcfg = GPTConfig(vocab_size=ctok.get_vocab_size(), block_size=32, n_layer=1, n_head=1, d_model=8)
    save_bundle(workspace, "txt", GPT(gcfg), "gpt", gcfg, tokenizer=ctok,
                data={"corpus": "upload:corpus.txt", "val_fraction": 0.1, "max_chars": 0})
    prompts = validation_samples(load_bundle("txt", workspace), workspace, n=4)
    assert len(prompts) == 4
    tail = corpus.read_text()[int(len(corpus.read_text()) * 0.9):]
    assert all(p.input in tail and p.input.startswith("line") for p in prompts)

    # a file path recorded in a bundle is never opened for samples, not even an existing one
    outside = tmp_path / "outside.txt"
    outside.write_text(corpus.read_text(), encoding="utf-8")
    save_bundle(workspace, "pth", GPT(gcfg), "gpt", gcfg, tokenizer=ctok,
                data={"corpus": str(outside), "val_fraction": 0.1, "max_chars": 0})
    assert validation_samples(load_bundle("pth", workspace), workspace) == []

    # tinyshakespeare ships with the package: its samples are the tail of the play text
    save_bundle(workspace, "shk", GPT(gcfg), "gpt", gcfg, tokenizer=ctok, data={"corpus": "tinyshakespeare"})
    lines = validation_samples(load_bundle("shk", workspace), workspace, n=3)
    assert len(lines) == 3 and all(s.input.strip() for s in lines)

    # an install without the shipped copy gives no samples instead of downloading it
    from playground.data import corpora

    def refuse(url, timeout=30.0):
        raise AssertionError(f"validation samples must not download ({url})")

    monkeypatch.setattr(corpora, "TINYSHAKESPEARE_SHIPPED", tmp_path / "absent.txt.gz")
    monkeypatch.setattr(corpora, "fetch_url", refuse)
    save_bundle(workspace, "shk-slim", GPT(gcfg), "gpt", gcfg, tokenizer=ctok, data={"corpus": "tinyshakespeare"})
    assert validation_samples(load_bundle("shk-slim", workspace), workspace) == []
    assert not (workspace.cache_dir / "tinyshakespeare.txt").exists()


def test_display_image_round_trips_through_prepare():
    from playground.generation.vision import prepare_image

    img = np.random.default_rng(0).random((1, 8, 8)).astype(np.float32)
    shown = display_image(img)
    assert shown.shape == (128, 128, 3)
    back = prepare_image(shown, 8, 1)
    np.testing.assert_allclose(back.numpy(), img, atol=1 / 255 + 1e-6)
