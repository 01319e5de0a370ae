"""`python -m playground import`: the plan line, the bundle, --library, and imports stay read-only."""
from __future__ import annotations

from pathlib import Path

import pytest

from playground.__main__ import main
from playground.analysis.experiments.data import load_held_out
from playground.bundle import load_bundle
from playground.errors import PlaygroundError
from playground.tokenization.store import load as load_tokenizer
from playground.tokenization.store import summary_markdown
from playground.training.checkpoint import load_resume_state
from playground.workspace import Workspace
from tests.pretrained.conftest import Saved


def test_cli_import_prints_the_plan_then_saves(saved: dict[str, Saved], tmp_path: Path, capsys) -> None:
    ws = tmp_path / "ws"
    assert main(["--workspace", str(ws), "import", str(saved["GPT2LMHeadModel"].folder), "--name", "tiny"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("GPT2LMHeadModel: GPT2LMHeadModel -> the playground's gpt model, ")
    assert " parameters, " in out[0] and "of weights (on this machine)" in out[0]
    assert out[1].startswith("imported 'tiny' into the workspace")
    assert Workspace(ws).names("models") == ["tiny"]


def test_cli_import_into_a_library_folder(saved: dict[str, Saved], tmp_path: Path, capsys) -> None:
    lib = tmp_path / "library"
    assert main(["--workspace", str(tmp_path / "ws"), "import", str(saved["BertForMaskedLM"].folder), "--library", str(lib)]) == 0
    assert Workspace(lib).names("models") == ["BertForMaskedLM"]
    assert Workspace(tmp_path / "ws").names("models") == []


def test_cli_refusal_is_one_error_line(tmp_path: Path, capsys) -> None:
    (tmp_path / "empty").mkdir()
    assert main(["--workspace", str(tmp_path / "ws"), "import", str(tmp_path / "empty")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("error: The folder 'empty' has no config.json: give a folder written by save_pretrained "
                   "(config.json + model.safetensors).")


def test_an_imported_model_cannot_be_resumed(saved: dict[str, Saved], tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    main(["--workspace", str(ws), "import", str(saved["GPT2LMHeadModel"].folder), "--name", "tiny"])
    with pytest.raises(PlaygroundError, match="imported pretrained model: it is read-only and has no run to resume"):
        load_resume_state(Workspace(ws), "tiny")


def test_cli_export_hf_writes_the_imported_architecture_back(saved: dict[str, Saved], tmp_path: Path, capsys) -> None:
    ws, out = tmp_path / "ws", tmp_path / "out"
    main(["--workspace", str(ws), "import", str(saved["ViTForImageClassification"].folder), "--name", "vit"])
    assert main(["--workspace", str(ws), "export", "vit", "--format", "hf", "--out", str(out)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"exported 'vit' as ViTForImageClassification to {out}"
    assert sorted(p.name for p in out.iterdir()) == ["config.json", "model.safetensors"]


def test_the_tokenizer_comes_along_for_the_tokenizer_tab(saved: dict[str, Saved], tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    main(["--workspace", str(ws), "import", str(saved["BertForMaskedLM"].folder), "--name", "bert"])
    loaded = load_tokenizer(Workspace(ws), "bert")
    assert loaded.kind == "wordpiece" and loaded.tokenizer.token_to_id("[MASK]") == 4
    assert "vocabulary **" in summary_markdown(loaded) and "`[CLS]`" in summary_markdown(loaded)


def test_experiments_on_an_imported_model_say_why_not_and_what_instead(saved: dict[str, Saved], tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "ws")
    main(["--workspace", str(ws.root), "import", str(saved["GPT2LMHeadModel"].folder), "--name", "tiny"])
    with pytest.raises(PlaygroundError, match="imported pretrained model: it has no validation split.*Compare it"):
        load_held_out(load_bundle("tiny", ws), 4)
