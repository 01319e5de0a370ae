"""Workspace: name validation, round trips, atomic writes."""
from __future__ import annotations

import json

import pytest

from playground.errors import InvalidNameError, NotFoundError, PlaygroundError
from playground.workspace import Workspace, validate_name


@pytest.mark.parametrize("name", ["shakespeare", "run-1", "bpe_8k", "v1.2", "A" * 64])
def test_valid_names_pass(name):
    assert validate_name(name) == name


@pytest.mark.parametrize(
    "name", ["", "  ", "a/b", "..", "../etc", "a\\b", ".hidden", "-dash", "sp ace", "é", "x" * 65, "a..b"]
)
def test_invalid_names_are_refused_with_a_reason(name):
    with pytest.raises(InvalidNameError) as info:
        validate_name(name)
    assert str(info.value)  # a message a person can act on


def test_tokenizer_round_trip(workspace: Workspace):
    from tokenizers import Tokenizer, models

    tok = Tokenizer(models.WordLevel({"a": 0, "b": 1, "<unk>": 2}, unk_token="<unk>"))
    entry = workspace.save_tokenizer("tiny", tok.to_str(), {"vocab_size": 3, "kind": "word"})
    assert entry.meta["vocab_size"] == 3 and entry.meta["name"] == "tiny"
    assert workspace.names("tokenizers") == ["tiny"]
    loaded = workspace.load_tokenizer("tiny")
    assert loaded.get_vocab() == tok.get_vocab()


def test_existing_name_is_not_overwritten_silently(workspace: Workspace):
    workspace.save_tokenizer("t", "{}", {"v": 1})
    with pytest.raises(PlaygroundError, match="already exists"):
        workspace.save_tokenizer("t", "{}", {"v": 2})
    assert workspace.get("tokenizers", "t").meta["v"] == 1
    workspace.save_tokenizer("t", "{}", {"v": 2}, overwrite=True)
    assert workspace.get("tokenizers", "t").meta["v"] == 2
    assert [p.name for p in workspace.dir("tokenizers").iterdir()] == ["t"]  # no temp/old folders left


def test_crash_mid_write_leaves_previous_entry_and_nothing_half_written(workspace: Workspace):
    workspace.save_tokenizer("t", '{"x": 1}', {"v": 1})
    with pytest.raises(RuntimeError):
        with workspace.writing("tokenizers", "t", overwrite=True) as tmp:
            (tmp / "tokenizer.json").write_text("half")
            raise RuntimeError("power cut")
    with pytest.raises(RuntimeError):
        with workspace.writing("tokenizers", "new", overwrite=False) as tmp:
            (tmp / "tokenizer.json").write_text("half")
            raise RuntimeError("power cut")
    assert workspace.names("tokenizers") == ["t"]
    assert (workspace.path("tokenizers", "t") / "tokenizer.json").read_text() == '{"x": 1}'
    assert [p.name for p in workspace.dir("tokenizers").iterdir()] == ["t"]


def test_incomplete_folders_are_not_listed(workspace: Workspace):
    broken = workspace.dir("models") / "broken"
    broken.mkdir(parents=True)
    (broken / "config.json").write_text(json.dumps({"family": "gpt"}))  # no weights
    (workspace.dir("models") / ".tmp-x-123").mkdir()
    assert workspace.names("models") == []
    with pytest.raises(NotFoundError, match="No model named 'broken'"):
        workspace.get("models", "broken")


def test_entry_missing_required_file_is_refused(workspace: Workspace):
    with pytest.raises(PlaygroundError, match="missing"):
        with workspace.writing("models", "m") as tmp:
            (tmp / "config.json").write_text("{}")
    assert not workspace.path("models", "m").exists()


def test_bad_name_leaves_workspace_unchanged(workspace: Workspace):
    with pytest.raises(InvalidNameError):
        workspace.save_tokenizer("../evil", "{}", {})
    assert not workspace.root.exists() or not any(workspace.root.rglob("*.json"))


def test_delete(workspace: Workspace):
    workspace.save_tokenizer("gone", "{}", {})
    workspace.delete("tokenizers", "gone")
    assert workspace.names("tokenizers") == []


def test_saved_entries_get_the_usual_folder_mode(workspace: Workspace):
    import os
    import stat

    entry = workspace.save_tokenizer("perm", "{}", {})
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(entry.path.stat().st_mode) == 0o777 & ~mask


def test_a_shelf_is_listed_and_loaded_after_own_entries_and_is_read_only(tmp_path):
    shelf = Workspace(tmp_path / "shelf")
    shelf.save_tokenizer("shipped", "{}", {"vocab_size": 3})
    shelf.save_tokenizer("both", "{}", {"vocab_size": 1})
    ws = Workspace(tmp_path / "own", shelves=[shelf])
    ws.save_tokenizer("both", "{}", {"vocab_size": 2})
    ws.save_tokenizer("mine", "{}", {})

    assert [(e.name, e.origin) for e in ws.list("tokenizers")] == [("both", "own"), ("mine", "own"), ("shipped", "library")]
    assert ws.get("tokenizers", "both").meta["vocab_size"] == 2  # an own name shadows the shelf's
    assert ws.get("tokenizers", "shipped").path.parent == shelf.dir("tokenizers")
    with pytest.raises(PlaygroundError, match="read-only"):
        ws.delete("tokenizers", "shipped")
    assert shelf.exists("tokenizers", "shipped")
    ws.delete("tokenizers", "both")  # the own copy goes; the shelf's shows through again
    assert ws.get("tokenizers", "both").meta["vocab_size"] == 1 and shelf.exists("tokenizers", "both")


def test_the_cli_workspace_keeps_the_shipped_checkpoints_visible(tmp_path, capsys):
    from playground.__main__ import main

    assert main(["--workspace", str(tmp_path), "list", "--json"]) == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert rows["gpt-python-docs-char"]["origin"] == "library"
    assert main(["--workspace", str(tmp_path), "generate", "gpt-python-docs-char", "--prompt", "def ",
                 "--max-new-tokens", "5", "--temperature", "0"]) == 0
    assert capsys.readouterr().out.startswith("def ")
    assert not (tmp_path / "models").exists()  # nothing was copied into the user's workspace
