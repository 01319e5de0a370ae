"""Tokenizer tab: handlers called directly, and one round trip through the running app."""
from __future__ import annotations

import uuid
from pathlib import Path

import gradio as gr
import pandas as pd
import pytest

from playground.data.corpora import python_docs_text
from playground.settings import DEMO_CAPS, FULL_CAPS
from playground.ui import tokenizer_tab as tab

TEXT = python_docs_text()[:40_000] + "The quick brown fox jumps over the lazy dog.\n" * 20 + "Jürgen sagt: schöne Grüße!\n" * 50
DEFAULTS = dict(kind="bpe", vocab_size=400, min_frequency=2, normalizer="none", pre_tokenizer="byte-level",
                specials=["<|endoftext|>", "<pad>"], fallback="bytes")


def _build(ws, state=None, caps=FULL_CAPS, source="paste", files=None, paste=TEXT, **options):
    o = {**DEFAULTS, **options}
    outputs = list(tab.build_handler(ws, caps, source, files, paste, o["kind"], o["vocab_size"], o["min_frequency"],
                                     o["normalizer"], o["pre_tokenizer"], o["specials"], o["fallback"], state))
    return outputs


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")) if root.exists() else []


@pytest.fixture
def built_state(workspace):
    outputs = _build(workspace)
    status, state = outputs[-1]
    yield state
    tab._remove_scratch(state)


def test_build_streams_progress_and_keeps_a_draft(workspace, built_state):
    assert built_state["draft"] and built_state["name"] is None
    assert (Path(built_state["scratch"]) / "draft" / "tokenizer.json").is_file()
    assert not workspace.root.exists()  # nothing saved until Save


def test_build_status_lines(workspace):
    outputs = _build(workspace)
    assert outputs[0][0] == "Loading the corpus…"
    assert outputs[-1][0].startswith("Built BPE 400 · byte-level") and "Not saved yet" in outputs[-1][0]
    tab._remove_scratch(outputs[-1][1])


def test_show_handler_fills_every_view(workspace, built_state):
    summary, vocab, merges, plot, lengths_csv, vocab_csv, merges_csv, tok_json = tab.show_handler(
        workspace, built_state).values()
    assert "unsaved tokenizer" in summary and "vocabulary **400**" in summary
    assert isinstance(vocab, pd.DataFrame) and len(vocab) == 400 and vocab["count"].notna().all()
    assert len(merges) == 400 - 258
    assert plot is not None
    for path in (lengths_csv, vocab_csv, merges_csv, tok_json):
        assert Path(path).is_file()
    assert pd.read_csv(vocab_csv).shape[0] == 400


def test_encode_walk_and_filters(workspace, built_state):
    html, stats, ids = tab.encode_handler(workspace, built_state, "The quick brown fox")
    assert "<span" in html and "tokens for 19 characters" in stats and "**yes**" in stats
    assert list(ids.columns) == ["position", "id", "token", "text"]
    md, table = tab.walk_handler(workspace, built_state, " quick")
    assert "Same as `encode`: **yes**" in md and table.iloc[0]["merge"] == "start"
    found = tab.vocab_filter_handler(workspace, built_state, "␣th")
    assert len(found) >= 1 and all("␣th" in t for t in found["token"])
    merges = tab.merges_filter_handler(workspace, built_state, "th")
    assert len(merges) >= 1


def test_save_returns_next_version_and_lists_the_name(workspace, built_state):
    status, state, version = tab.save_handler(workspace, built_state, "tab-bpe", False, 3)
    assert version == 4 and "tab-bpe" in status
    assert state == {"scratch": built_state["scratch"], "draft": False, "name": "tab-bpe"}
    assert workspace.names("tokenizers") == ["tab-bpe"]
    saved, cmp_a, cmp_b = tab.refresh_saved(workspace, None, None, None)
    assert saved["choices"] == ["tab-bpe"] or [c[0] if isinstance(c, tuple) else c for c in saved["choices"]] == ["tab-bpe"]
    summary = tab.show_handler(workspace, state).summary
    assert summary.startswith("**tab-bpe**")


def test_compare_starts_on_two_different_tokenizers(workspace, built_state):
    """With one saved tokenizer B stays empty (nothing to compare with yet); with two, A and B
    differ; the same tokenizer twice is refused with a message."""
    tab.save_handler(workspace, built_state, "one", False, 0)
    _, a, b = tab.refresh_saved(workspace, None, None, None)
    assert a["value"] == "one" and b["value"] is None
    tab.save_handler(workspace, built_state, "two", False, 1)
    _, a, b = tab.refresh_saved(workspace, None, None, None)
    assert {a["value"], b["value"]} == {"one", "two"}
    with pytest.raises(gr.Error, match="two different"):
        tab.compare_handler(workspace, "one", "one", "some text")


@pytest.mark.parametrize("bad", ["a/b", "..", "../x", "", "with space"])
def test_save_with_a_bad_name_is_a_clear_error_and_changes_nothing(workspace, built_state, bad):
    before = _files(workspace.root)
    with pytest.raises(gr.Error) as info:
        tab.save_handler(workspace, built_state, bad, False, 0)
    assert "name" in str(info.value).lower()
    assert _files(workspace.root) == before


def test_bad_input_is_a_clear_error(workspace, tmp_path):
    with pytest.raises(gr.Error, match="pasted text is empty"):
        _build(workspace, paste="   ")
    with pytest.raises(gr.Error, match="smaller than the base alphabet"):
        _build(workspace, vocab_size=100)
    with pytest.raises(gr.Error, match="demo cap"):
        _build(workspace, caps=DEMO_CAPS, vocab_size=9000)
    binary = tmp_path / "upload.txt"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    with pytest.raises(gr.Error, match="upload.txt looks like a binary file"):
        _build(workspace, source="upload", files=[str(binary)])
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    with pytest.raises(gr.Error, match="empty.txt is empty"):
        _build(workspace, source="upload", files=[str(empty)])
    with pytest.raises(gr.Error, match="Upload one or more"):
        _build(workspace, source="upload", files=[])
    with pytest.raises(gr.Error, match="Build a tokenizer or load"):
        tab.encode_handler(workspace, None, "x")
    assert not workspace.root.exists()


def test_uploaded_files_and_char_kind(workspace, tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("hello world\n" * 50)
    b.write_text("goodbye moon\n" * 50)
    status, state = _build(workspace, source="upload", files=[str(a), str(b)], kind="char")[-1]
    assert "character-level" in status
    summary = tab.show_handler(workspace, state).summary
    assert "uploaded a.txt, b.txt" in summary
    md, _ = tab.walk_handler(workspace, state, "hello")
    assert "no merges" in md
    tab._remove_scratch(state)


def test_load_compare_and_sweep(workspace, built_state):
    tab.save_handler(workspace, built_state, "first", False, 0)
    status, other = _build(workspace, vocab_size=300, pre_tokenizer="metaspace", fallback="unk")[-1]
    tab.save_handler(workspace, other, "second", False, 1)
    state = tab.load_handler(workspace, "first", None)
    assert state["name"] == "first" and not state["draft"]
    with pytest.raises(gr.Error, match="No tokenizer named 'nope'"):
        tab.load_handler(workspace, "nope", None)
    summary, chart, diffs, html_a, html_b = tab.compare_handler(workspace, "first", "second", "The quick brown fox")
    assert list(summary["tokenizer"]) == ["first", "second"] and "<span" in html_a and "<span" in html_b
    assert set(diffs.columns) >= {"word", "first", "second", "occurrences"}
    outputs = list(tab.sweep_handler(workspace, FULL_CAPS, "paste", None, TEXT, "bpe", 2, "none", "byte-level",
                                     ["<pad>"], "bytes", 600, state))
    status, plot, csv = outputs[-1]
    assert "Swept" in status and plot is not None
    table = pd.read_csv(csv)
    assert list(table["vocab_size"]) == [257, 512, 600]
    tab._remove_scratch(state)
    tab._remove_scratch(other)


def test_round_trip_through_the_running_app(app_server):
    from gradio_client import Client

    client = Client(app_server.url, verbose=False)
    name = f"api-{uuid.uuid4().hex[:6]}"
    status = client.predict("paste", [], TEXT, "bpe", 300, 2, "none", "byte-level", ["<|endoftext|>", "<pad>"],
                            "bytes", api_name="/tokenizer_build")
    assert status.startswith("Built BPE 300")
    summary = client.predict(api_name="/tokenizer_show")[0]
    assert "vocabulary **" in summary
    saved = client.predict(name, False, api_name="/tokenizer_save")
    assert name in saved
    choices, _, _ = client.predict(None, None, None, api_name="/refresh_tokenizer_saved")
    names = [c[0] if isinstance(c, (list, tuple)) else c for c in choices["choices"]]
    assert name in names

    assert name in app_server.space_of(client).names("tokenizers")
    html, stats, _ids = client.predict("fox", api_name="/tokenizer_encode")
    assert "<span" in html and "tokens for 3 characters" in stats
