"""My space's import box, through its plain functions: uploads and Hub ids in, never a server path."""
from __future__ import annotations

from pathlib import Path

import pytest

from playground.bundle import load_bundle
from playground.errors import ConfigError
from playground.settings import DEMO_CAPS, FULL_CAPS
from playground.spaces import ReadOnlyError, Spaces
from playground.ui.import_box import about, check_size, import_model
from tests.pretrained.conftest import Saved

KEY = "b-" + "0" * 24


@pytest.fixture
def space(tmp_path: Path):
    return Spaces(tmp_path / "root", [tmp_path / "library"], scratch_dir_base=tmp_path / "scratch").space(KEY, "s1")


def uploads(saved: Saved) -> list[str]:
    return [str(p) for p in sorted(saved.folder.iterdir())]


def test_uploaded_files_import_into_the_users_space(space, saved: dict[str, Saved]) -> None:
    files = uploads(saved["DistilBertForSequenceClassification"])
    assert check_size(space, FULL_CAPS, "", files).startswith(
        "uploaded-model: DistilBertForSequenceClassification -> the playground's bert_classifier model, ")
    steps = list(import_model(space, FULL_CAPS, "", files, "sst-tiny", 3))
    assert [s[0].rsplit(". ", 1)[-1] for s in steps[:2]] == ["Fetching the weights…", "Converting…"]
    assert steps[0][1] == steps[1][1] == 3
    done = ("Imported **sst-tiny** into your space (bert_classifier): pick it in Generate or Analyze, "
            "beside one of your own models.")
    assert steps[-1] == (done, 4)
    bundle = load_bundle(space.get("models", "sst-tiny").path)
    assert bundle.class_names == ["negative", "neutral", "positive"] and bundle.config["read_only"] is True


def test_a_server_path_is_refused(space, saved: dict[str, Saved]) -> None:
    with pytest.raises(ConfigError, match="only Hub ids and your uploads are accepted, not server paths"):
        check_size(space, FULL_CAPS, str(saved["GPT2LMHeadModel"].folder), None)


def test_a_library_name_is_read_only(space, saved: dict[str, Saved], tmp_path: Path) -> None:
    lib = tmp_path / "library" / "models" / "shipped"
    lib.mkdir(parents=True)
    (lib / "config.json").write_text("{}")
    (lib / "model.safetensors").write_bytes(b"")
    with pytest.raises(ReadOnlyError, match="read-only model of the library"):
        list(import_model(space, FULL_CAPS, "", uploads(saved["GPT2LMHeadModel"]), "shipped", 0))


def test_the_box_says_the_demo_cap() -> None:
    assert "up to 82 M parameters" in about(DEMO_CAPS)
