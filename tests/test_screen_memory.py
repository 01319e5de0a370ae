"""playground.screen_memory: a user's last screen, kept as small plain JSON in their space."""
from __future__ import annotations

import json

import pytest

from playground import screen_memory as sm


def test_each_tab_keeps_its_own_last_record(tmp_path):
    assert sm.recall(tmp_path, "train") == {}
    assert sm.remember(tmp_path, "train", {"run": "a", "toml": "[train]\nmax_steps = 3\n"})
    assert sm.remember(tmp_path, "generate", {"model": "g", "seed": 7, "top_p": 0.95, "methods": ["x", "y"]})
    assert sm.remember(tmp_path, "train", {"run": "b"})  # a newer run replaces the older one
    assert sm.recall(tmp_path, "train") == {"run": "b"}
    assert sm.recall(tmp_path, "generate") == {"model": "g", "seed": 7, "top_p": 0.95, "methods": ["x", "y"]}
    assert [p.name for p in tmp_path.iterdir()] == [sm.MEMORY_FILE]  # no temp file left behind


@pytest.mark.parametrize("value", [object(), float("nan"), float("inf"), "x" * (sm.MAX_STRING_CHARS + 1),
                                   [[1]], list(range(sm.MAX_LIST_ITEMS + 1)), {"a": 1}])
def test_what_is_not_plain_or_too_big_is_not_kept_and_the_old_record_stays(tmp_path, value):
    assert sm.remember(tmp_path, "analyze", {"model": "m"})
    assert not sm.remember(tmp_path, "analyze", {"model": "m2", "text": value})
    assert sm.recall(tmp_path, "analyze") == {"model": "m"}


def test_a_record_over_the_file_cap_is_refused(tmp_path):
    big = "y" * sm.MAX_STRING_CHARS
    fields = {f"t{i}": big for i in range(sm.MAX_FILE_BYTES // sm.MAX_STRING_CHARS + 1)}
    assert not sm.remember(tmp_path, "train", fields)
    assert sm.recall(tmp_path, "train") == {}


def test_a_damaged_or_oversized_file_reads_as_nothing_and_is_rewritten(tmp_path):
    path = tmp_path / sm.MEMORY_FILE
    for damaged in ("{not json", "[1, 2]", json.dumps({"train": "a string"})):
        path.write_text(damaged, encoding="utf-8")
        assert sm.recall(tmp_path, "train") == {}
    path.write_text(json.dumps({"train": {"run": "x" * (sm.MAX_FILE_BYTES + 1)}}), encoding="utf-8")
    assert sm.recall(tmp_path, "train") == {}
    assert sm.remember(tmp_path, "train", {"run": "fresh"})
    assert sm.recall(tmp_path, "train") == {"run": "fresh"}


def test_a_disk_that_refuses_the_write_does_not_fail_the_action(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("", encoding="utf-8")
    assert not sm.remember(blocker / "space", "train", {"run": "a"})  # its parent is a file: mkdir fails


def test_fields_from_disk_are_checked_not_trusted():
    record = {"run": 3, "prompt": "p", "seed": True, "top_p": float("nan"), "n": 2}
    assert sm.text_field(record, "run", "none") == "none" and sm.text_field(record, "prompt") == "p"
    assert sm.number_field(record, "seed") is None and sm.number_field(record, "top_p") is None
    assert sm.number_field(record, "n") == 2


def test_unknown_tab_is_a_programming_error(tmp_path):
    with pytest.raises(ValueError):
        sm.remember(tmp_path, "lessons", {})
