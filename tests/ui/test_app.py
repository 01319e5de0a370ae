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
    from playground.models.registry import build_model, get_family

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


def test_four_tabs_in_order(tmp_path):
    app = build_app(make_settings(tmp_path, device="cpu"))
    top = [b for b in app.blocks.values() if type(b).__name__ == "Tab" and (b.elem_id or "").startswith("tab-")]
    assert [(b.label, b.elem_id) for b in top] == [("Tokenizer", "tab-tokenizer"), ("Train", "tab-train"),
                                                    ("Generate", "tab-generate"), ("Analyze", "tab-analyze")]


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


def _choices(update) -> list[str]:
    """Choice values from a dropdown update as gradio_client returns it."""
    if isinstance(update, dict) and "choices" in update:
        return [c[0] if isinstance(c, (list, tuple)) else c for c in update["choices"]]
    pytest.fail(f"expected a dropdown update with choices, got {update!r}")
