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
