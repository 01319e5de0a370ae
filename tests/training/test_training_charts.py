"""Train-tab charts (playground.charts.training) and run tables (playground.training.runs)."""
from __future__ import annotations

import pandas as pd
import pytest

from playground.charts.layout import HALF, TRAIN
from playground.charts.training import (
    AXIS_PX,
    TICK_PX,
    bottleneck_chart,
    confusion_chart,
    loss_chart,
    lr_chart,
    step_ticks,
    throughput_chart,
)
from playground.training.engine import run_training
from playground.training.runs import bucket_table, loss_curves, run_rows, runs_table
from tests.training.conftest import tiny_preset


def test_loss_chart_colours_splits_for_one_run_and_runs_for_several():
    one = pd.DataFrame({"step": [1, 2, 2], "split": ["train", "train", "val"], "loss": [3.0, 2.5, 2.6]})
    spec = loss_chart(one).to_dict()
    assert spec["layer"][0]["encoding"]["color"]["field"] == "split"
    many = pd.concat([one.assign(run="a"), one.assign(run="b")])
    spec = loss_chart(many).to_dict()
    assert spec["layer"][0]["encoding"]["color"]["field"] == "run"
    assert spec["layer"][0]["encoding"]["strokeDash"]["field"] == "split"


def test_metric_charts_and_empty_frames():
    steps = pd.DataFrame({"step": [1, 2], "lr": [1e-4, 2e-4], "throughput": [100.0, 120.0]})
    assert lr_chart(steps).to_dict()["encoding"]["y"]["field"] == "lr"
    assert "tokens" in throughput_chart(steps).to_dict()["title"]
    assert loss_chart(pd.DataFrame(columns=["step", "split", "loss"])).to_dict()["title"] == "Loss"


def test_confusion_chart_counts_every_cell():
    spec = confusion_chart([[3, 1], [0, 4]], ["cat", "dog"]).to_dict()
    values = next(iter(spec["datasets"].values()))
    assert sorted((v["true"], v["predicted"], v["count"]) for v in values) == [
        ("cat", "cat", 3), ("cat", "dog", 1), ("dog", "cat", 0), ("dog", "dog", 4)]


def test_bottleneck_chart_plots_accuracy_against_length():
    df = pd.DataFrame({"run": ["a", "a"], "bucket": ["0-9", "10-19"], "length": [0, 10],
                       "exact_match": [1.0, 0.5], "token_accuracy": [1.0, 0.9], "n": [5, 5]})
    enc = bottleneck_chart(df, "token_accuracy").to_dict()["encoding"]
    assert enc["x"]["field"] == "length" and enc["y"]["field"] == "token_accuracy" and enc["color"]["field"] == "run"


def test_run_tables_from_the_workspace(workspace, corpus_file):
    run_training(tiny_preset("rnn_seq2seq", max_steps=4, eval_interval=2), workspace, "s", device="cpu")
    run_training(tiny_preset("gpt", corpus_file, max_steps=2, eval_interval=1), workspace, "g", device="cpu")
    table = runs_table(workspace)
    assert list(table["run"]) == ["g", "s"] and list(table["step"]) == [2, 4]
    assert table.set_index("run").loc["s", "exact_match"] >= 0 and table.set_index("run").loc["g", "unit"] == "tokens"
    rows = run_rows(workspace, ["g", "s", "missing"])
    assert set(rows["run"]) == {"g", "s"} and len(rows) == 4
    curves = loss_curves(rows)
    assert set(curves["split"]) == {"train", "val"} and len(curves) == 8
    buckets = bucket_table(workspace, ["g", "s"])
    assert set(buckets["run"]) == {"s"} and buckets["n"].sum() == 30  # every val pair in one bucket
    assert list(buckets["length"]) == sorted(buckets["length"])


def test_a_first_point_gets_an_axis_around_it_and_a_mark():
    """A live chart's first point: each axis spans its value +- 5% (vega would draw a zero-width
    domain ticked 4.230672), the step axis at least one step each way; the lone train loss is
    drawn as a point."""
    first = pd.DataFrame({"step": [1], "split": ["train"], "loss": [4.230672]})
    spec = loss_chart(first).to_dict()
    line = spec["layer"][0]
    assert line["encoding"]["y"]["scale"]["domain"] == pytest.approx([4.230672 * 0.95, 4.230672 * 1.05])
    assert line["encoding"]["x"]["scale"]["domain"] == [0.0, 2.0]  # whole steps: at least one each way
    assert line["encoding"]["x"]["axis"]["tickCount"] == 2  # ticks 0, 1, 2
    assert line["mark"]["point"] is True
    lr = lr_chart(pd.DataFrame({"step": [1], "lr": [0.0]})).to_dict()
    assert lr["encoding"]["y"]["scale"]["domain"] == [-1.0, 1.0]  # a zero: +-1


def test_more_points_keep_vegas_own_domains():
    curves = pd.DataFrame({"step": [1, 2, 2], "split": ["train", "train", "val"], "loss": [3.0, 2.5, 2.6]})
    line = loss_chart(curves).to_dict()["layer"][0]
    assert "domain" not in line["encoding"]["y"]["scale"] and "domain" not in line["encoding"].get("x", {}).get("scale", {})
    assert line["mark"]["point"] is True  # val has one point so far
    assert line["encoding"]["x"]["axis"]["tickCount"] == 1  # steps 1 to 2: ticks 1, 2
    longer = pd.concat([curves, curves.assign(step=curves["step"] + 2)])
    assert loss_chart(longer).to_dict()["layer"][0]["mark"]["point"] is False
    steps = pd.DataFrame({"step": [1, 2], "throughput": [100.0, 120.0]})
    assert "domain" not in throughput_chart(steps).to_dict()["encoding"]["y"]["scale"]
    many = pd.DataFrame({"step": [10, 500], "throughput": [100.0, 120.0]})
    axis = throughput_chart(many).to_dict()["encoding"]["x"]["axis"]
    assert axis["tickCount"] == step_ticks(HALF) == 3 and axis["labelOverlap"] is True


def test_step_ticks_leave_room_for_their_labels():
    """Resumed at 250 the half-width charts read "200220 240": each tick now has TICK_PX of plot."""
    steps = pd.DataFrame({"step": range(250, 336, 5), "lr": 1e-3, "throughput": 1e4})
    for chart, width in ((lr_chart(steps), HALF), (throughput_chart(steps), HALF)):
        axis = chart.to_dict()["encoding"]["x"]["axis"]
        assert axis["tickCount"] * TICK_PX <= width - AXIS_PX and axis["labelOverlap"] is True
    curves = pd.DataFrame({"step": range(1, 5001, 10), "split": "train", "loss": 2.0})
    assert loss_chart(curves).to_dict()["layer"][0]["encoding"]["x"]["axis"]["tickCount"] == step_ticks(TRAIN) == 6
