"""The RNN seq2seq presets of Luong's local attention and See et al.'s coverage (#17): each,
scaled down with its option kept, lowers its loss in a short run and says what the option does
when it starts; the checkpoint reloads with the option; the coverage run logs its loss; and the
repeated/dropped view compares the coverage preset with the same preset without coverage, the
same numbers from the function, the CLI and the Analyze tab's handler."""
from __future__ import annotations

import json

import pytest
import torch

from playground.__main__ import main
from playground.analysis.coverage import checkpoint_coverage, score_example
from playground.bundle import load_bundle, read_metrics_csv
from playground.config import load_preset
from playground.training.engine import run_training
from playground.workspace import Workspace
from tests.training.conftest import tiny_train

SMALL = {"emb_dim": 16, "hidden": 32}
OPTIONS = {
    "seq2seq-dates-luong-local-p": {"local": "predictive", "local_d": 4},
    "seq2seq-toytranslation-luong-local-m": {"local": "monotonic", "local_d": 5},
    "seq2seq-toytranslation-coverage": {"coverage": True, "attention": "additive"},
}
NOTES = {"seq2seq-dates-luong-local-p": "at most 9 source tokens, centred on a position the decoder predicts",
         "seq2seq-toytranslation-luong-local-m": "at most 11 source tokens, centred on the output step",
         "seq2seq-toytranslation-coverage": "Coverage: past attention"}
NO_COVERAGE = "toy-nocoverage"


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> tuple[Workspace, dict]:
    """Each preset scaled down (tiny data, 12 steps, one thread), plus the coverage preset with
    coverage off: (workspace, run name -> start message)."""
    workspace = Workspace(tmp_path_factory.mktemp("presets") / "ws")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the machine is shared: one thread is faster than two fighting
    messages = {}
    try:
        runs = [(name, name, {}) for name in OPTIONS]
        runs.append(("seq2seq-toytranslation-coverage", NO_COVERAGE, {"coverage": False}))
        for preset_name, run_name, model in runs:
            preset = load_preset(preset_name)
            assert OPTIONS[preset_name].items() <= preset.model.items()  # the preset sets the option it shows
            preset.model.update(SMALL, **model)
            preset.data.update(n=160, **({"max_len": 8} if "max_len" in preset.data else {}))
            preset.train.clear()
            preset.train.update(tiny_train(max_steps=12, eval_interval=6, batch_size=16, lr=1e-2, eval_examples=16))
            result = run_training(preset, workspace, run_name, device="cpu")
            assert result.status == "done"
            messages[run_name] = result.events[0].message
    finally:
        torch.set_num_threads(threads)
    return workspace, messages


@pytest.mark.parametrize("name", list(OPTIONS))
def test_preset_lowers_its_loss_in_a_short_run(name, trained):
    workspace, messages = trained
    assert NOTES[name] in messages[name]  # the start line says what the option changes
    rows = read_metrics_csv(workspace.path("models", name) / "metrics.csv")
    assert rows[-1]["val_loss"] < rows[0]["val_loss"] - 0.1
    config = load_bundle(name, workspace).model.config
    assert all(getattr(config, k) == v for k, v in OPTIONS[name].items())
    if config.coverage:
        assert 0 < rows[-1]["coverage_loss"] < 50  # logged per target token beside val_loss
    else:
        assert "coverage_loss" not in rows[-1] or rows[-1]["coverage_loss"] in (None, "")


def test_repeated_and_dropped_words_with_and_without_coverage(trained, capsys):
    from playground.ui.coverage_view import run_coverage

    workspace, _ = trained
    names = ["seq2seq-toytranslation-coverage", NO_COVERAGE]
    reports = {n: checkpoint_coverage(load_bundle(n, workspace), 12, workspace) for n in names}
    for report in reports.values():
        assert report.n_examples == len(report.examples) == 12
        # the totals are the per-example counts recomputed from each example's received attention
        again = [score_example(e.source, e.reference, e.output, torch.tensor([e.received])) for e in report.examples]
        assert report.repeated_attention == sum(e.repeated_attention for e in again)
        assert report.dropped_attention == sum(e.dropped_attention for e in again)
        assert report.source_tokens == sum(len(e.source) for e in report.examples)
        assert report.exact == sum(e.output == e.reference for e in report.examples)
    assert main(["--workspace", str(workspace.root), "coverage", *names, "--examples", "12", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads(json.dumps({n: r.to_dict() for n, r in reports.items()}))
    note, frame = run_coverage(workspace, "cpu", names[0], names[1], 12)
    assert frame["checkpoint"].tolist() == names
    assert frame.iloc[0, 1] == pytest.approx(reports[names[0]].rates()["repeated_attention"], abs=1e-4)
    assert frame.iloc[1, 2] == pytest.approx(reports[names[1]].rates()["dropped_attention"], abs=1e-4)
    assert "12 validation pairs" in note


def test_the_view_refuses_bad_requests(trained):
    from playground.errors import PlaygroundError
    from playground.ui.coverage_view import run_coverage

    workspace, _ = trained
    with pytest.raises(PlaygroundError, match="Choose a checkpoint"):
        run_coverage(workspace, "cpu", None, None, 10)
    with pytest.raises(PlaygroundError, match="Use 1 to"):
        run_coverage(workspace, "cpu", NO_COVERAGE, None, 10_000)
    assert main(["--workspace", str(workspace.root), "coverage", NO_COVERAGE, "--examples", "0"]) == 2
