"""Train tab: handlers called directly, and one round trip through the running app."""
from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path

import pytest

from playground.config import parse_preset
from playground.errors import ConfigError, PlaygroundError
from playground.settings import make_settings
from playground.spaces import LiveJobs
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
    assert named["value"] == "shakespeare-bpe" and "shakespeare-bpe" in named["choices"]
    # this bare workspace lacks it: the field says so and what to do, before anyone presses Start
    assert "no tokenizer named 'shakespeare-bpe' yet" in named["info"] and "Tokenizer tab" in named["info"]


def test_the_bpe_preset_names_a_tokenizer_every_user_has(tmp_path):
    """nanogpt-bpe trains as it comes in the app: its tokenizer is on the shipped library shelf."""
    from playground.spaces import Spaces, user_key

    space = Spaces(tmp_path / "root", make_settings(tmp_path / "root", app=True).library).space(user_key(None, None, "s"), "s")
    name = parse_preset(tt.preset_selected("nanogpt-bpe")[0]).data["tokenizer"]
    assert space.exists("tokenizers", name) and space.load_tokenizer(name).get_vocab_size() == 1024
    update = tt.toml_tokenizer(space, tt.preset_selected("nanogpt-bpe")[0])
    assert update["value"] == name and update["info"] == tt.TOKENIZER_INFO


def _word_tokenizer_json() -> str:
    from tokenizers import Tokenizer, models

    return Tokenizer(models.WordLevel({"a": 0, "b": 1, "<unk>": 2}, unk_token="<unk>")).to_str()


def test_start_streams_progress_charts_previews_and_bumps_the_version(workspace, corpus):
    settings = make_settings(workspace.root, device="cpu")
    toml = _tiny_toml("gpt", corpus, max_steps=8, eval_interval=4)
    updates = list(tt.start_training(workspace, settings, "tiny", toml, "ui-run", False, 3))
    last = updates[-1]
    assert 'data-state="done"' in last.status and "saved as ui-run" in last.status
    assert last.loss_plot is not None and last.lr_plot is not None and last.tput_plot is not None
    assert last.version == 5  # two checkpoints written -> version + 2
    assert updates[0].run_state["name"] == "ui-run" and updates[0].run_state["started"] > 0
    assert len(last.values()) == 10  # what gradio gets: the preview's three widgets spliced in
    samples = [u.preview.sample for u in updates if isinstance(u.preview.sample, str) and u.preview.sample]
    assert samples, "the GPT preview is a text sample"
    csvs = [u.metrics_csv for u in updates if isinstance(u.metrics_csv, str)]
    assert csvs and Path(csvs[-1]).read_text().startswith("step,")
    assert workspace.get("models", "ui-run").meta["step"] == 8

    with pytest.raises(Exception, match="exists"):
        list(tt.start_training(workspace, settings, "tiny", toml, "ui-run", False, 0))


def test_stop_closes_only_this_run_and_resume_continues(workspace, corpus):
    settings = make_settings(workspace.root, device="cpu")
    toml = _tiny_toml("gpt", corpus, max_steps=400, eval_interval=1000, log_interval=1, preview=False)
    gen = tt.start_training(workspace, settings, "tiny", toml, "stoppable", False, 0)
    run = next(gen).run_state  # "starting": the session's run state
    next(gen)  # the run's start
    next(gen)  # a few steps in
    gen.close()  # what Stop's cancels=[...] does to this session's handler
    meta = workspace.get("models", "stoppable").meta
    assert meta["run"]["status"] == "stopped" and 0 < meta["step"] < 400
    status, version = tt.stop_status(workspace, run, 4, wait_s=0)
    assert f"at step {meta['step']}" in status and 'data-state="stopped"' in status and version == 5

    # The checkpoint on disk is older than a run started since (a Resume not yet saved):
    # Stop never reports it as where the new run stopped.
    later = {"name": "stoppable", "started": time.time() + 60}
    status, _ = tt.stop_status(workspace, later, 0, wait_s=0)
    assert f"at step {meta['step']}" not in status and "stopping stoppable" in status

    resume_toml = tt.set_field("train.max_steps", toml, meta["step"] + 3)
    updates = list(tt.resume_training(workspace, settings, resume_toml, "stoppable", 0))
    assert 'data-state="done"' in updates[-1].status
    assert workspace.get("models", "stoppable").meta["step"] == meta["step"] + 3


def test_stop_reaches_the_users_live_run_even_if_the_stream_is_not_closed(workspace, corpus):
    """Stop asks the user's live run of that name to stop itself (`LiveJobs.request_stop`): it
    must not hang on gradio's cancel arriving in time. The stream goes on to the run's own
    "stopped" event, and Stop reports the step that run saved."""
    settings = make_settings(workspace.root, device="cpu")
    workspace.key = "u-stopper"  # the user's space key, as `UserSpace` has it
    jobs = LiveJobs()
    toml = _tiny_toml("gpt", corpus, max_steps=100_000, eval_interval=100_000, log_interval=1, preview=False)
    gen = tt.start_training(workspace, settings, "tiny", toml, "asked", False, 0, jobs=jobs)
    run = next(gen).run_state
    next(gen)  # the run's start
    next(gen)  # a few steps in
    said: dict[str, tuple[str, int]] = {}
    stopper = threading.Thread(target=lambda: said.update(stop=tt.stop_status(workspace, run, 4, jobs=jobs)))
    stopper.start()
    rest, deadline = [], time.monotonic() + 60
    for view in gen:  # not closed: the run ends by itself
        rest.append(view)
        if time.monotonic() > deadline:
            gen.close()
            pytest.fail("the run went on after Stop")
    stopper.join(60)
    meta = workspace.get("models", "asked").meta
    assert 'data-state="stopped"' in rest[-1].status and meta["run"]["status"] == "stopped"
    status, version = said["stop"]
    assert f"at step {meta['step']}" in status and 0 < meta["step"] < 100_000 and version == 5
    assert not jobs.request_stop("u-stopper", "train", "asked")  # the run's claim is released


def _train_points(view) -> list[tuple[int, float]]:
    curve = view.loss_plot.data  # the loss chart's data: step, split, loss
    train = curve[curve["split"] == "train"]
    return list(zip(train["step"].astype(int), train["loss"].round(6)))


def test_resume_continues_the_live_curve_from_the_first_step(workspace, corpus):
    """After Stop and Resume the loss chart is the curve drawn live, from step 1, then the new
    steps: no point from metrics.csv's interval average, nothing missing before the first eval."""
    settings = make_settings(workspace.root, device="cpu")
    toml = _tiny_toml("gpt", corpus, max_steps=12, eval_interval=4, log_interval=2, preview=False)
    first = list(tt.start_training(workspace, settings, "tiny", toml, "curve", False, 0))
    live = _train_points(first[-1])
    assert [s for s, _ in live] == [1, 2, 4, 6, 8, 10, 12]
    more = tt.set_field("train.max_steps", toml, 16)
    updates = list(tt.resume_training(workspace, settings, more, "curve", 0))
    assert updates[0].loss_plot.data["step"].min() == 1  # "starting" already shows the saved curve
    resumed = _train_points(updates[-1])
    assert resumed[: len(live)] == live  # the same points, the same values
    assert [s for s, _ in resumed[len(live):]] == [14, 16]
    curve = updates[-1].loss_plot.data
    assert sorted(curve[curve["split"] == "val"]["step"]) == [4, 8, 12, 16]


def test_a_new_start_clears_the_last_runs_curves_and_says_starting(workspace, corpus):
    settings = make_settings(workspace.root, device="cpu")
    toml = _tiny_toml("gpt", corpus, max_steps=2, eval_interval=2, log_interval=1, preview=False)
    first = next(tt.start_training(workspace, settings, "tiny", toml, "fresh", False, 0))
    assert 'data-state="starting"' in first.status and "starting" in first.status
    assert first.loss_plot.data.empty and first.lr_plot.data.empty and first.tput_plot.data.empty


def test_start_reads_the_form_not_a_stale_toml(workspace, corpus):
    """What the form shows runs, even when the TOML panel has not caught up with the typing."""
    settings = make_settings(workspace.root, device="cpu")
    toml = _tiny_toml("gpt", corpus, max_steps=3, eval_interval=100, log_interval=1, preview=False)
    values = [u.get("value") for u in tt.form_updates(toml)]
    steps = next(i for i, f in enumerate(tt.FORM_FIELDS) if f.key == "train.max_steps")
    values[steps] = 5  # typed into Steps; the TOML still says 3
    ran, run_state = tt.form_to_run(toml, "char", *values)  # Start's first step, then the run reads `ran`
    assert run_state == {} and parse_preset(ran).train["max_steps"] == 5
    updates = list(tt.start_training(workspace, settings, "tiny", ran, "form-run", False, 0))
    assert 'data-step="5"' in updates[-1].status
    assert workspace.get("models", "form-run").meta["step"] == 5

    values[steps] = None  # a cleared box is refused with what to do, not a traceback
    with pytest.raises(ConfigError, match="Steps is empty"):
        tt.form_to_run(toml, "char", *values)
    values[steps] = "12x"
    assert tt.sync_form(toml, "char", *values) == {"__type__": "update"}  # the TOML stays for the user to fix
    values[steps] = 7
    assert parse_preset(tt.sync_form(toml, "char", *values)).train["max_steps"] == 7



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
