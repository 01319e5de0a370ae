"""`python -m playground tokenizer ...` and `bench tokenizer`, run in-process."""
from __future__ import annotations

import json

import pytest

from playground.__main__ import main


@pytest.fixture
def corpus_file(tmp_path, corpus):
    path = tmp_path / "corpus.txt"
    path.write_text(corpus, encoding="utf-8")
    return path


def test_train_encode_show_walk_compare(tmp_path, corpus_file, capsys):
    ws = str(tmp_path / "ws")
    assert main(["--workspace", ws, "tokenizer", "train", "--corpus", str(corpus_file), "--vocab-size", "500",
                 "--name", "cli-bpe"]) == 0
    out = capsys.readouterr().out
    assert "vocabulary 500" in out and "saved:" in out
    meta = json.loads((tmp_path / "ws" / "tokenizers" / "cli-bpe" / "meta.json").read_text())
    assert meta["vocab_size"] == 500 and meta["corpus"]["name"] == "corpus"

    assert main(["--workspace", ws, "tokenizer", "train", "--corpus", str(corpus_file), "--vocab-size", "600",
                 "--pre-tokenizer", "metaspace", "--min-frequency", "3", "--name", "cli-meta"]) == 0
    capsys.readouterr()

    assert main(["--workspace", ws, "tokenizer", "encode", "cli-bpe", "Hello world"]) == 0
    out = capsys.readouterr().out
    assert "tokens: [H]" in out and "[␣w" in out  # the space is shown as ␣
    assert "tokens for 11 characters" in out

    assert main(["--workspace", ws, "tokenizer", "show", "cli-bpe", "--rows", "5"]) == 0
    out = capsys.readouterr().out
    assert "merges in learned order (242)" in out and "<|endoftext|>" in out

    assert main(["--workspace", ws, "tokenizer", "walk", "cli-bpe", " statement"]) == 0
    out = capsys.readouterr().out
    assert "start" in out and "merges; tokens:" in out

    assert main(["--workspace", ws, "tokenizer", "compare", "cli-bpe", "cli-meta", "the statements are here"]) == 0
    out = capsys.readouterr().out
    assert "cli-bpe" in out and "cli-meta" in out


def test_cli_errors_are_one_line(tmp_path, corpus_file, capsys):
    ws = str(tmp_path / "ws")
    assert main(["--workspace", ws, "tokenizer", "train", "--corpus", str(corpus_file), "--vocab-size", "100",
                 "--name", "small"]) == 2
    err = capsys.readouterr().err
    assert "error: Vocabulary size 100 is smaller than the base alphabet" in err
    assert main(["--workspace", ws, "tokenizer", "train", "--corpus", str(corpus_file), "--name", "../x"]) == 2
    assert "may not contain" in capsys.readouterr().err
    assert main(["--workspace", ws, "tokenizer", "encode", "missing", "x"]) == 2
    assert "No tokenizer named 'missing'" in capsys.readouterr().err
    assert not (tmp_path / "ws" / "tokenizers").exists() or not any((tmp_path / "ws" / "tokenizers").iterdir())


def test_sweep_command(tmp_path, corpus_file, capsys):
    assert main(["--workspace", str(tmp_path / "ws"), "tokenizer", "sweep", "--corpus", str(corpus_file),
                 "--vocab-size", "1024"]) == 0
    out = capsys.readouterr().out
    assert "vocab_size" in out and "1024" in out


def test_bench_prints_both_times_and_ratio(corpus_file, capsys, tmp_path):
    assert main(["--workspace", str(tmp_path / "ws"), "bench", "tokenizer", "--corpus", str(corpus_file),
                 "--vocab-size", "600", "--repeats", "1"]) == 0
    out = capsys.readouterr().out
    assert "builder" in out and "direct, whole text" in out and "ratio builder / direct (same chunks)" in out
    assert "same merges as the direct whole-text run: yes" in out
