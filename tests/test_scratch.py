"""Download temp files are reclaimed by age, and only once they are old."""
from __future__ import annotations

import os
import time

from playground import scratch


def test_download_folders_are_swept_once_older_than_the_max_age(tmp_path):
    base = tmp_path / "downloads"
    base.mkdir()
    old, new = base / "old", base / "new"
    for folder in (old, new):
        folder.mkdir()
        (folder / "tokens.csv").write_text("a,b\n")
    past = time.time() - scratch.MAX_AGE_S - 60
    for path in (old / "tokens.csv", old):
        os.utime(path, (past, past))
    assert scratch.sweep_downloads(base, force=True) == 1
    assert not old.exists() and new.exists()


def test_download_dir_makes_a_fresh_folder_under_this_process(monkeypatch, tmp_path):
    monkeypatch.setattr(scratch.tempfile, "gettempdir", lambda: str(tmp_path))
    first, second = scratch.download_dir("x-"), scratch.download_dir("x-")
    assert first != second and first.parent == second.parent == scratch.scratch_base() / "downloads"
    assert scratch.scratch_base().name == f"playground-sessions-{os.getpid()}"


def test_a_folder_whose_files_are_still_rewritten_is_kept(tmp_path):
    base = tmp_path / "downloads"
    folder = base / "experiment"
    folder.mkdir(parents=True)
    past = time.time() - scratch.MAX_AGE_S - 60
    os.utime(folder, (past, past))  # rewriting a file does not touch the folder's own time
    (folder / "result.json").write_text("{}")
    assert scratch.sweep_downloads(base, force=True) == 0 and folder.exists()
