"""Hub-ready folders: a trained model's card says what changed from its shipped preset and what it
reached (the numbers of its own metrics.csv), the folder carries no resume state, a tokenizer's
folder loads in `tokenizers`, and an upload offline says so and leaves the folder."""
from __future__ import annotations

from pathlib import Path

import pytest
from tokenizers import Tokenizer

from playground.__main__ import main
from playground.bundle import read_metrics_csv
from playground.errors import ConfigError, PlaygroundError
from playground.hub_share import CURVES_IMAGE, changed_from_preset, prepare, upload
from playground.training.engine import run_training
from playground.workspace import Workspace

SHIPPED = Path(__file__).resolve().parents[1] / "checkpoints"

SMALL = {"model.n_layer": 1, "model.d_model": 32, "model.n_head": 2, "model.block_size": 16,
         "train.max_steps": 6, "train.eval_interval": 3, "train.log_interval": 1, "train.batch_size": 4}


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    ws = Workspace(tmp_path_factory.mktemp("hub-ws"))
    run_training("nanogpt-cpu-tiny", ws, "card-run", device="cpu", overrides=dict(SMALL))
    return ws


@pytest.mark.slow  # the module's fixture trains a run (seconds)
def test_the_card_lists_what_changed_from_the_preset_and_what_it_reached(trained, tmp_path):
    folder = prepare(trained, "model", "card-run", tmp_path / "out")
    meta = trained.get("models", "card-run").meta
    changed = {key: (was, now) for key, was, now in changed_from_preset(meta)}
    assert set(changed) == set(SMALL)  # exactly the overrides, each beside the preset's value
    assert changed["train.max_steps"][1] == 6 and changed["train.max_steps"][0] != 6
    for key in SMALL:
        assert f"| {key} |" in folder.card
    last = read_metrics_csv(trained.path("models", "card-run") / "metrics.csv")[-1]
    assert last["step"] == 6
    assert f"| val_loss | {last['val_loss']:.4g} |" in folder.card
    assert folder.card.startswith("---\nlibrary_name: transformer-playground\n")
    assert "## Validation, at step 6" in folder.card


@pytest.mark.slow
def test_the_folder_has_weights_curves_and_no_resume_state(trained, tmp_path):
    folder = prepare(trained, "model", "card-run", tmp_path / "out")
    names = sorted(p.name for p in folder.path.iterdir())
    assert names == sorted(["README.md", CURVES_IMAGE, "config.json", "metrics.csv", "model.safetensors",
                            "tokenizer.json", "train_log.csv"])
    assert (folder.path / CURVES_IMAGE).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (folder.path / "model.safetensors").read_bytes() == \
        (trained.path("models", "card-run") / "model.safetensors").read_bytes()
    with pytest.raises(ConfigError, match="not empty"):
        prepare(trained, "model", "card-run", folder.path)


def test_a_tokenizer_folder_loads_in_tokenizers(tmp_path):
    shipped = Workspace(SHIPPED)
    folder = prepare(shipped, "tokenizer", "shakespeare-bpe", tmp_path / "tok")
    original = Tokenizer.from_file(str(shipped.path("tokenizers", "shakespeare-bpe") / "tokenizer.json"))
    copy = Tokenizer.from_file(str(folder.path / "tokenizer.json"))
    assert copy.get_vocab() == original.get_vocab()
    assert "1,024 tokens" in folder.card and "| vocab_size | 1,024 |" in folder.card


def test_upload_offline_says_so_and_leaves_the_folder(tmp_path):
    folder = prepare(Workspace(SHIPPED), "tokenizer", "shakespeare-bpe", tmp_path / "tok")
    with pytest.raises(PlaygroundError, match=f"Offline.*ready at {folder.path}.*hf upload me/bpe") as said:
        upload(folder, "me/bpe", token="hf_secret_never_shown")
    assert "hf_secret" not in str(said.value)
    with pytest.raises(ConfigError, match="not a Hub repository id"):
        upload(folder, "../../etc", token=None)
    assert (folder.path / "tokenizer.json").is_file()


@pytest.mark.slow
def test_cli_publish_writes_the_folder(trained, tmp_path, capsys):
    code = main(["--workspace", str(trained.root), "publish", "card-run", "--out", str(tmp_path / "cli")])
    assert code == 0 and "wrote 7 files" in capsys.readouterr().out
    assert (tmp_path / "cli" / "README.md").is_file()


def test_my_space_prepares_the_zip_and_says_why_an_upload_did_not_happen(tmp_path):
    import zipfile

    from playground.spaces import Spaces
    from playground.ui.space_panel import hub_folder, hub_upload

    space = Spaces(tmp_path / "root", [SHIPPED]).space("b-" + "0" * 24, "session")
    archive, status = hub_folder(space, "tokenizer", "shakespeare-bpe")
    assert {"README.md", "tokenizer.json", "meta.json"} <= set(zipfile.ZipFile(archive).namelist())
    assert "ready to download" in status
    said = hub_upload(space, "tokenizer", "shakespeare-bpe", "me/bpe", "hf_secret_never_shown")
    assert said.startswith("**Could not upload:** Offline") and "hf_secret" not in said
    assert hub_folder(space, "model", "no-such-model")[1].startswith("**Could not prepare the Hub folder:**")
    assert hub_folder(space, "model", "../etc")[1].startswith("**Could not prepare the Hub folder:**")
