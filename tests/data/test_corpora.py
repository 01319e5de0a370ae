"""Corpora: built-in (Tiny Shakespeare shipped gzipped), the download fallback of an install
without it (never really downloaded: the fetch is replaced), uploaded, pasted."""
from __future__ import annotations

import gzip
import hashlib
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
# char-rnn's tinyshakespeare input.txt, as shipped in playground/data/texts/tinyshakespeare.txt.gz
SHIPPED_LENGTH = 1_115_394
SHIPPED_SHA256 = "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"
REAL_FETCH_URL = corpora.fetch_url  # before any test replaces it


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    """Any real download attempt fails the test."""
    def refuse(url, timeout=30.0):
        raise AssertionError(f"tests must not touch the network ({url})")

    monkeypatch.setattr(corpora, "fetch_url", refuse)


@pytest.fixture
def slim_install(monkeypatch, tmp_path):
    """An install without the shipped Tiny Shakespeare (the download fallback's case)."""
    monkeypatch.setattr(corpora, "TINYSHAKESPEARE_SHIPPED", tmp_path / "no-texts" / "tinyshakespeare.txt.gz")


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


def test_tinyshakespeare_is_built_in_byte_identical_and_needs_no_network():
    """The shipped gzip decompresses to char-rnn's input.txt exactly; no workspace, no fetch."""
    raw = gzip.decompress(corpora.TINYSHAKESPEARE_SHIPPED.read_bytes())
    assert len(raw) == SHIPPED_LENGTH and hashlib.sha256(raw).hexdigest() == SHIPPED_SHA256
    corpus = load_corpus("tinyshakespeare")  # the autouse fixture fails any download
    assert corpus.text.encode("utf-8") == raw and corpus.text.startswith("First Citizen:\n")
    assert "built in, no download" in corpus.description and "1,115,394 characters" in corpus.description
    assert not CORPORA["tinyshakespeare"].needs_download
    assert corpora.TINYSHAKESPEARE_SHIPPED.stat().st_size < 500_000  # about 434 KB


def test_the_shipped_copy_wins_over_a_cached_download(workspace):
    cached = workspace.cache_dir / "tinyshakespeare.txt"
    cached.parent.mkdir(parents=True, exist_ok=True)
    cached.write_text(SHAKESPEARE)
    assert load_corpus("tinyshakespeare", workspace).chars == SHIPPED_LENGTH


def test_a_damaged_shipped_copy_says_to_reinstall(monkeypatch, tmp_path):
    broken = tmp_path / "tinyshakespeare.txt.gz"
    broken.write_bytes(gzip.compress(SHAKESPEARE.encode())[:20])
    monkeypatch.setattr(corpora, "TINYSHAKESPEARE_SHIPPED", broken)
    with pytest.raises(DataError, match="damaged.*reinstall"):
        load_corpus("tinyshakespeare")


def test_without_the_shipped_copy_it_downloads_once_into_the_cache(workspace, slim_install):
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
    with pytest.raises(DataError, match="no built-in copy"):
        load_corpus("tinyshakespeare")  # nowhere to download to


def test_without_the_shipped_copy_offline_says_how_to_upload(workspace, monkeypatch, slim_install):
    def offline(url, timeout=30.0):
        raise urllib.error.URLError("Temporary failure in name resolution")

    monkeypatch.setattr(corpora, "fetch_url", offline)
    with pytest.raises(OfflineError) as info:
        load_corpus("tinyshakespeare", workspace)
    message = str(info.value)
    assert "offline" in message and "upload it as a .txt file" in message and TINYSHAKESPEARE_URL in message
    assert not (workspace.cache_dir / "tinyshakespeare.txt").exists()


def test_a_download_that_is_not_text_is_not_cached(workspace, slim_install):
    with pytest.raises(DataError, match="binary"):
        load_corpus("tinyshakespeare", workspace, fetch=lambda url: b"\x00\x01\x02")
    assert not (workspace.cache_dir / "tinyshakespeare.txt").exists()


@pytest.mark.parametrize("value, off", [("1", True), ("yes", True), ("", False), ("0", False), ("false", False)])
def test_playground_offline_turns_downloads_off(monkeypatch, value, off):
    monkeypatch.setenv(corpora.OFFLINE_ENV, value)
    assert corpora.downloads_off() is off


def test_playground_offline_refuses_before_any_network(workspace, monkeypatch, slim_install):
    """The real fetch_url with PLAYGROUND_OFFLINE=1 raises before it opens a connection."""
    def no_connection(*args, **kwargs):
        raise AssertionError("urlopen was called")

    monkeypatch.setenv(corpora.OFFLINE_ENV, "1")
    monkeypatch.setattr(corpora.urllib.request, "urlopen", no_connection)
    monkeypatch.setattr(corpora, "fetch_url", REAL_FETCH_URL)
    with pytest.raises(OfflineError, match="PLAYGROUND_OFFLINE") as info:
        load_corpus("tinyshakespeare", workspace)
    assert "upload it as a .txt file" in str(info.value)
    assert not (workspace.cache_dir / "tinyshakespeare.txt").exists()


def test_non_utf8_file_names_file_and_offset(tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes(b"caf" + b"\xe9 au lait\n")
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
