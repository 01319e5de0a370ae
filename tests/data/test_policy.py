"""No typed path reaches the file system in the app (user_paths False); the CLI keeps its paths.

One test per entry point: corpora, training text / pairs / image zips, uploads, zips, presets,
validation samples; each with the real loaders (no mocks).
"""
from __future__ import annotations

import io
import stat
import zipfile
from pathlib import Path

import numpy as np
import pytest

from playground.data.corpora import load_corpora, load_corpus
from playground.data.policy import DataPolicy, PathRefused, check_upload, check_zip, data_policy
from playground.errors import DataError, NotFoundError
from playground.settings import REPO_ROOT, make_settings

ATTACKS = ["/etc/passwd", "../../etc/passwd", "~/.ssh/id_rsa", str(REPO_ROOT / "playground" / "settings.py"),
           "file:///etc/passwd", "upload:../../etc/passwd", "upload:/etc/passwd", "upload:..", "upload:.hidden"]
REFUSED = "not accepted on a shared server|plain file name|plain uploaded file|no uploaded file"


@pytest.fixture
def app_policy(tmp_path: Path) -> DataPolicy:
    """The served app's policy for one user: uploads only, in that user's folder."""
    from playground.workspace import Workspace

    return data_policy(make_settings(tmp_path, device="cpu", app=True), Workspace(tmp_path / "user"))


def _text_file(path: Path, lines: int = 200) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"line {i} of a small corpus\n" for i in range(lines)), encoding="utf-8")
    return path


def _image_zip(path: Path, extra: list[tuple[zipfile.ZipInfo | str, bytes]] = ()) -> Path:
    from PIL import Image

    with zipfile.ZipFile(path, "w") as zf:
        for cls in ("a", "b"):
            for i in range(3):
                buf = io.BytesIO()
                Image.fromarray(np.full((8, 8, 3), 40 * i, dtype=np.uint8)).save(buf, "PNG")
                zf.writestr(f"{cls}/{i}.png", buf.getvalue())
        for info, data in extra:
            zf.writestr(info, data)
    return path


def _symlink_entry(name: str, target: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    return info


def test_settings_decide_the_policy(tmp_path):
    from playground.workspace import Workspace

    cli = data_policy(make_settings(tmp_path, device="cpu"), Workspace(tmp_path))
    app = data_policy(make_settings(tmp_path, device="cpu", demo=True, app=True), Workspace(tmp_path))
    assert cli.allow_paths and not app.allow_paths
    assert app.uploads == tmp_path / "uploads" and app.max_upload_bytes == 5_000_000


@pytest.mark.parametrize("spec", ATTACKS)
def test_app_refuses_every_path_with_a_message_that_says_how_to_upload(app_policy, spec):
    with pytest.raises(DataError, match=REFUSED) as err:
        app_policy.resolve(spec, "data.corpus", ("python-docs", "python-code"))
    if isinstance(err.value, PathRefused) and "shared server" in str(err.value):
        assert "Upload box in the Train tab" in str(err.value) and "python-docs, python-code" in str(err.value)


def test_cli_keeps_plain_paths_and_both_resolve_uploads(tmp_path, app_policy):
    corpus = _text_file(tmp_path / "mine.txt")
    assert DataPolicy().resolve(str(corpus), "corpus") == corpus
    _text_file(app_policy.uploads / "up.txt")
    assert app_policy.resolve("upload:up.txt", "data.corpus") == app_policy.uploads / "up.txt"
    with pytest.raises(NotFoundError, match="upload it again"):
        app_policy.resolve("upload:missing.txt", "data.corpus")


def test_a_symlink_planted_in_the_upload_folder_is_not_followed(tmp_path, app_policy):
    app_policy.uploads.mkdir(parents=True)
    (app_policy.uploads / "link.txt").symlink_to("/etc/passwd")
    with pytest.raises(PathRefused, match="not a plain uploaded file"):
        app_policy.resolve("upload:link.txt", "data.corpus")


@pytest.mark.parametrize("spec", ATTACKS)
def test_load_corpus_and_load_corpora_refuse_paths_in_the_app(app_policy, spec):
    with pytest.raises(DataError, match=REFUSED):
        load_corpus(spec, policy=app_policy)
    with pytest.raises(DataError, match=REFUSED):
        load_corpora([spec, "python-docs"], policy=app_policy)
    with pytest.raises(DataError, match=REFUSED):
        load_corpora([spec, spec], policy=app_policy)


def test_load_corpus_cli_path_and_app_upload(tmp_path, app_policy):
    corpus = _text_file(tmp_path / "mine.txt")
    assert load_corpus(str(corpus)).text.startswith("line 0")  # the CLI's --corpus PATH (policy None)
    assert load_corpus(str(corpus), policy=DataPolicy(allow_paths=True)).chars == len(corpus.read_text())
    _text_file(app_policy.uploads / "up.txt")
    assert load_corpus("upload:up.txt", policy=app_policy).text.startswith("line 0")
    assert load_corpus("python-docs", policy=app_policy).chars > 1000  # built-ins need no path


@pytest.mark.parametrize("spec", ATTACKS[:5])
def test_training_text_pairs_and_image_zips_refuse_paths(tmp_path, app_policy, spec):
    from playground.families import get_family
    from playground.training.data import ImageDataConfig, PairDataConfig, load_pairs, load_text

    with pytest.raises(DataError, match=REFUSED):
        load_text(spec, None, policy=app_policy)
    with pytest.raises(DataError, match="shared server.*data.pairs = dates"):
        load_pairs(PairDataConfig(pairs="tsv", path=spec, n=0), app_policy)
    with pytest.raises(DataError, match="shared server.*data.dataset = digits"):
        get_family("vit").adapter.prepare(ImageDataConfig(dataset="zip", path=spec), {}, None, policy=app_policy)


def test_training_data_from_uploads_in_the_app_and_paths_on_the_cli(tmp_path, app_policy):
    from playground.families import get_family
    from playground.training.data import ImageDataConfig, PairDataConfig, load_pairs, load_text

    uploads = app_policy.uploads
    uploads.mkdir(parents=True)
    (uploads / "p.tsv").write_text("a\tb\nc\td\ne\tf\n", encoding="utf-8")
    _image_zip(uploads / "img.zip")
    _text_file(uploads / "c.txt")
    assert len(load_pairs(PairDataConfig(pairs="tsv", path="upload:p.tsv", n=0), app_policy)) == 3
    assert load_text("upload:c.txt", None, policy=app_policy)[0].startswith("line 0")
    prep = get_family("vit").adapter.prepare(ImageDataConfig(dataset="zip", path="upload:img.zip", image_size=8,
                                                      val_fraction=0.34), {"patch_size": 4}, None, policy=app_policy)
    assert prep.class_names == ["a", "b"]
    # the CLI: plain paths (policy None is the CLI's)
    assert len(load_pairs(PairDataConfig(pairs="tsv", path=str(uploads / "p.tsv"), n=0))) == 3
    assert load_text(str(uploads / "c.txt"), None)[0].startswith("line 0")


def test_train_refuses_a_toml_path_before_any_model_is_built(workspace, app_policy):
    from playground.config import parse_preset
    from playground.training.engine import train

    preset = parse_preset('family = "gpt"\n[data]\ncorpus = "/etc/passwd"\n[model]\nn_layer = 1\n')
    with pytest.raises(PathRefused, match="Upload box"):
        next(train(preset, workspace, "p", device="cpu", policy=app_policy))
    assert workspace.names("models") == []


def test_store_upload_copies_into_the_users_folder(tmp_path, app_policy):
    src = _text_file(tmp_path / "gradio" / "My Corpus!.txt")
    ref = app_policy.store_upload(src)
    assert ref == "upload:My_Corpus.txt" and (app_policy.uploads / "My_Corpus.txt").read_text() == src.read_text()
    assert app_policy.store_upload(src) == ref  # the same file again: the same name
    other = _text_file(tmp_path / "g2" / "My Corpus!.txt", lines=5)
    ref2 = app_policy.store_upload(other)
    assert ref2 != ref and app_policy.resolve(ref2, "data.corpus").read_text() == other.read_text()


def test_store_upload_refuses_symlinks_big_files_other_kinds_and_unsafe_zips(tmp_path, app_policy):
    link = tmp_path / "link.txt"
    link.symlink_to("/etc/passwd")
    with pytest.raises(DataError, match="symbolic link"):
        app_policy.store_upload(link)
    with pytest.raises(DataError, match="symbolic link"):
        check_upload(link)
    big = tmp_path / "big.txt"
    big.write_bytes(b"a" * 2000)
    with pytest.raises(DataError, match="accepts files up to"):
        DataPolicy(allow_paths=False, uploads=tmp_path / "u", max_upload_bytes=1000).store_upload(big)
    py = tmp_path / "x.py"
    py.write_text("print(1)")
    with pytest.raises(DataError, match=".txt, .tsv, .csv or .zip"):
        app_policy.store_upload(py)
    for name, extra in {
        "link.zip": [(_symlink_entry("a/evil.png", "/etc/passwd"), b"/etc/passwd")],
        "slip.zip": [("../evil.png", b"x")],
        "abs.zip": [("/etc/evil.png", b"x")],
    }.items():
        with pytest.raises(DataError, match="symbolic link|unsafe path"):
            app_policy.store_upload(_image_zip(tmp_path / name, extra))
    assert not app_policy.uploads.exists() or not any(app_policy.uploads.iterdir())


def test_zip_bombs_are_refused_before_anything_is_unpacked(tmp_path):
    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("a/zeros.png", b"\0" * 50_000_000)
    with pytest.raises(DataError, match="zip bomb"):
        check_zip(bomb)
    with pytest.raises(DataError, match="unpacks to"):
        check_zip(_image_zip(tmp_path / "ok.zip"), max_unpacked=10)


def test_image_zip_loader_refuses_symlink_members(tmp_path):
    from playground.data.images import load_image_zip

    bad = _image_zip(tmp_path / "l.zip", [(_symlink_entry("a/3.png", "/etc/passwd"), b"/etc/passwd")])
    with pytest.raises(DataError, match="symbolic link"):
        load_image_zip(bad, image_size=8)
    assert load_image_zip(_image_zip(tmp_path / "ok.zip"), image_size=8).n == 6


def test_app_presets_are_names_only(tmp_path):
    from playground.config import load_preset

    toml = tmp_path / "evil.toml"
    toml.write_text('family = "gpt"\n', encoding="utf-8")
    assert load_preset(str(toml)).family == "gpt"  # the CLI: a .toml path
    for spec in (str(toml), "/etc/passwd", "../../etc/passwd"):
        with pytest.raises(NotFoundError, match="not accepted on a shared server"):
            load_preset(spec, allow_paths=False)
    assert load_preset("vit-digits", allow_paths=False).family == "vit"


def test_validation_samples_never_open_recorded_paths(workspace, tmp_path):
    from playground.bundle import load_bundle, save_bundle
    from playground.generation.samples import validation_samples
    from playground.models.rnn_seq2seq import RNNSeq2Seq, RNNSeq2SeqConfig
    from playground.models.vit import ViT, ViTConfig
    from playground.tokenization.simple import build_char_tokenizer

    tsv = tmp_path / "p.tsv"
    tsv.write_text("".join(f"src{i}\ttgt{i}\n" for i in range(40)), encoding="utf-8")
    tok = build_char_tokenizer(["srctg0123456789"])
    cfg = RNNSeq2SeqConfig(vocab_size=tok.get_vocab_size(), emb_dim=8, hidden=8)
    save_bundle(workspace, "tsv-path", RNNSeq2Seq(cfg), "rnn_seq2seq", cfg, tokenizer=tok,
                data={"pairs": "tsv", "path": str(tsv), "n": 0, "val_fraction": 0.25})
    assert validation_samples(load_bundle("tsv-path", workspace), workspace) == []
    (workspace.root / "uploads").mkdir(parents=True)
    (workspace.root / "uploads" / "p.tsv").write_bytes(tsv.read_bytes())
    save_bundle(workspace, "tsv-up", RNNSeq2Seq(cfg), "rnn_seq2seq", cfg, tokenizer=tok,
                data={"pairs": "tsv", "path": "upload:p.tsv", "n": 0, "val_fraction": 0.25})
    assert len(validation_samples(load_bundle("tsv-up", workspace), workspace)) == 10

    vcfg = ViTConfig(image_size=8, patch_size=4, channels=3, n_classes=2, d_model=8, n_layer=1, n_head=2)
    zpath = _image_zip(tmp_path / "i.zip")
    save_bundle(workspace, "zip-path", ViT(vcfg), "vit", vcfg, data={"dataset": "zip", "path": str(zpath)})
    assert validation_samples(load_bundle("zip-path", workspace), workspace) == []
