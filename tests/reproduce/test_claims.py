"""The claims' registry, recipes, shipped results, a quick end-to-end run, Stop, and the CLI."""
from __future__ import annotations

import json
import threading

import pandas as pd
import pytest

from playground.__main__ import main
from playground.errors import ConfigError, NotFoundError
from playground.reproduce import ClaimProgress, ClaimResult, all_claims, get_claim
from playground.reproduce.base import save_result
from playground.reproduce.recipe import load_recipe
from playground.settings import DEMO_CAPS
from playground.training.spec import resolve_run

NAMES = list(all_claims())


def test_registry_has_the_seven_claims_of_the_issue():
    assert set(NAMES) == {"bottleneck", "pe_extrapolation", "warmup", "sqrt_dk", "label_smoothing", "residual", "heads"}
    with pytest.raises(NotFoundError, match="choose one of"):
        get_claim("nope")


@pytest.mark.parametrize("name", NAMES)
def test_every_run_of_every_recipe_resolves(name):
    claim = get_claim(name)
    assert claim.preset.is_file()
    recipe = claim.recipe()
    assert recipe.runs and recipe.quick
    for run in recipe.runs:
        spec = resolve_run(run.resolved(), caps=DEMO_CAPS)  # types, choices and a public server's caps
        assert spec.train.max_steps <= DEMO_CAPS.max_train_steps  # a server's step cap would change the numbers
        resolve_run(run.resolved(recipe.quick))


@pytest.mark.parametrize("name", NAMES)
def test_the_shipped_result_matches_its_recipe_and_recomputes_its_verdict(name):
    claim = get_claim(name)
    stored = json.loads(claim.result_path().read_text(encoding="utf-8"))
    assert stored["recipe_hash"] == claim.recipe().hash(), (
        f"presets/experiments/{name}.toml (or a base preset) changed since the shipped result: "
        f"re-run `python -m playground reproduce {name} --ship`")
    assert stored["quick"] is False
    assert set(stored["runs"]) == {r.name for r in claim.recipe().runs}
    result = claim.shipped()
    assert result.verdict == stored["verdict"] and result.holds == stored["holds"]
    assert isinstance(result.table, pd.DataFrame) and not result.table.empty
    assert {"x", "y", "series"} <= set(result.chart.columns) and not result.chart.empty
    assert stored["wall_s"] <= 600, "every claim must run within 10 minutes"
    assert stored["machine"]["device"] == "cpu"


def test_an_edited_recipe_changes_the_hash(tmp_path):
    src = get_claim("heads").preset.read_text(encoding="utf-8")
    (tmp_path / "heads.toml").write_text(src, encoding="utf-8")
    same = load_recipe("heads", tmp_path).hash()
    (tmp_path / "heads.toml").write_text(src.replace('"model.n_head" = 4', '"model.n_head" = 2'), encoding="utf-8")
    assert load_recipe("heads", tmp_path).hash() != same == get_claim("heads").recipe().hash()


def test_recipe_errors_name_what_is_wrong(tmp_path):
    (tmp_path / "bad.toml").write_text('[common]\npreset = "nanogpt-cpu-tiny"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="no \\[\\[run\\]\\]"):
        load_recipe("bad", tmp_path)
    with pytest.raises(NotFoundError):
        load_recipe("../presets/nanogpt-cpu-tiny", tmp_path)


def test_a_quick_run_ends_with_a_result_that_cannot_ship(workspace, tmp_path):
    events = list(get_claim("pe_extrapolation").run(workspace, quick=True))
    progress = [e for e in events if isinstance(e, ClaimProgress)]
    result = events[-1]
    assert isinstance(result, ClaimResult) and not any(isinstance(e, ClaimResult) for e in events[:-1])
    assert [p.fraction for p in progress] == sorted(p.fraction for p in progress)
    assert set(result.runs) == {"learned", "sinusoidal", "rope", "alibi", "none"}
    assert result.runs["learned"]["positions"]["positions"] == 32
    assert result.runs["rope"]["positions"]["positions"] == 128
    assert result.meta["quick"] is True and result.meta["recipe_hash"] == get_claim("pe_extrapolation").recipe().hash()
    assert result.holds in (True, False, None) and result.verdict
    with pytest.raises(Exception, match="quick"):
        save_result(result, tmp_path / "x.json")


def test_stop_is_honoured_inside_a_run_and_nothing_is_reported(workspace):
    stop = threading.Event()
    events = []
    for ev in get_claim("pe_extrapolation").run(workspace, stop, quick=True):
        events.append(ev)
        stop.set()  # after the first event (the first run's start)
    assert isinstance(events[-1], ClaimProgress) and events[-1].stopped
    assert events[-1].index == 0 and not any(isinstance(e, ClaimResult) for e in events)


def test_stop_before_any_run(workspace):
    events = list(get_claim("heads").run(workspace, lambda: True, quick=True))
    assert len(events) == 1 and events[0].stopped and "before" in events[0].message


def test_cli_list_shipped_and_quick_json(tmp_path, capsys):
    assert main(["reproduce", "--list"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in NAMES)
    assert main(["reproduce", "heads", "--shipped"]) == 0
    out = capsys.readouterr().out
    assert get_claim("heads").citation in out and "Verdict:" in out
    assert main(["reproduce", "pe_extrapolation", "--quick", "--json", "--workspace", str(tmp_path / "ws")]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["quick"] is True and set(data["runs"]) == {"learned", "sinusoidal", "rope", "alibi", "none"}
    assert main(["reproduce", "nope"]) == 2
    assert main(["reproduce", "heads", "--quick", "--ship"]) == 2


def test_a_rerun_gives_the_same_numbers(tmp_path):
    from playground.workspace import Workspace

    claim = get_claim("residual")
    first = list(claim.run(Workspace(tmp_path / "a"), quick=True))[-1]
    second = list(claim.run(Workspace(tmp_path / "b"), quick=True))[-1]
    assert isinstance(first, ClaimResult) and isinstance(second, ClaimResult)
    assert {k: r["final"] for k, r in first.runs.items()} == {k: r["final"] for k, r in second.runs.items()}
    assert first.numbers == second.numbers and first.verdict == second.verdict
