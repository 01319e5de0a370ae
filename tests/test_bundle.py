"""Checkpoint bundles: round trip, clean keys, atomicity, no unpickling, the shared cache."""
from __future__ import annotations

import json

import pytest
import torch

from playground.bundle import cached_bundle, load_bundle, read_metrics_csv, save_bundle
from playground.errors import NotFoundError, PlaygroundError
from playground.families import build_model, get_family


def _tiny_gpt():
    cfg = get_family("gpt").config_cls(vocab_size=11, block_size=8, n_layer=1, n_head=2, d_model=8)
    torch.manual_seed(0)
    return build_model("gpt", cfg), cfg


def _char_tokenizer():
    from tokenizers import Tokenizer, models

    return Tokenizer(models.WordLevel({c: i for i, c in enumerate("abcdefghij")} | {"<unk>": 10}, unk_token="<unk>"))


def test_round_trip_gives_identical_outputs(workspace):
    model, cfg = _tiny_gpt()
    rows = [{"step": 10, "val_loss": 2.5}, {"step": 20, "val_loss": 2.25, "lr": 1e-3}]
    save_bundle(workspace, "m", model, "gpt", cfg, preset="p", step=20, metrics={"val_loss": 2.25},
                metrics_rows=rows, tokenizer=_char_tokenizer(), train_config={"lr": 1e-3})
    bundle = load_bundle("m", workspace)
    idx = torch.randint(0, 11, (2, 8))
    model.eval()
    assert torch.equal(bundle.model(idx), model(idx))
    assert bundle.family == "gpt" and bundle.model_config == cfg and bundle.config["step"] == 20
    assert bundle.tokenizer.get_vocab() == _char_tokenizer().get_vocab()
    assert read_metrics_csv(bundle.metrics_path) == [{"step": 10, "val_loss": 2.5, "lr": None},
                                                     {"step": 20, "val_loss": 2.25, "lr": 0.001}]
    assert load_bundle(bundle.path).name == "m"  # a folder path works too


def test_compiled_and_wrapped_keys_are_saved_clean(workspace):
    from safetensors import safe_open

    model, cfg = _tiny_gpt()

    class Wrapper(torch.nn.Module):  # stands in for torch.compile's OptimizedModule
        def __init__(self, inner):
            super().__init__()
            self._orig_mod = inner

    path = save_bundle(workspace, "w", Wrapper(model), "gpt", cfg)
    with safe_open(str(path / "model.safetensors"), "pt") as f:
        keys = list(f.keys())
    assert keys and not any(k.startswith(("_orig_mod.", "module.")) for k in keys)


def test_missing_and_mismatched_checkpoints_get_clear_errors(workspace):
    with pytest.raises(NotFoundError, match="python -m playground list"):
        load_bundle("/no/such/folder")
    model, cfg = _tiny_gpt()
    path = save_bundle(workspace, "bad", model, "gpt", cfg)
    config = json.loads((path / "config.json").read_text())
    config["model"]["d_model"] = 16
    (path / "config.json").write_text(json.dumps(config))
    with pytest.raises(PlaygroundError, match="do not match"):
        load_bundle(path)


def test_loading_never_unpickles(workspace, monkeypatch):
    import pickle

    def refuse(*args, **kwargs):
        raise AssertionError("unpickling attempted")

    monkeypatch.setattr(pickle, "load", refuse)
    monkeypatch.setattr(pickle, "loads", refuse)
    monkeypatch.setattr(torch, "load", refuse)
    model, cfg = _tiny_gpt()
    save_bundle(workspace, "safe", model, "gpt", cfg)
    assert load_bundle("safe", workspace).family == "gpt"


def test_cache_is_shared_and_refreshes_on_new_weights(workspace):
    model, cfg = _tiny_gpt()
    save_bundle(workspace, "c", model, "gpt", cfg, step=1)
    first = cached_bundle("c", workspace)
    assert cached_bundle("c", workspace) is first
    assert not any(p.requires_grad for p in first.model.parameters())  # read-only
    import os
    import time

    save_bundle(workspace, "c", model, "gpt", cfg, step=2)
    weights = workspace.path("models", "c") / "model.safetensors"
    os.utime(weights, (time.time() + 5, time.time() + 5))
    second = cached_bundle("c", workspace)
    assert second is not first and second.config["step"] == 2
