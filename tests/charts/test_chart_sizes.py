"""Every chart fits its plot box: single and layered views are drawn a fixed width in all
(autosize fit-x: axes, legend and title inside), concatenated and faceted ones size their panels
so that a row of them stays within the box's budget, however many tokens there are."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from playground.charts import (
    analysis,
    experiments,
    generation,
    layout,
    tokenizer,
    training,
)

FIT = {"type": "fit-x", "contains": "padding"}


def _fits(spec: dict, budget: int) -> None:
    assert spec["autosize"] == FIT
    assert isinstance(spec["width"], int) and spec["width"] <= budget


def _steps(n: int = 30) -> pd.DataFrame:
    return pd.DataFrame({"step": np.arange(n), "lr": np.linspace(1e-4, 3e-4, n), "throughput": np.full(n, 12000.0)})


def test_half_width_train_charts_fit_their_small_boxes():
    assert layout.HALF <= 392 - 12 - 40 and layout.HALF <= 328 - 8  # the boxes at 1400 and 1000 px windows
    for chart in (training.lr_chart(_steps()), training.throughput_chart(_steps()),
                  training.lr_chart(_steps().iloc[:0])):
        _fits(chart.to_dict(), layout.HALF)


def test_train_charts_fit_the_two_thirds_column():
    curves = pd.DataFrame({"step": [0, 1, 0, 1], "split": ["train", "train", "val", "val"], "loss": [5.0, 4.0, 5.1, 4.2]})
    buckets = pd.DataFrame({"run": ["a"], "length": [4], "bucket": ["4-7"], "exact_match": [0.5], "n": [3]})
    for chart in (training.loss_chart(curves), training.metric_chart(_steps(), "lr", "lr"),
                  training.confusion_chart([[1] * 12] * 12, [f"class {i}" for i in range(12)]),
                  training.bottleneck_chart(buckets)):
        _fits(chart.to_dict(), layout.TRAIN)


def test_generate_charts_fit_however_many_tokens():
    stages = generation.STAGE_ORDER
    rows = [{"rank": r, "token": f"tok{r}", "stage": s, "probability": 1 / 60, "kept": True}
            for r in range(60) for s in stages]
    spec = generation.distribution_chart(pd.DataFrame(rows)).to_dict()
    assert spec["spec"]["width"] + 240 <= layout.GENERATE  # bars + stage names and the p axis
    tokens = [f"w{i}" for i in range(60)]
    frame = generation.alignment_frame(np.full((60, 60), 1 / 60), tokens, tokens)
    _fits(generation.alignment_chart(frame).to_dict(), layout.GENERATE)
    _fits(generation.class_chart(pd.DataFrame({"class": ["a", "b"], "probability": [0.6, 0.4]})).to_dict(),
          layout.GENERATE)


def _importance(n_units: int, n_rows: int = 1, methods=("attention", "ig", "saliency", "ixg", "loo")) -> pd.DataFrame:
    return pd.DataFrame([{"method": m, "row": r, "row_label": f"out{r}", "unit": u, "unit_label": f"token{u}",
                          "special": False, "value": float(u + 1)}
                         for m in methods for r in range(n_rows) for u in range(n_units)])


@pytest.mark.parametrize("n_units", [5, 200])
def test_token_strips_fit_the_analyze_box(n_units):
    _fits(analysis.token_strips_chart(_importance(n_units)).to_dict(), layout.FULL)


@pytest.mark.parametrize("n_units", [6, 20, pytest.param(60, marks=pytest.mark.slow)])  # 60 units: about 9 s
def test_seq2seq_matrices_row_fits_the_analyze_box(n_units):
    spec = analysis.matrices_chart(_importance(n_units, n_rows=n_units)).to_dict()
    row = spec["vconcat"][0]["hconcat"]
    assert len(row) == 3
    assert sum(panel["width"] + 130 for panel in row) + 120 <= layout.FULL  # + labels per panel, one legend
    assert all(panel["encoding"]["y"]["axis"]["labelLimit"] <= 130 - 30 for panel in row)


@pytest.mark.parametrize("n_heads", [3, 16])
def test_head_grid_row_fits_the_analyze_box(n_heads):
    from types import SimpleNamespace

    maps = np.full((2, n_heads, 4, 4), 0.25, dtype=np.float32)
    heads = SimpleNamespace(maps=maps, entropy=np.ones((2, n_heads)), kind="tokens", query_labels=list("abcd"),
                            key_labels=list("abcd"))
    spec = analysis.head_grid_chart(analysis.head_frame(heads), n_heads=n_heads).to_dict()
    assert n_heads * (spec["spec"]["width"] + 24) <= layout.FULL


def test_experiment_charts_fit_the_experiments_box():
    many = 120
    _fits(experiments.attention_pair_chart([f"u{i}" for i in range(many)], [1 / many] * many, [1 / many] * many)
          .to_dict(), layout.FULL)
    pairs = pd.DataFrame([{"example": e, "method_a": "attention", "method_b": m, "tau": 0.1, "p_value": 0.5}
                          for e in range(3) for m in ("saliency", "ixg", "ig", "loo")])
    _fits(experiments.agreement_chart(pairs).to_dict(), layout.FULL)
    _fits(experiments.adversarial_chart(pd.DataFrame({"max_jsd": [0.1, 0.3]})).to_dict(), layout.FULL)


def test_tokenizer_charts_fit_the_charts_sub_tab():
    lengths = pd.DataFrame({"length_bytes": [1, 2], "vocabulary_share": [0.5, 0.5], "corpus_share": [0.7, 0.3]})
    sweep = pd.DataFrame({"vocab_size": [256, 512], "chars_per_token": [1.0, 1.5], "tokens_per_word": [4.0, 3.0]})
    summary = pd.DataFrame({"tokenizer": ["a", "b"], "tokens": [10, 12], "chars_per_token": [1.0, 0.8],
                            "tokens_per_word": [2.0, 2.4], "vocab_size": [256, 512]})
    for chart in (tokenizer.token_length_chart(lengths), tokenizer.compression_chart(sweep, 256),
                  tokenizer.comparison_chart(summary)):
        _fits(chart.to_dict(), layout.TOKENIZER)
