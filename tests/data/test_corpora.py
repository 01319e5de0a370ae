"""Corpora: built-in, downloaded (never really: the fetch is replaced), uploaded, pasted."""
from __future__ import annotations

import urllib.error
from pathlib import Path

import pytest

from playground.data import corpora
from playground.data.corpora import (
    CORPORA, TINYSHAKESPEARE_URL, corpus_from_files, corpus_from_text, load_corpora, load_corpus, python_code_text,
    read_text_file, read_text_files,
)
from playground.errors import DataError, NotFoundError, OfflineError
from playground.settings import DEMO_CAPS, FULL_CAPS, DemoCaps

SHAKESPEARE = "First Citizen:\nBefore we proceed any further, hear me speak.\n"


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    """Any real download attempt fails the test."""
    def refuse(url, timeout=30.0):
        raise AssertionError(f"tests must not touch the network ({url})")

    monkeypatch.setattr(corpora, "fetch_url", refuse)


def test_python_docs_is_built_in_and_deterministic():
    a, b = load_corpus("python-docs"), load_corpus("python-docs")
    assert a == b and a.name == "python-docs"
    assert len(a.text) > 100_000 and 'The "if" statement' in a.text
    assert "characters" in a.description


def test_python_code_reads_stdlib_sources_in_sorted_order(tmp_path):
    root = tmp_path / "lib"
    (root / "b_pkg").mkdir(parents=True)
    (root / "test").mkdir()
    (root / "b_pkg" / "mod.py").write_text("# b_pkg/mod\n")
    (root / "a.py").write_text("# a\n")
    (root / "c.py").write_text("# c\n")
    (root / "test" / "test_x.py").write_text("# skipped\n")
    (root / "latin1.py").write_bytes(b"# caf\xe9\n")  # not UTF-8: skipped
    assert python_code_text(root=root) == "# a\n\n# c\n\n# b_pkg/mod\n"
    assert python_code_text(max_chars=9, root=root) == "# a\n\n# c\n"
    real = load_corpus("python-code")
    assert 100_000 < len(real.text) <= corpora.PYTHON_CODE_MAX_CHARS and "def " in real.text


def test_tinyshakespeare_downloads_once_into_the_cache(workspace):
    calls = []

    def fake_fetch(url):
        calls.append(url)
        return SHAKESPEARE.encode()

    corpus = load_corpus("tinyshakespeare", workspace, fetch=fake_fetch)
    assert corpus.text == SHAKESPEARE and calls == [TINYSHAKESPEARE_URL]
    cached = workspace.cache_dir / "tinyshakespeare.txt"
    assert cached.read_text() == SHAKESPEARE
    # second use reads the cache; the (refusing) default fetch is never called
    assert load_corpus("tinyshakespeare", workspace).text == SHAKESPEARE
    assert calls == [TINYSHAKESPEARE_URL]


def test_tinyshakespeare_offline_says_how_to_upload(workspace, monkeypatch):
    def offline(url, timeout=30.0):
        raise urllib.error.URLError("Temporary failure in name resolution")

    monkeypatch.setattr(corpora, "fetch_url", offline)
    with pytest.raises(OfflineError) as info:
        load_corpus("tinyshakespeare", workspace)
    message = str(info.value)
    assert "offline" in message and "upload it as a .txt file" in message and TINYSHAKESPEARE_URL in message
    assert not (workspace.cache_dir / "tinyshakespeare.txt").exists()


def test_a_download_that_is_not_text_is_not_cached(workspace):
    with pytest.raises(DataError, match="binary"):
        load_corpus("tinyshakespeare", workspace, fetch=lambda url: b"\x00\x01\x02")
    assert not (workspace.cache_dir / "tinyshakespeare.txt").exists()


def test_non_utf8_file_names_file_and_offset(tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes("caf".encode() + b"\xe9 au lait\n")
    with pytest.raises(DataError) as info:
        read_text_file(path)
    assert "latin1.txt is not UTF-8" in str(info.value) and "offset 3" in str(info.value) and "0xe9" in str(info.value)
    assert str(tmp_path) not in str(info.value)  # no server paths


def test_binary_and_empty_files_are_refused(tmp_path):
    binary = tmp_path / "model.bin"
    binary.write_bytes(b"PK\x03\x04\x00\x00binary")
    with pytest.raises(DataError, match=r"model.bin looks like a binary file \(a NUL byte at offset 4\)"):
        read_text_file(binary)
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    with pytest.raises(DataError, match="empty.txt is empty"):
        read_text_file(empty)
    blank = tmp_path / "blank.txt"
    blank.write_text(" \n\n ")
    with pytest.raises(DataError, match="only whitespace"):
        read_text_file(blank)


def test_file_over_the_cap_is_refused_before_it_is_read(tmp_path, monkeypatch):
    big = tmp_path / "big.txt"
    big.write_text("x" * 2000)

    def no_reading(self):
        raise AssertionError("the file was read")

    monkeypatch.setattr(Path, "read_bytes", no_reading)
    with pytest.raises(DataError, match=r"big.txt is 0.0 MB; this server accepts files up to 0.0 MB"):
        read_text_file(big, max_bytes=1000)
    caps = DemoCaps(max_upload_mb=0.001)
    with pytest.raises(DataError, match="big.txt"):
        corpus_from_files([big], caps)


def test_several_files_are_joined_and_bom_stripped(tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_bytes("\ufeffalpha\n".encode())
    b.write_text("beta\n")
    assert read_text_files([a, b]) == "alpha\n\nbeta\n"
    corpus = corpus_from_files([str(a), str(b)])
    assert corpus.text == "alpha\n\nbeta\n" and "a.txt, b.txt" in corpus.description
    with pytest.raises(DataError, match="No files"):
        read_text_files([])


def test_pasted_text_and_caps():
    with pytest.raises(DataError, match="pasted text is empty"):
        corpus_from_text("  \n")
    text = "line one\n" * 1000
    capped = corpus_from_text(text, DemoCaps(max_corpus_chars=95))
    assert capped.text == "line one\n" * 10 and "server cap" in capped.description
    assert corpus_from_text(text, FULL_CAPS).text == text


def test_unknown_spec_and_mixtures(tmp_path, workspace):
    with pytest.raises(NotFoundError, match="python-docs, python-code, tinyshakespeare"):
        load_corpus("no-such-corpus.txt", workspace)
    with pytest.raises(DataError):
        load_corpus("  ", workspace)
    extra = tmp_path / "extra.txt"
    extra.write_text("extra text\n")
    mixed = load_corpora(["python-docs", str(extra)], workspace, DEMO_CAPS)
    assert mixed.text.endswith("extra text\n") and mixed.name == "python-docs+extra"
    assert set(CORPORA) == {"python-docs", "python-code", "tinyshakespeare"}
