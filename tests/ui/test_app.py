"""The app end to end: a real server on loopback, driven through gradio_client."""
from __future__ import annotations

import uuid

import pytest

from playground.settings import make_settings
from playground.ui.app import build_app, header_markdown
from playground.workspace import Workspace


def _tiny_tokenizer_json() -> str:
    from tokenizers import Tokenizer, models

    return Tokenizer(models.WordLevel({"a": 0, "<unk>": 1}, unk_token="<unk>")).to_str()


def _save_tiny_model(ws: Workspace, name: str) -> None:
    from playground.bundle import save_bundle
    from playground.families import build_model, get_family

    family = get_family("gpt")
    cfg = family.config_cls(vocab_size=8, block_size=8, n_layer=1, n_head=1, d_model=8)
    save_bundle(ws, name, build_model("gpt", cfg), "gpt", cfg, step=1, metrics={"val_loss": 2.0})


def test_build_app_has_no_side_effects(tmp_path):
    root = tmp_path / "ws"
    app = build_app(make_settings(root, device="cpu"))
    assert app is not None
    assert not root.exists()  # building writes nothing


def test_header_shows_device_and_demo_mode_but_no_server_path(tmp_path):
    text = header_markdown(make_settings(tmp_path, device="cpu", demo=True))
    assert "cpu" in text and "demo" in text and "private to you" in text
    assert str(tmp_path) not in text  # a public server shows no server paths


def test_tabs_in_order(tmp_path):
    app = build_app(make_settings(tmp_path, device="cpu"))
    top = [b for b in app.blocks.values() if type(b).__name__ == "Tab" and (b.elem_id or "").startswith("tab-")]
    assert [(b.label, b.elem_id) for b in top] == [("Tokenizer", "tab-tokenizer"), ("Train", "tab-train"),
                                                    ("Generate", "tab-generate"), ("Analyze", "tab-analyze"),
                                                    ("Lessons", "tab-lessons"), ("My space", "tab-space")]


def test_no_event_outputs_a_layout_block_holding_other_tabs_blocks(tmp_path):
    """Gradio's frontend re-reads, on every later event's status change, each block any event had
    as an output and, for a layout block, everything inside it. An event into the gr.Tabs made
    every click re-read the whole app (playground.ui.tab_switch); none may output it, and no
    output container may hold more than a small group of controls."""
    from gradio.blocks import BlockContext

    app = build_app(make_settings(tmp_path, device="cpu"))

    def inside(block) -> int:
        return sum(1 + inside(c) for c in getattr(block, "children", None) or [])

    containers = {o._id: o for fn in app.fns.values() for o in fn.outputs if isinstance(o, BlockContext)}
    assert not [b for b in containers.values() if type(b).__name__ in ("Tabs", "Tab")]
    assert max((inside(b) for b in containers.values()), default=0) <= 20


def test_progress_shows_on_small_components_only(tmp_path):
    """The browser snapshots the value of each progress target of every event that ran, on every
    later status change (playground.ui.progress_targets): in the served config no event leaves its
    targets to the default, one with hidden progress has none, and one that shows progress shows
    it on status lines and fields, never on a chart, a table or a file (the app's HTML status lines
    and Generate's streamed text are named where they are the place to show it)."""
    app = build_app(make_settings(tmp_path, device="cpu"))
    deps = app.config["dependencies"]
    types = {c["id"]: c["type"] for c in app.config["components"]}
    assert all(isinstance(d["show_progress_on"], list) for d in deps)
    assert all(d["show_progress_on"] == [] for d in deps if d["show_progress"] == "hidden")
    shown = {d["api_name"]: [types[t] for t in d["show_progress_on"]] for d in deps if d["show_progress"] != "hidden"}
    named_html = {"generate_text", "train_start", "train_resume", "train_stop"}
    heavy = {"plot", "dataframe", "file", "downloadbutton", "image", "gallery", "json", "state", "column", "row"}
    for api_name, target_types in shown.items():
        assert not heavy & set(target_types), (api_name, target_types)
        assert "html" not in target_types or api_name in named_html, (api_name, target_types)
    assert shown["generate_text"] == ["html"] and shown["train_preset"] == ["markdown"]
    assert shown["analyze"] == ["markdown"]  # its summary line, not its two charts and two tables
    assert sum(len(t) for t in shown.values()) < 150  # of ~550 blocks; every output was 256 before


def test_saved_entries_reach_other_tabs_without_restart(app_server):
    from gradio_client import Client

    client = Client(app_server.url, verbose=False)
    ws = app_server.library
    tok_name, model_name = f"tok-{uuid.uuid4().hex[:6]}", f"model-{uuid.uuid4().hex[:6]}"
    ws.save_tokenizer(tok_name, _tiny_tokenizer_json(), {"vocab_size": 2})
    _save_tiny_model(ws, model_name)

    # A saved tokenizer appears in Train's choices; a saved model in Generate's and Analyze's.
    assert tok_name in _choices(client.predict(None, api_name="/refresh_train_tokenizers"))
    for endpoint in ("/refresh_generate_models", "/refresh_analyze_models"):
        assert model_name in _choices(client.predict(None, api_name=endpoint))


def test_the_page_config_travels_gzipped(app_server):
    import gzip
    import json
    import urllib.request

    def get(encoding: str):
        request = urllib.request.Request(app_server.url + "config", headers={"Accept-Encoding": encoding})
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.headers.get("Content-Encoding"), response.read()

    (packed_as, packed), (plain_as, plain) = get("gzip"), get("identity")
    assert packed_as == "gzip" and plain_as is None
    assert len(packed) * 4 < len(plain)  # ~380 KB of JSON, about a tenth on the wire
    assert json.loads(gzip.decompress(packed)) == json.loads(plain)
    assert get("gzip") == (packed_as, packed) and get("identity") == (plain_as, plain)  # again, from memory


def _choices(update) -> list[str]:
    """Choice values from a dropdown update as gradio_client returns it."""
    if isinstance(update, dict) and "choices" in update:
        return [c[0] if isinstance(c, (list, tuple)) else c for c in update["choices"]]
    pytest.fail(f"expected a dropdown update with choices, got {update!r}")


def test_each_client_has_its_own_space_and_can_share(app_server):
    """Two sessions: what one saves the other cannot see until it is shared, and then only read."""
    from gradio_client import Client

    alice, bob = Client(app_server.url, verbose=False), Client(app_server.url, verbose=False)
    name = f"own-{uuid.uuid4().hex[:6]}"
    app_server.space_of(alice).save_tokenizer(name, _tiny_tokenizer_json(), {"vocab_size": 2})
    assert name in _choices(alice.predict(None, api_name="/refresh_train_tokenizers"))
    assert name not in _choices(bob.predict(None, api_name="/refresh_train_tokenizers"))
    table = bob.predict(api_name="/refresh_space")
    assert name not in str(table)

    # A refusal is the status line (My space's events run unqueued: a raised error showed a bare "Error").
    status, _ = bob.predict("tokenizer", name, "", 0, api_name="/space_share")
    assert status.startswith("**Could not share:**") and "Only your own" in status
    status, *_ = bob.predict("tokenizer", name, 0, api_name="/space_delete")
    assert status.startswith("**Could not delete:**") and "No tokenizer" in status
    status, table = alice.predict("tokenizer", name, "", 0, api_name="/space_share")  # (State outputs are not returned)
    assert "Shared" in status
    assert name in _choices(bob.predict(None, api_name="/refresh_train_tokenizers"))
    status, *_ = bob.predict("tokenizer", name, 0, api_name="/space_delete")
    assert "read-only to you" in status
    assert app_server.space_of(alice).exists("tokenizers", name)


def test_library_models_cannot_be_overwritten_by_training(app_server, tmp_path):
    """The shipped-demo case: a 5-step run under a library model's name is refused and the model is unchanged."""
    from gradio_client import Client
    from gradio_client.exceptions import AppError

    name = f"lib-{uuid.uuid4().hex[:6]}"
    _save_tiny_model(app_server.library, name)
    before = (app_server.library.path("models", name) / "model.safetensors").read_bytes()
    client = Client(app_server.url, verbose=False)
    toml = 'family = "gpt"\n[model]\nblock_size = 8\nn_layer = 1\nn_head = 1\nd_model = 8\n[data]\ncorpus = "python-docs"\n' \
           '[train]\nmax_steps = 2\nbatch_size = 2\n'
    with pytest.raises(AppError, match="read-only"):
        client.predict("nanogpt-cpu-tiny", toml, name, True, 0, api_name="/train_start")
    with pytest.raises(AppError, match="read-only"):
        client.predict(toml, name, 0, api_name="/train_resume")
    assert (app_server.library.path("models", name) / "model.safetensors").read_bytes() == before
