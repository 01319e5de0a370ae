"""Where imports come from (a folder, the Hub's cache offline), the round trip, and bad input:
each refusal is one clear message and leaves no model behind."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from playground.bundle import load_bundle
from playground.errors import (
    ConfigError,
    NotFoundError,
    OfflineError,
    PlaygroundError,
    TooBigError,
)
from playground.models.export_hf import export_hf_gpt2
from playground.pretrained.export import export_pretrained
from playground.pretrained.importer import import_pretrained, plan_import
from playground.settings import DEMO_CAPS
from playground.workspace import Workspace
from tests.pretrained.conftest import ARCHITECTURES, Saved, byte_bpe

REV = "0123456789abcdef0123456789abcdef01234567"


def copy_of(saved: Saved, tmp_path: Path, name: str = "copy") -> Path:
    folder = tmp_path / name
    shutil.copytree(saved.folder, folder)
    return folder


def no_models(workspace: Workspace) -> bool:
    """Nothing listed, and no temp folder left behind."""
    folder = workspace.dir("models")
    return workspace.names("models") == [] and (not folder.is_dir() or not any(folder.iterdir()))


@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_round_trip_import_export_import_gives_identical_tensors(architecture: str, saved: dict[str, Saved],
                                                                  tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "ws")
    first = load_bundle(import_pretrained(str(saved[architecture].folder), ws, "first"))
    out = export_pretrained(first, tmp_path / "exported")
    theirs = load_file(str(saved[architecture].folder / "model.safetensors"))
    for key, value in load_file(str(out / "model.safetensors")).items():  # their names, their values
        assert torch.equal(value, theirs[key]), key
    second = load_bundle(import_pretrained(str(out), ws, "second"))
    a, b = first.model.state_dict(), second.model.state_dict()
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_gpt2_round_trip_through_the_existing_gpt2_export(saved: dict[str, Saved], tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "ws")
    first = load_bundle(import_pretrained(str(saved["GPT2LMHeadModel"].folder), ws, "first"))
    out = export_hf_gpt2(first.model, first.model_config, tmp_path / "gpt2", tokenizer=first.tokenizer)
    second = load_bundle(import_pretrained(str(out), ws, "second"))
    a, b = first.model.state_dict(), second.model.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)


def hub_cache(saved: Saved, root: Path, repo: str = "org/tiny-gpt2") -> Path:
    """huggingface_hub's cache layout: models--org--name/{refs/main, snapshots/<rev>/files}."""
    repo_dir = root / ("models--" + repo.replace("/", "--"))
    (repo_dir / "refs").mkdir(parents=True)
    (repo_dir / "refs" / "main").write_text(REV)
    shutil.copytree(saved.folder, repo_dir / "snapshots" / REV)
    return root


def test_hub_id_imports_offline_from_the_cache(saved: dict[str, Saved], tmp_path: Path) -> None:
    cache = hub_cache(saved["GPT2LMHeadModel"], tmp_path / "hub")
    plan = plan_import("org/tiny-gpt2", cache_dir=cache, offline=True)
    assert plan.cached and plan.download_bytes == (saved["GPT2LMHeadModel"].folder / "model.safetensors").stat().st_size
    assert "GPT2LMHeadModel -> the playground's gpt model" in plan.summary()
    bundle = load_bundle(import_pretrained("org/tiny-gpt2", Workspace(tmp_path / "ws"), cache_dir=cache, offline=True))
    assert bundle.name == "tiny-gpt2" and bundle.config["pretrained"] | {"hf_config": None} == {
        "source": "org/tiny-gpt2", "hub": True, "revision": None, "architecture": "GPT2LMHeadModel",
        "hf_config": None, "params": plan.params}
    ids = torch.tensor([[5, 6, 7]])
    with torch.no_grad():
        assert (bundle.model(ids) - saved["GPT2LMHeadModel"].model(ids).logits).abs().max() <= 1e-4


def test_hub_id_offline_and_not_cached_is_one_clear_line(tmp_path: Path) -> None:
    with pytest.raises(OfflineError, match="not in the Hugging Face cache and the Hub is offline") as err:
        plan_import("org/never-downloaded", cache_dir=tmp_path / "empty", offline=True)
    assert "\n" not in str(err.value)


def test_the_app_accepts_hub_ids_only_never_a_server_path(saved: dict[str, Saved]) -> None:
    with pytest.raises(ConfigError, match="only Hub ids and your uploads"):
        plan_import(str(saved["GPT2LMHeadModel"].folder), allow_paths=False)


def test_folder_without_config_json_is_refused(saved: dict[str, Saved], tmp_path: Path) -> None:
    folder = copy_of(saved["GPT2LMHeadModel"], tmp_path)
    (folder / "config.json").unlink()
    with pytest.raises(NotFoundError, match="has no config.json"):
        plan_import(str(folder))


def test_pickle_only_checkpoint_is_refused_and_never_opened(saved: dict[str, Saved], tmp_path: Path) -> None:
    folder = copy_of(saved["GPT2LMHeadModel"], tmp_path)
    (folder / "model.safetensors").unlink()
    (folder / "pytorch_model.bin").write_bytes(b"not even a pickle: it must not be read")
    with pytest.raises(ConfigError, match="pytorch_model.bin, a pickle, which the playground never loads"):
        plan_import(str(folder))


def test_unknown_architecture_names_what_is_supported(saved: dict[str, Saved], tmp_path: Path) -> None:
    folder = copy_of(saved["GPT2LMHeadModel"], tmp_path)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(config | {"architectures": ["LlamaForCausalLM"]}))
    with pytest.raises(ConfigError, match="is a LlamaForCausalLM, which the playground cannot convert.*GPT2LMHeadModel"):
        plan_import(str(folder))


def test_config_choices_the_family_lacks_are_named(saved: dict[str, Saved], tmp_path: Path) -> None:
    folder = copy_of(saved["BertForMaskedLM"], tmp_path)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(config | {"position_embedding_type": "relative_key"}))
    with pytest.raises(ConfigError, match="position_embedding_type='relative_key'"):
        plan_import(str(folder))


def test_model_over_the_cap_is_refused_before_its_weights_are_read(saved: dict[str, Saved], tmp_path: Path) -> None:
    folder = copy_of(saved["GPT2LMHeadModel"], tmp_path)
    config = json.loads((folder / "config.json").read_text())
    big = config | {"n_embd": 1024, "n_layer": 24, "n_head": 16, "vocab_size": 50257, "n_positions": 1024}
    (folder / "config.json").write_text(json.dumps(big))
    (folder / "model.safetensors").write_bytes(b"")  # never opened: the size comes from config.json
    (folder / "tokenizer.json").write_text(byte_bpe(300).to_str())
    with pytest.raises(TooBigError, match=r"has 354\.8 M parameters; this server imports models of at most 82\.0 M"):
        plan_import(str(folder), caps=DEMO_CAPS)


def test_tokenizer_larger_than_the_vocabulary_is_refused(saved: dict[str, Saved], tmp_path: Path) -> None:
    folder = copy_of(saved["GPT2LMHeadModel"], tmp_path)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(config | {"vocab_size": 200}))
    with pytest.raises(ConfigError, match="has 300 tokens but the model only 200 embeddings"):
        plan_import(str(folder))


def test_weights_cut_off_half_way_leave_no_model(saved: dict[str, Saved], tmp_path: Path) -> None:
    folder = copy_of(saved["GPT2LMHeadModel"], tmp_path)
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    ws = Workspace(tmp_path / "ws")
    with pytest.raises(PlaygroundError, match="incomplete or damaged .*; nothing was imported"):
        import_pretrained(str(folder), ws, "half")
    assert no_models(ws)


def test_hub_download_cut_off_leaves_no_model(saved: dict[str, Saved], tmp_path: Path) -> None:
    """A cache whose blob was cut off (what a broken download would leave) imports nothing."""
    cache = hub_cache(saved["GPT2LMHeadModel"], tmp_path / "hub")
    weights = next(cache.glob("models--*/snapshots/*/model.safetensors"))
    weights.write_bytes(weights.read_bytes()[:1000])
    ws = Workspace(tmp_path / "ws")
    with pytest.raises(PlaygroundError, match="incomplete or damaged"):
        import_pretrained("org/tiny-gpt2", ws, cache_dir=cache, offline=True)
    assert no_models(ws)


def test_an_existing_name_is_not_overwritten(saved: dict[str, Saved], tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "ws")
    import_pretrained(str(saved["ViTForImageClassification"].folder), ws, "vit")
    with pytest.raises(PlaygroundError, match="already exists"):
        import_pretrained(str(saved["ViTForImageClassification"].folder), ws, "vit")
    assert load_bundle(ws.path("models", "vit")).class_names == ["cat", "dog"]


def test_an_overlong_hub_id_is_refused_before_huggingface_hub_sees_it():
    import pytest

    from playground.errors import ConfigError
    from playground.pretrained.sources import open_source

    with pytest.raises(ConfigError, match="at most 96 characters") as err:
        open_source("x" * 1_000_000, allow_paths=False)
    assert len(str(err.value)) < 200
