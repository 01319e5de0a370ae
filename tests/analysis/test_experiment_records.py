"""A finished experiment on one's own model is kept with it, and its model card shows it: the card's
findings are the summary of the very result the command wrote (read back from its --out JSON and
summarised again); library models, stopped runs and hostile record files leave nothing behind."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from playground.__main__ import main
from playground.analysis.experiments.core import ExperimentResult
from playground.analysis.experiments.record import RECORD_DIR, read_records, record_if_own
from playground.analysis.experiments.summary import summarize
from playground.hub_share import prepare
from playground.workspace import Workspace

SHIPPED = Path(__file__).resolve().parents[2] / "checkpoints"
MODEL = "textclf-reviews-avg-additive"  # the smallest shipped classifier (76 KB)


def _own_copy(tmp_path: Path) -> Workspace:
    root = tmp_path / "ws"
    shutil.copytree(SHIPPED / "models" / MODEL, root / "models" / "mine")
    return Workspace(root, shelves=[Workspace(SHIPPED)])


def _permutation(ws: Workspace, model: str, out: Path) -> int:
    return main(["--workspace", str(ws.root), "analyze", "experiment", "permutation", model,
                 "--n", "3", "--n-perm", "5", "--out", str(out), "--quiet"])


def test_a_finished_experiment_is_kept_and_the_card_shows_its_findings(tmp_path, capsys) -> None:
    ws = _own_copy(tmp_path)
    assert _permutation(ws, "mine", tmp_path / "perm.json") == 0
    assert "kept with the model for its card" in capsys.readouterr().out

    records = read_records(ws.path("models", "mine"))
    assert [r["experiment"] for r in records] == ["permutation"]
    written = json.loads((tmp_path / "perm.json").read_text())
    assert records[0]["examples"] == written["examples_done"] == 3
    assert records[0]["settings"]["n_perm"] == 5
    assert records[0]["stats"] == written["stats"]  # the aggregates the summary quotes, as the --out JSON has them

    folder = prepare(ws, "model", "mine", tmp_path / "hub")
    assert RECORD_DIR in folder.files
    assert (folder.path / RECORD_DIR / "permutation.json").is_file()
    assert "## Is its attention an explanation? The experiments run on it" in folder.card
    for finding in records[0]["findings"]:
        assert f"- {finding}" in folder.card


def test_the_card_findings_are_the_summary_of_the_result(tmp_path) -> None:
    """Independent of the record: summarise the run's own result object and find the same words."""
    from playground.analysis.experiments.runner import ExperimentOptions, iter_experiment
    from playground.bundle import load_bundle

    ws = _own_copy(tmp_path)
    bundle = load_bundle("mine", ws, device="cpu")
    gen = iter_experiment("permutation", bundle, ExperimentOptions(n=3, seed=0, n_perm=5), ws)
    while True:
        try:
            next(gen)
        except StopIteration as done:
            result = done.value
            break
    assert record_if_own(ws, bundle.name, bundle.path, result) is not None
    assert read_records(bundle.path)[0]["findings"] == summarize(result).findings


def test_library_models_and_stopped_runs_leave_nothing(tmp_path) -> None:
    ws = _own_copy(tmp_path)
    assert _permutation(ws, MODEL, tmp_path / "lib.json") == 0  # the shipped copy, seen through the shelf
    assert not (SHIPPED / "models" / MODEL / RECORD_DIR).exists()
    result = ExperimentResult(settings={}, n_requested=3, examples_done=1, stopped=True)
    assert record_if_own(ws, "mine", ws.path("models", "mine"), result) is None
    assert record_if_own(None, "mine", ws.path("models", "mine"), result) is None
    assert not (ws.path("models", "mine") / RECORD_DIR).exists()


def test_hostile_record_files_are_skipped(tmp_path) -> None:
    model = tmp_path / "model"
    folder = model / RECORD_DIR
    folder.mkdir(parents=True)
    good = {"experiment": "permutation", "findings": ["a finding"], "settings": {"n": 3}}
    (folder / "permutation.json").write_text(json.dumps(good))
    (folder / "agreement.json").write_text("{not json")
    (folder / "uniform.json").write_text(json.dumps({**good, "experiment": "../../escape"}))  # name ≠ file
    (folder / "pointing.json").write_text(json.dumps({**good, "experiment": "pointing", "findings": "x" * 10}))
    (folder / "seeds.json").write_text(json.dumps({**good, "experiment": "seeds", "pad": "x" * 300_000}))
    (tmp_path / "secret.json").write_text(json.dumps({**good, "experiment": "link"}))
    (folder / "link.json").symlink_to(tmp_path / "secret.json")
    assert [r["experiment"] for r in read_records(model)] == ["permutation"]
    assert read_records(tmp_path / "nowhere") == []
