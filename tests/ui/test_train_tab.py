"""Train tab: handlers called directly, and one round trip through the running app."""
from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from playground.config import parse_preset
from playground.errors import PlaygroundError
from playground.settings import make_settings
from playground.training.config import preset_to_toml
from playground.ui import train_tab as tt
from tests.training.conftest import corpus_text, tiny_preset


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.txt"
    path.write_text(corpus_text(), encoding="utf-8")
    return path


def _tiny_toml(family: str, corpus: Path | None = None, **train) -> str:
    train.setdefault("preview", True)
    return preset_to_toml(tiny_preset(family, corpus, **train))


def _field(key: str) -> int:
    return [f.key for f in tt.FORM_FIELDS].index(key)


def test_choosing_a_preset_fills_toml_form_and_name():
    toml, description, name, *form = tt.preset_selected("vit-digits")
    preset = parse_preset(toml)
    assert preset.family == "vit" and "digits" in description and name["value"] == "vit-digits"
    assert form[_field("model.patch_size")] == {"__type__": "update", "value": 2, "visible": True}
    assert form[_field("model.attention")]["visible"] is False  # an RNN-only field
    assert form[_field("train.max_steps")]["value"] == preset.train["max_steps"]
    assert form[_field("model.norm")]["value"] == "layernorm"  # absent keys show the default


def test_form_edits_write_the_toml_and_toml_edits_fill_the_form():
    toml = tt.preset_selected("nanogpt-cpu-tiny")[0]
    toml = tt.set_field("model.pos_encoding", toml, "rope")
    toml = tt.set_field("train.max_steps", toml, 12.0)
    toml = tt.set_field("model.attn_scale", toml, False)
    preset = parse_preset(toml)
    assert preset.model["pos_encoding"] == "rope" and preset.train["max_steps"] == 12
    assert preset.model["attn_scale"] is False
    form = tt.form_updates(toml.replace("n_layer = 4", "n_layer = 2"))
    assert form[_field("model.n_layer")]["value"] == 2 and form[_field("model.pos_encoding")]["value"] == "rope"
    assert all(u == {"__type__": "update"} for u in tt.form_updates("this is [not toml"))


def test_uploads_point_each_family_at_its_file(workspace, tmp_path):
    cli = make_settings(workspace.root, device="cpu")  # user_paths: the file's own path
    gpt = parse_preset(tt.use_upload(workspace, cli, tt.preset_selected("nanogpt-cpu-tiny")[0], "/tmp/x/my.txt"))
    s2s = parse_preset(tt.use_upload(workspace, cli, tt.preset_selected("seq2seq-dates-bahdanau")[0], "/tmp/x/p.tsv"))
    vit = parse_preset(tt.use_upload(workspace, cli, tt.preset_selected("vit-shapes")[0], "/tmp/x/i.zip"))
    assert gpt.data["corpus"] == "/tmp/x/my.txt"
    assert (s2s.data["pairs"], s2s.data["path"]) == ("tsv", "/tmp/x/p.tsv")
    assert (vit.data["dataset"], vit.data["path"]) == ("zip", "/tmp/x/i.zip")

    app = make_settings(workspace.root, device="cpu", app=True)  # the app: a copy in the user's space
    upload = tmp_path / "gradio" / "my.txt"
    upload.parent.mkdir()
    upload.write_text(corpus_text(), encoding="utf-8")
    gpt = parse_preset(tt.use_upload(workspace, app, tt.preset_selected("nanogpt-cpu-tiny")[0], str(upload)))
    assert gpt.data["corpus"] == "upload:my.txt"
    assert (workspace.root / "uploads" / "my.txt").read_text(encoding="utf-8") == corpus_text()


def test_tokenizer_choices_follow_family_and_workspace(workspace):
    workspace.save_tokenizer("bpe-1", _word_tokenizer_json(), {"vocab_size": 3})
    gpt = tt.tokenizer_choices(workspace, tt.preset_selected("nanogpt-cpu-tiny")[0], None)
    s2s = tt.tokenizer_choices(workspace, tt.preset_selected("seq2seq-dates-noattn")[0], None)
    vit = tt.tokenizer_choices(workspace, tt.preset_selected("vit-digits")[0], None)
    assert gpt["choices"] == ["char", "bpe-1"] and gpt["value"] == "char"
    assert s2s["choices"] == ["auto", "bpe-1"] and vit["visible"] is False
    named = tt.toml_tokenizer(workspace, tt.preset_selected("nanogpt-bpe")[0])
    assert named["value"] == "bpe" and "bpe" in named["choices"]  # the preset's name even before it exists


def _word_tokenizer_json() -> str:
    from tokenizers import Tokenizer, models

    return Tokenizer(models.WordLevel({"a": 0, "b": 1, "<unk>": 2}, unk_token="<unk>")).to_str()


def test_start_streams_progress_charts_previews_and_bumps_the_version(workspace, corpus):
    settings = make_settings(workspace.root, device="cpu")
    toml = _tiny_toml("gpt", corpus, max_steps=8, eval_interval=4)
    updates = list(tt.start_training(workspace, settings, "tiny", toml, "ui-run", False, 3))
    status, loss, lr, tput, sample, confusion, table, csv, run, version = updates[-1]
    assert 'data-state="done"' in status and "saved as ui-run" in status
    assert loss is not None and lr is not None and tput is not None
    assert updates[-1][-1] == 5  # two checkpoints written -> version + 2
    assert updates[0][8] == {"name": "ui-run"}
    samples = [u[4] for u in updates if isinstance(u[4], str) and u[4]]
    assert samples, "the GPT preview is a text sample"
    csvs = [u[7] for u in updates if isinstance(u[7], str)]
    assert csvs and Path(csvs[-1]).read_text().startswith("step,")
    assert workspace.get("models", "ui-run").meta["step"] == 8

    with pytest.raises(Exception, match="exists"):
        list(tt.start_training(workspace, settings, "tiny", toml, "ui-run", False, 0))


def test_stop_closes_only_this_run_and_resume_continues(workspace, corpus):
    settings = make_settings(workspace.root, device="cpu")
    toml = _tiny_toml("gpt", corpus, max_steps=400, eval_interval=1000, log_interval=1, preview=False)
    gen = tt.start_training(workspace, settings, "tiny", toml, "stoppable", False, 0)
    next(gen)  # start
    next(gen)  # a few steps in
    gen.close()  # what Stop's cancels=[...] does to this session's handler
    meta = workspace.get("models", "stoppable").meta
    assert meta["run"]["status"] == "stopped" and 0 < meta["step"] < 400
    status = tt.stop_status(workspace, {"name": "stoppable"}, wait_s=0)
    assert f"at step {meta['step']}" in status and 'data-state="stopped"' in status

    resume_toml = tt.set_field("train.max_steps", toml, meta["step"] + 3)
    updates = list(tt.resume_training(workspace, settings, resume_toml, "stoppable", 0))
    assert 'data-state="done"' in updates[-1][0]
    assert workspace.get("models", "stoppable").meta["step"] == meta["step"] + 3


def test_errors_become_gradio_errors(workspace):
    import gradio as gr

    settings = make_settings(workspace.root, device="cpu")
    bad = tt.preset_selected("nanogpt-cpu-tiny")[0].replace("[train]", "[train]\nlearning_rate = 1")
    with pytest.raises(gr.Error, match="train.learning_rate"):
        list(tt.start_training(workspace, settings, "x", bad, "bad-run", False, 0))
    with pytest.raises(gr.Error, match="No checkpoint named"):
        list(tt.resume_training(workspace, settings, bad, "nothing-here", 0))
    assert isinstance(PlaygroundError("x"), ValueError)


def test_runs_table_overlay_and_bottleneck(workspace, corpus):
    from playground.training.engine import run_training

    run_training(tiny_preset("rnn_seq2seq", max_steps=4, eval_interval=2), workspace, "s2s-a", device="cpu")
    run_training(tiny_preset("rnn_seq2seq", max_steps=4, eval_interval=2, seed=1), workspace, "s2s-b", device="cpu")
    run_training(tiny_preset("gpt", corpus, max_steps=2, eval_interval=2), workspace, "lm", device="cpu")
    table, pick = tt.runs_refresh(workspace, ["lm", "gone"])
    assert set(table["run"]) == {"s2s-a", "s2s-b", "lm"} and pick["value"] == ["lm"]
    assert {"val_loss", "exact_match", "step"} <= set(table.columns)
    curves, bottleneck, curves_csv, buckets_csv = tt.compare_runs(workspace, ["s2s-a", "s2s-b", "lm"], "loss")
    assert curves is not None and bottleneck is not None
    assert "s2s-b" in Path(curves_csv).read_text() and "exact_match" in Path(buckets_csv).read_text()
    spec = bottleneck.to_dict()
    assert spec["encoding"]["x"]["field"] == "length"
    _, none, _, no_csv = tt.compare_runs(workspace, ["lm"], "val_loss")
    assert none is None and no_csv is None


def test_train_round_trip_through_the_running_app(app_server, tmp_path):
    from gradio_client import Client, handle_file


    corpus = tmp_path / "c.txt"
    corpus.write_text(corpus_text(), encoding="utf-8")
    client = Client(app_server.url, verbose=False)
    name = f"rt-{uuid.uuid4().hex[:6]}"
    toml = _tiny_toml("gpt", corpus, max_steps=4, eval_interval=2, preview=False)
    toml = client.predict(toml, handle_file(str(corpus)), api_name="/train_upload")  # the app takes no paths
    assert parse_preset(toml).data["corpus"] == "upload:c.txt"
    result = client.predict("nanogpt-cpu-tiny", toml, name, False, 0, api_name="/train_start")
    assert 'data-state="done"' in result[0]  # (gr.State outputs are not part of the API result)
    ws = app_server.space_of(client)
    assert ws.get("models", name).meta["step"] == 4
    preset = client.predict("seq2seq-dates-bahdanau", api_name="/train_preset")
    assert parse_preset(preset[0]).family == "rnn_seq2seq"
    curves = client.predict([name], "val_loss", api_name="/train_compare")
    assert curves[0] is not None and curves[2]
