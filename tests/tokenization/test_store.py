"""Training from a corpus, saving to the workspace, loading back (also in transformers)."""
from __future__ import annotations

import json

import pytest
from tokenizers import Tokenizer

from playground.data.corpora import Corpus
from playground.errors import DataError, InvalidNameError, PlaygroundError
from playground.tokenization import store
from playground.tokenization.bpe import TokenizerOptions


def _files(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")) if root.exists() else []


@pytest.fixture(scope="module")
def built(corpus) -> store.BuiltTokenizer:
    return store.train(Corpus("test", corpus, "test corpus"), TokenizerOptions(vocab_size=600,
                                                                              special_tokens=("<|endoftext|>", "<pad>", "<bos>", "<eos>")))


def test_train_measures_on_held_out_text(built, corpus):
    assert built.held_out
    assert built.corpus["held_out_chars"] > 0
    assert built.corpus["train_chars"] + built.corpus["held_out_chars"] == len(corpus)
    assert built.compression.chars == built.corpus["held_out_chars"]
    assert sum(built.counts) > 0 and len(built.counts) == 600


def test_save_writes_standard_files_and_lists_the_name(workspace, built):
    path = store.save(workspace, "my-bpe", built)
    assert workspace.names("tokenizers") == ["my-bpe"]
    assert sorted(p.name for p in path.iterdir()) == ["meta.json", "token_counts.json", "tokenizer.json"]
    meta = json.loads((path / "meta.json").read_text())
    assert meta["name"] == "my-bpe" and meta["kind"] == "bpe" and meta["vocab_size"] == 600
    assert meta["options"]["pre_tokenizer"] == "byte-level" and meta["corpus"]["description"] == "test corpus"
    assert meta["roles"] == {"pad": "<pad>", "eos": "<|endoftext|>", "bos": "<bos>"}
    assert meta["compression"]["bytes_per_token"] > 1
    assert Tokenizer.from_file(str(path / "tokenizer.json")).get_vocab_size() == 600
    loaded = store.load(workspace, "my-bpe")
    assert loaded.counts == built.counts and loaded.kind == "bpe"
    assert workspace.load_tokenizer("my-bpe").encode("hello").ids == built.tokenizer.encode("hello").ids


def test_saved_tokenizer_loads_in_transformers_and_encodes_identically(workspace, built, corpus):
    from transformers import PreTrainedTokenizerFast

    path = store.save(workspace, "hf-check", built)
    hf = PreTrainedTokenizerFast(tokenizer_file=str(path / "tokenizer.json"))
    ours = Tokenizer.from_file(str(path / "tokenizer.json"))
    for text in [corpus[:2000], "Jürgen 🙂 <pad> x", "  spaces\n\nlines", "<|endoftext|>"]:
        assert hf(text, add_special_tokens=False)["input_ids"] == ours.encode(text, add_special_tokens=False).ids
        ids = ours.encode(text).ids
        assert hf.decode(ids) == ours.decode(ids, skip_special_tokens=False) == text
    assert len(hf) == 600


@pytest.mark.parametrize("bad", ["a/b", "../up", "..", "", "   ", "x" * 65, "bad name", "/abs"])
def test_bad_names_leave_the_workspace_unchanged(workspace, built, bad):
    store.save(workspace, "keep", built)
    before = _files(workspace.root)
    with pytest.raises(InvalidNameError):
        store.save(workspace, bad, built)
    assert _files(workspace.root) == before


def test_existing_name_needs_overwrite(workspace, built):
    store.save(workspace, "same", built)
    before = _files(workspace.root)
    with pytest.raises(PlaygroundError, match="already exists"):
        store.save(workspace, "same", built)
    assert _files(workspace.root) == before
    store.save(workspace, "same", built, overwrite=True)
    assert workspace.names("tokenizers") == ["same"]


def test_draft_folder_saves_under_a_name(workspace, built, tmp_path):
    draft = store.write_folder(tmp_path / "draft", built)
    assert "name" not in json.loads((draft / "meta.json").read_text())
    store.save_folder(workspace, "from-draft", draft)
    loaded = store.load(workspace, "from-draft")
    assert loaded.meta["name"] == "from-draft" and loaded.counts == built.counts
    with pytest.raises(DataError, match="build one first"):
        store.save_folder(workspace, "nothing", tmp_path / "missing")
    assert workspace.names("tokenizers") == ["from-draft"]


def test_char_tokenizer_saves_with_its_specials(workspace, corpus):
    built = store.train(Corpus("c", corpus, "c"), TokenizerOptions(kind="char", special_tokens=("<pad>",)))
    store.save(workspace, "chars", built)
    meta = store.load(workspace, "chars").meta
    assert meta["kind"] == "char" and meta["special_tokens"] == ["<pad>", "<unk>"]
    assert meta["roles"] == {"pad": "<pad>", "unk": "<unk>"}


def test_summary_mentions_an_early_stop(workspace):
    built = store.train(Corpus("tiny", "abab abab abab\n" * 3, "tiny"), TokenizerOptions(vocab_size=1000))
    store.save(workspace, "tiny", built)
    text = store.summary_markdown(store.load(workspace, "tiny"))
    assert "Stopped at" in text and "training text" in text
