"""The Experiments view: handlers called directly, and the view served and driven through gradio_client."""
from __future__ import annotations

import json
from pathlib import Path

import gradio as gr
import pandas as pd
import pytest
import torch

from playground.config import Preset
from playground.errors import PlaygroundError
from playground.settings import make_settings
from playground.ui import experiments_view as view
from playground.workspace import Workspace

TRAIN = {"max_steps": 2, "batch_size": 4, "eval_interval": 2, "eval_iters": 1, "warmup_steps": 1, "log_interval": 1,
         "save_optimizer": False, "preview": False}
RUN_DEFAULTS = dict(n=3, seed=0, module=None, heads="all", epsilon="default", n_perm=10, steps=5, k=2,
                    views=["attention"], references=["saliency", "loo"], methods=[], level="attention", seeds="1",
                    retrain_steps=None)


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    from playground.training.engine import run_training
    from playground.workspace import Workspace

    root = tmp_path_factory.mktemp("exp-view")
    corpus = root / "corpus.txt"
    corpus.write_text("a stitch in time saves nine. " * 50, encoding="utf-8")
    settings = make_settings(root / "ws", device="cpu")
    ws = Workspace(settings.workspace)
    torch.manual_seed(0)
    preset = Preset("tiny", "gpt", model={"block_size": 12, "n_layer": 2, "n_head": 2, "d_model": 16},
                    data={"corpus": str(corpus), "tokenizer": "char"}, train=dict(TRAIN))
    run_training(preset, ws, "tiny", device="cpu")
    return ws, settings


def run(env, experiment, **kw):
    ws, settings = env
    args = {**RUN_DEFAULTS, **kw}
    return list(view.run_experiment(ws, settings, "tiny", experiment, *args.values()))


def test_run_handler_yields_summary_chart_table_and_files(env):
    outputs = run(env, "permutation")
    last = outputs[-1]
    status, summary, chart, table, files = last.status, last.summary, last.chart, last.table, last.files
    result_path, slider, adversarial_box = last.result_path, last.example, last.adversarial_box
    assert outputs[0].status.startswith("Running: Random permutation (J&W) on 3 examples")  # before any example is done
    assert outputs[0].summary == {"__type__": "update"}  # nothing else changes before an example is done
    assert status.startswith("Done: 3 of 3") and "median TVD" in summary and "What it cannot show" in summary
    assert adversarial_box == {"__type__": "update", "visible": False}  # its controls only with an adversarial result
    assert chart.to_dict() and isinstance(table, pd.DataFrame) and not table.empty
    assert [Path(f).suffix for f in files] == [".csv", ".json"] and all(Path(f).is_file() for f in files)
    assert len(pd.read_csv(files[0])) == 3 and result_path == files[1]
    assert slider["maximum"] == 2


def test_adversarial_example_chart(env):
    outputs = run(env, "adversarial")
    result_path = outputs[-1].result_path
    assert outputs[-1].adversarial_box == {"__type__": "update", "visible": True}
    data = json.loads(Path(result_path).read_text())
    assert data["experiment"] == "adversarial" and set(data["extra"]["units"]) == set(data["extra"]["attention"])
    chart = view.show_example(result_path, 1).to_dict()
    values = chart["data"]["values"] if "values" in chart.get("data", {}) else next(iter(chart["datasets"].values()))
    assert {v["which"] for v in values} <= {"original", "adversarial"} and len(values) >= 2
    assert view.show_example(None, 0).to_dict()  # a hint, not an error


def test_module_choices_and_options(env):
    ws, settings = env
    update = view.module_update(ws, settings, "tiny")
    assert update["choices"][0] in ("blocks.1.attn", ("blocks.1.attn", "blocks.1.attn")) and len(update["choices"]) == 2
    assert view.module_update(ws, settings, None)["choices"] == []
    demo = make_settings(settings.workspace, device="cpu", demo=True)
    opts = view.build_options(demo, 400, 1, "blocks.0.attn", "0,1", "0.01", 50, 100, 3, ["attention"], ["loo"], [],
                              "input", "3,4", 20)
    assert opts.n == demo.caps.max_analysis_examples and opts.heads == [0, 1] and opts.epsilon == 0.01
    assert opts.seeds == (3, 4) and opts.level == "input" and opts.max_steps_cap == demo.caps.max_train_steps


def test_errors_are_user_errors(env):
    from playground.errors import PlaygroundError

    with pytest.raises(PlaygroundError, match="checkpoint"):
        list(view.run_experiment(env[0], env[1], None, "permutation", *RUN_DEFAULTS.values()))
    with pytest.raises(PlaygroundError, match="checkpoint"):
        list(view.retrain_uniform(env[0], env[1], None, 2, 0))


def test_retrain_uniform_saves_a_uniform_copy(env):
    from playground.bundle import load_bundle

    ws, settings = env
    *_, (status, version) = list(view.retrain_uniform(ws, settings, "tiny", 2, 7))
    assert version == 8 and "tiny-uniform" in status
    copy = load_bundle("tiny-uniform", ws)
    assert copy.model_config.uniform_attention and not load_bundle("tiny", ws).model_config.uniform_attention


def _context(settings, tabs, version=None, selection=None, library=None):
    """An AppContext whose users see `library` (default: the env's workspace) as a read-only shelf."""
    from playground.spaces import Spaces
    from playground.ui.context import AppContext

    spaces = Spaces(settings.workspace.parent / "app-root", [library or settings.workspace])
    return AppContext(settings, spaces, version or gr.State(0), selection or gr.State({}), tabs, gr.State(None))


def _mini_app(settings, library=None):
    with gr.Blocks() as app:
        version, selection = gr.State(0), gr.State({})
        with gr.Tabs() as tabs:
            ctx = _context(settings, tabs, version, selection, library)
            with gr.Tab("Experiments"):
                view.build(ctx)
        for fn, inputs, outputs, api_name in ctx.refreshers:
            app.load(fn, inputs, outputs, api_name=api_name)
    return app


def test_view_accepts_a_shared_checkpoint_dropdown(env):
    settings = env[1]
    with gr.Blocks() as app:
        with gr.Tabs() as tabs:
            ctx = _context(settings, tabs)
            shared = gr.Dropdown(choices=["tiny"], value="tiny", label="Checkpoint")
            with gr.Tab("Experiments"):
                view.build(ctx, shared)
    names = {d.api_name for d in app.fns.values()}
    assert "experiments_run" in names  # the shared dropdown is refreshed by its owner; the view's own second-model one here
    assert [api_name for *_, api_name in ctx.refreshers] == ["refresh_experiments_second_models"]
    run_fn = next(d for d in app.fns.values() if d.api_name == "experiments_run")
    assert run_fn.inputs[0] is ctx.user and run_fn.inputs[1] is shared


def test_view_builds_inside_a_tab_and_runs_through_the_api(env):
    from gradio_client import Client

    # An app user's experiment never opens a path, so the library's bundle is trained on a built-in
    # corpus (the env's "tiny" came from a file path, which only the CLI may read).
    from playground.training.engine import run_training
    from tests.conftest import free_port

    library = env[1].workspace.parent / "library"
    torch.manual_seed(0)
    run_training(Preset("tiny", "gpt", model={"block_size": 12, "n_layer": 2, "n_head": 2, "d_model": 16},
                        data={"corpus": "python-docs", "tokenizer": "char"}, train=dict(TRAIN)),
                 Workspace(library), "tiny", device="cpu")
    app = _mini_app(env[1], library)
    names = {d.api_name for d in app.fns.values()}
    assert {"experiments_run", "experiments_stop", "experiments_example", "experiments_modules",
            "experiments_retrain_uniform", "refresh_experiments_models"} <= names
    port = free_port()
    app.queue().launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    try:
        client = Client(f"http://127.0.0.1:{port}/", verbose=False)
        choices = client.predict(None, api_name="/refresh_experiments_models")
        assert "tiny" in json.dumps(choices)
        out = client.predict("tiny", "permutation", 2, 0, None, "all", "default", 5, 5, 2, ["attention"], ["loo"], [],
                             "attention", "1", None, api_name="/experiments_run")
        status, summary = out[0], out[1]
        assert "Done" in status and "median TVD" in summary
        files = out[4]
        assert len(files) == 2
    finally:
        app.close()


def test_defaults_eta_and_a_cleared_result_area():
    assert view.default_n("adversarial") == 10 and view.default_n("permutation") == view.DEFAULT_N == 50
    assert view.eta_text(12.4, 0, 10) == "12 s so far"
    # 3 of 10 done in 9 s of the example loop: 7 left at 3 s each = 21 s -> "about 25 s"
    assert view.eta_text(12.4, 3, 10, 9.0) == "12 s so far, about 25 s left"
    status, summary, _chart, _table, _files, path, box, _example_chart, head, second_box, *second = view.cleared()
    assert status == summary == "" and path is None and box == {"__type__": "update", "visible": False}
    assert head == "" and second_box == {"__type__": "update", "visible": False} and second == ["", "", None, None]


def test_estimate_line_before_a_run(env):
    """The line next to Run: the total from the timing of one example, recomputed without new
    timing while only the example count or the steps change."""
    from playground.analysis.experiments.estimate import Calibration, format_seconds

    ws, settings = env
    args = {**RUN_DEFAULTS, "n": 4, "steps": 20}
    text, calib = view.estimate(ws, settings, "tiny", "adversarial", *args.values())
    timing = Calibration(**{f: calib[f] for f in ("experiment", "draw_s", "example_s", "step_s")})
    assert format_seconds(calib["draw_s"] + 4 * (calib["example_s"] + 20 * calib["step_s"])) in text
    assert "4 examples × 20 Adam steps × 2 adversaries" in text and timing.step_s > 0

    fixed = {**calib, "draw_s": 2.0, "example_s": 0.5, "step_s": 0.04}  # same key: no new timing
    again, kept = view.estimate(ws, settings, "tiny", "adversarial", *{**args, "n": 10, "steps": 100}.values(), fixed)
    assert kept is fixed and "about 50 s" in again  # 2 + 10 × (0.5 + 100 × 0.04) = 47 s
    assert "4.50 s per example" in again and "2.0 s to draw" in again
    text, calib = view.estimate(ws, settings, "tiny", "uniform", *args.values())
    assert text == view.NO_ESTIMATE and calib is None
    assert "Pick a checkpoint" in view.estimate(ws, settings, None, "permutation", *args.values())[0]


def test_retrain_steps_of_0_mean_the_presets_and_other_counts_refuse_0():
    """gradio's number box sends 0 for the empty Retrain steps once Options open: its label says
    0 is the preset's; a count whose 0 means nothing (examples, permutations) still refuses it."""
    import pytest

    from playground.errors import PlaygroundError
    from playground.ui.experiments_view import count_field

    assert count_field(0, "Retrain steps", zero_is_empty=True) is None
    assert count_field(None, "Retrain steps", zero_is_empty=True) is None
    assert count_field(30, "Retrain steps", zero_is_empty=True) == 30
    for bad in (-5, 2.5):
        with pytest.raises(PlaygroundError, match="at least 1"):
            count_field(bad, "Retrain steps", zero_is_empty=True)
    with pytest.raises(PlaygroundError, match="at least 1"):
        count_field(0, "Permutations", default=100)


@pytest.mark.slow  # an import and two models' runs and timings: about 4 s
def test_a_second_model_fills_the_second_column_and_the_estimate_times_both(env, tmp_path):
    from playground.pretrained.importer import import_pretrained
    from tests.pretrained.conftest import save

    ws, settings = env
    if not ws.exists("models", "gpt2-tiny"):
        import_pretrained(str(save("GPT2LMHeadModel", tmp_path / "gpt2").folder), ws, "gpt2-tiny")
    args = {**RUN_DEFAULTS, "module": "blocks.1.attn"}  # the first model's default: each model's last layer
    outputs = list(view.run_experiment(ws, settings, "tiny", "permutation", *args.values(), second="gpt2-tiny"))
    last = outputs[-1]
    assert outputs[0].status.startswith("Running: Random permutation (J&W) on tiny and gpt2-tiny, 3 examples each")
    assert last.status.startswith("Done: 3 examples on each model") and "Both models read the same 3 windows" in last.status
    assert (last.first_head, last.second_head) == ("**tiny**", "**gpt2-tiny**")
    assert last.second_box == {"__type__": "update", "visible": True}
    for summary in (last.summary, last.second_summary):
        assert "median TVD" in summary and "of 3 examples" in summary
    assert not last.table.empty and not last.second_table.empty and last.second_chart.to_dict()
    assert sorted(Path(f).name for f in last.files) == ["permutation-gpt2-tiny.csv", "permutation-gpt2-tiny.json",
                                                         "permutation-tiny.csv", "permutation-tiny.json"]
    text, calib = view.estimate(ws, settings, "tiny", "permutation", *RUN_DEFAULTS.values(), None, second="gpt2-tiny")
    assert "3 examples on each of tiny and gpt2-tiny" in text and "on both models together" in text
    assert calib["key"] != view.estimate(ws, settings, "tiny", "permutation", *RUN_DEFAULTS.values())[1]["key"]
    uniform, _ = view.estimate(ws, settings, "tiny", "uniform", *RUN_DEFAULTS.values(), None, second="gpt2-tiny")
    assert "Expected time" in uniform  # on held-out examples, unlike the one-model uniform baseline
    refused, _ = view.estimate(ws, settings, "tiny", "seeds", *RUN_DEFAULTS.values(), None, second="gpt2-tiny")
    assert refused.startswith("No estimate: The seeds experiment retrains")
    one = list(view.run_experiment(ws, settings, "tiny", "permutation", *RUN_DEFAULTS.values()))[-1]
    assert one.second_box == {"__type__": "update", "visible": False} and one.first_head == ""


def test_a_pair_that_cannot_be_compared_is_refused_before_running(env):
    ws, settings = env
    runs = view.run_experiment(ws, settings, "tiny", "seeds", *RUN_DEFAULTS.values(), second="tiny")
    with pytest.raises(PlaygroundError, match="other than the first"):
        next(runs)  # no "Running" line first: the message is the first thing shown


def test_the_numbers_table_keeps_small_values_to_four_significant_digits():
    """A TVD of 2e-7 reads 2.072e-07 in the table, as the summary's 2.1e-07 (it read 0 before)."""
    from playground.analysis.experiments.jain_wallace import PermutationResult, PermutationRow
    from playground.analysis.experiments.wiegreffe_pinter import LEARNED, UNIFORM, UniformResult, UniformRow

    uniform = UniformResult(rows=[UniformRow(LEARNED, "mean TVD from learned", 0.0),
                                  UniformRow(UNIFORM, "mean TVD from learned", 9.7183e-06)])
    table = view.stats_table(uniform)
    assert table[UNIFORM].tolist() == [9.718e-06] and table[LEARNED].tolist() == [0.0]
    rows = [PermutationRow(i, 5, 0.3, tvd, tvd, tvd, 0.0) for i, tvd in enumerate((2.0718e-07, 2.4e-07))]
    perm = view.stats_table(PermutationResult(rows=rows))
    median = perm.set_index("statistic").loc["median_tvd"]
    assert median["min"] == 2.072e-07 and median["max"] == 2.4e-07 and median["n"] == 2
