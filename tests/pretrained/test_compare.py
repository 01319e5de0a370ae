"""Side by side: the user's own model beside an imported one, through the tabs' plain functions."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from playground.errors import PlaygroundError
from playground.pretrained.importer import import_pretrained
from playground.settings import REPO_ROOT
from playground.ui.compare_models import compare_analysis, compare_generations
from playground.workspace import Workspace
from tests.pretrained.conftest import Saved

OWN = "gpt-python-docs-char"  # a shipped checkpoint: a character-level GPT


@pytest.fixture
def both(saved: dict[str, Saved], tmp_path: Path) -> Workspace:
    ws = Workspace(tmp_path / "ws")
    shutil.copytree(REPO_ROOT / "checkpoints" / "models" / OWN, ws.path("models", OWN))
    import_pretrained(str(saved["GPT2LMHeadModel"].folder), ws, "gpt2-tiny")
    return ws


def test_analysis_of_two_models_in_two_columns(both: Workspace, saved: dict[str, Saved]) -> None:
    summary, agreement, chart_a, chart_b = compare_analysis(both, "cpu", OWN, "gpt2-tiny", "the quick brown fox",
                                                            ["attention", "rollout", "ig", "loo"], 8)
    assert list(agreement.columns) == ["pair", OWN, "gpt2-tiny"]
    assert list(agreement["pair"]) == ["attention ~ rollout", "attention ~ ig", "attention ~ loo", "rollout ~ ig",
                                       "rollout ~ loo", "ig ~ loo"]
    assert agreement[[OWN, "gpt2-tiny"]].abs().le(1).all().all()
    rows = dict(zip(summary[""], summary["gpt2-tiny"]))
    assert rows["family"] == "gpt" and rows["input units"] == len(saved["GPT2LMHeadModel"].tokenizer.encode("the quick brown fox").ids)
    assert 0 <= rows["TVD, every layer uniform"] <= 1 and rows["best induction head"].startswith("blocks.")
    assert dict(zip(summary[""], summary[OWN]))["input units"] == len("the quick brown fox")  # one per character
    assert chart_a is not None and chart_b is not None


def test_generations_of_two_models_step_by_step(both: Workspace) -> None:
    table = compare_generations(both, "cpu", OWN, "gpt2-tiny", "the quick", 5)
    assert list(table.columns) == ["step", f"{OWN} token", f"{OWN} p", "gpt2-tiny token", "gpt2-tiny p"]
    assert list(table["step"]) == [0, 1, 2, 3, 4]
    assert table[f"{OWN} p"].between(0, 1).all()


def test_the_same_checkpoint_twice_is_refused(both: Workspace) -> None:
    with pytest.raises(PlaygroundError, match="other than the first"):
        compare_generations(both, "cpu", OWN, OWN, "x", 3)


def test_two_imported_classifiers_side_by_side(saved: dict[str, Saved], tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "ws")
    import_pretrained(str(saved["BertForSequenceClassification"].folder), ws, "bert-cls")
    import_pretrained(str(saved["DistilBertForSequenceClassification"].folder), ws, "distil-cls")
    summary, agreement, *_ = compare_analysis(ws, "cpu", "bert-cls", "distil-cls", "hello tiny world",
                                              ["attention", "ig", "loo"], 4)
    rows = {name: dict(zip(summary[""], summary[name])) for name in ("bert-cls", "distil-cls")}
    assert {r["family"] for r in rows.values()} == {"bert_classifier"}
    assert all(r["predicted"].strip("'") in ("negative", "neutral", "positive") for r in rows.values())
    assert "best induction head" not in rows["bert-cls"]  # bidirectional: no induction score
    assert list(agreement["pair"]) == ["attention ~ ig", "attention ~ loo", "ig ~ loo"]
