"""The training engine on tiny configs: learning, stop/resume, atomic checkpoints, NaN, caps."""
from __future__ import annotations

from dataclasses import replace

import json
import threading

import pytest
import torch

from playground.bundle import load_bundle, read_metrics_csv
from playground.errors import ConfigError, PlaygroundError, TrainingError
from playground.families import FAMILIES as REGISTRY
from playground.families.gpt.training import GPTAdapter
from playground.models.gpt import GPTConfig
from playground.training.engine import run_training, train
from tests.training.conftest import FAMILIES, tiny_preset

FAST_LR = {"gpt": {}, "vit": {}, "rnn_seq2seq": {}, "transformer_seq2seq": {}}


@pytest.mark.parametrize("family", FAMILIES)
def test_a_short_run_lowers_the_loss(family, workspace, corpus_file):
    preset = tiny_preset(family, corpus_file, max_steps=30, eval_interval=5)
    result = run_training(preset, workspace, f"run-{family}", device="cpu")
    assert result.status == "done" and result.step == 30
    rows = read_metrics_csv(workspace.path("models", f"run-{family}") / "metrics.csv")
    assert [r["step"] for r in rows] == [5, 10, 15, 20, 25, 30]
    assert rows[-1]["val_loss"] < rows[0]["val_loss"] - 0.1
    steps = [e for e in result.events if e.kind == "step"]
    assert steps[-1].train_loss < steps[0].train_loss
    assert all(e.throughput and e.throughput > 0 and e.lr > 0 and e.eta_s is not None for e in steps)
    bundle = load_bundle(f"run-{family}", workspace)
    assert bundle.family == family and bundle.config["step"] == 30
    assert bundle.config["metrics"]["status"] == "finished"
    evals = [e for e in result.events if e.kind == "eval"]
    assert evals[-1].preview is not None
    if family == "vit":
        assert "accuracy" in rows[-1] and evals[-1].preview.kind == "confusion"
        assert sum(map(sum, evals[-1].preview.matrix)) == 32  # train.eval_examples val images, each once
        assert len(bundle.class_names) == 10
    elif family == "gpt":
        assert evals[-1].preview.kind == "text" and len(evals[-1].preview.text) > 20
        assert bundle.tokenizer is not None
    else:
        assert {"exact_match", "token_accuracy"} <= set(rows[-1])
        assert any(k.startswith("exact_match@") for k in rows[-1])
        assert evals[-1].preview.kind == "translations" and len(evals[-1].preview.rows) == 5
        assert "buckets" in bundle.config["metrics"]


def _train_until(preset, workspace, name, stop_at: int, **kw):
    stop = threading.Event()
    events = []
    for ev in train(preset, workspace, name, device="cpu", stop=stop, **kw):
        events.append(ev)
        if ev.kind == "step" and ev.step >= stop_at:
            stop.set()
    return events


def test_a_stop_just_after_an_evaluation_says_stopped(workspace, corpus_file):
    """Stop pressed as an evaluation's checkpoint is written: that checkpoint (status "running")
    is of the same step, and the run is saved again as "stopped" (it said "running" before, so a
    browser test that stopped on an evaluation step failed now and then)."""
    preset = tiny_preset("gpt", corpus_file, max_steps=40, eval_interval=5, log_interval=1)
    stop = threading.Event()
    for ev in train(preset, workspace, "at-eval", device="cpu", stop=stop):
        if ev.kind == "eval" and ev.step == 10:
            stop.set()  # the loop sees it before step 11
    assert ev.kind == "stopped" and ev.step == 10
    meta = load_bundle("at-eval", workspace).config
    assert meta["step"] == 10 and meta["run"]["status"] == "stopped"


def test_stop_then_resume_continues_steps_metrics_and_losses(workspace, corpus_file):
    preset = tiny_preset("gpt", corpus_file, max_steps=20, eval_interval=5)
    run_training(preset, workspace, "full", device="cpu")  # the uninterrupted run to compare with

    events = _train_until(preset, workspace, "part", stop_at=12)
    assert events[-1].kind == "stopped" and events[-1].step == 12
    part = load_bundle("part", workspace)
    assert part.config["step"] == 12 and part.config["run"]["status"] == "stopped"
    assert [r["step"] for r in read_metrics_csv(part.metrics_path)] == [5, 10]

    resumed = run_training(None, workspace, "part", device="cpu", resume=True)
    assert resumed.status == "done" and resumed.step == 20
    first_step = next(e for e in resumed.events if e.kind == "step")
    assert first_step.step == 13
    rows_full = read_metrics_csv(workspace.path("models", "full") / "metrics.csv")
    rows_part = read_metrics_csv(workspace.path("models", "part") / "metrics.csv")
    assert [r["step"] for r in rows_part] == [5, 10, 15, 20]
    # same batches, same optimizer state: the resumed run retraces the uninterrupted one
    for a, b in zip(rows_full, rows_part):
        assert a["val_loss"] == pytest.approx(b["val_loss"], abs=1e-5)
    wa = load_bundle("full", workspace).model.state_dict()
    wb = load_bundle("part", workspace).model.state_dict()
    assert all(torch.allclose(wa[k], wb[k], atol=1e-5) for k in wa)


def test_resume_can_extend_max_steps_but_not_change_the_model(workspace, corpus_file):
    preset = tiny_preset("gpt", corpus_file, max_steps=6, eval_interval=3)
    run_training(preset, workspace, "r", device="cpu")
    with pytest.raises(ConfigError, match="already at step 6"):
        run_training(None, workspace, "r", device="cpu", resume=True)
    with pytest.raises(ConfigError, match="keeps its model"):
        run_training(None, workspace, "r", device="cpu", resume=True, overrides={"model.n_layer": "2"})
    result = run_training(None, workspace, "r", device="cpu", resume=True, overrides={"train.max_steps": "9"})
    assert result.step == 9
    assert [r["step"] for r in read_metrics_csv(workspace.path("models", "r") / "metrics.csv")] == [3, 6, 9]


def test_closing_the_generator_saves_a_stopped_checkpoint(workspace, corpus_file):
    preset = tiny_preset("gpt", corpus_file, max_steps=50, eval_interval=100)
    gen = train(preset, workspace, "closed", device="cpu")
    for ev in gen:
        if ev.kind == "step" and ev.step == 7:
            break
    gen.close()  # what a UI's Stop does (Gradio closes the handler's iterator)
    bundle = load_bundle("closed", workspace)
    assert bundle.config["step"] == 7 and bundle.config["run"]["status"] == "stopped"


def test_a_crash_mid_write_leaves_the_previous_checkpoint_loadable(workspace, corpus_file, monkeypatch):
    preset = tiny_preset("gpt", corpus_file, max_steps=10, eval_interval=5)
    gen = train(preset, workspace, "crash", device="cpu")
    for ev in gen:
        if ev.kind == "eval":
            break  # the step-5 checkpoint is on disk
    import playground.bundle as bundle_mod

    def dying_write(path, rows):
        (path.parent / "metrics.csv").write_text("step\n1", encoding="utf-8")  # half a write...
        raise KeyboardInterrupt("killed")  # ...then the process dies

    monkeypatch.setattr(bundle_mod, "write_metrics_csv", dying_write)
    with pytest.raises(KeyboardInterrupt):
        for _ in gen:
            pass
    monkeypatch.undo()
    bundle = load_bundle("crash", workspace)
    assert bundle.config["step"] == 5
    assert [r["step"] for r in read_metrics_csv(bundle.metrics_path)] == [5]
    assert workspace.names("models") == ["crash"]
    leftovers = [p.name for p in workspace.dir("models").iterdir() if p.name.startswith(".")]
    assert leftovers == []


class _NaNAfter(GPTAdapter):
    def __init__(self, after: int) -> None:
        super().__init__("gpt", GPTConfig)
        self.calls = 0
        self.after = after

    def loss(self, model, batch, label_smoothing=0.0):
        loss = super().loss(model, batch, label_smoothing)
        if not model.training:  # evaluation
            return loss
        self.calls += 1
        return loss * float("nan") if self.calls > self.after else loss


def test_a_nan_loss_stops_the_run_with_a_clear_message(workspace, corpus_file, monkeypatch):
    monkeypatch.setitem(REGISTRY, "gpt", replace(REGISTRY["gpt"], adapter=_NaNAfter(after=6)))
    preset = tiny_preset("gpt", corpus_file, max_steps=20, eval_interval=5)
    with pytest.raises(TrainingError) as err:
        run_training(preset, workspace, "nan", device="cpu")
    msg = str(err.value)
    assert "NaN" in msg and "step 7" in msg and "train.lr" in msg and "step 5 is kept" in msg
    bundle = load_bundle("nan", workspace)
    assert bundle.config["step"] == 5
    assert all(torch.isfinite(p).all() for p in bundle.model.parameters())


def test_demo_cap_limits_max_steps(workspace, corpus_file):
    preset = tiny_preset("gpt", corpus_file, max_steps=500, eval_interval=4)
    result = run_training(preset, workspace, "capped", device="cpu", max_steps_cap=4)
    assert result.step == 4 and "capped" in result.events[0].message


def test_grad_accumulation_matches_a_bigger_batch(workspace, corpus_file):
    a = run_training(tiny_preset("gpt", corpus_file, max_steps=4, batch_size=8, eval_interval=4), workspace, "a", device="cpu")
    b = run_training(tiny_preset("gpt", corpus_file, max_steps=4, batch_size=4, grad_accum=2, eval_interval=4),
                     workspace, "b", device="cpu")
    la = [e.train_loss for e in a.events if e.kind == "step"]
    lb = [e.train_loss for e in b.events if e.kind == "step"]
    assert la == pytest.approx(lb, abs=1e-5)


def test_same_seed_same_run_and_seed_changes_it(workspace, corpus_file):
    runs = [run_training(tiny_preset("gpt", corpus_file, max_steps=3, eval_interval=3, seed=s), workspace, f"s{i}", device="cpu")
            for i, s in enumerate((1, 1, 2))]
    losses = [[e.train_loss for e in r.events if e.kind == "step"] for r in runs]
    assert losses[0] == losses[1] and losses[0] != losses[2]


def test_resuming_a_bundle_without_optimizer_state_says_why(workspace, corpus_file):
    preset = tiny_preset("gpt", corpus_file, max_steps=3, eval_interval=3, save_optimizer=False)
    run_training(preset, workspace, "light", device="cpu")
    assert not (workspace.path("models", "light") / "train_state.json").exists()
    with pytest.raises(PlaygroundError, match="optimizer state"):
        run_training(None, workspace, "light", device="cpu", resume=True, overrides={"train.max_steps": "6"})


def test_optimizer_state_is_stored_as_safetensors_and_json(workspace, corpus_file):
    from safetensors.torch import load_file

    run_training(tiny_preset("gpt", corpus_file, max_steps=3, eval_interval=3), workspace, "o", device="cpu")
    path = workspace.path("models", "o")
    tensors = load_file(str(path / "train_state.safetensors"))
    meta = json.loads((path / "train_state.json").read_text())
    assert any(k.endswith(".exp_avg_sq") for k in tensors) and {"rng.init", "rng.dropout"} <= set(tensors)
    assert meta["step"] == 3 and meta["optimizer"]["param_groups"][0]["betas"] == [0.9, 0.99]
    assert meta["scheduler"]["last_epoch"] == 3


def test_corpus_too_small_for_the_block_size_is_a_clear_error(workspace, tmp_path):
    small = tmp_path / "small.txt"
    small.write_text("hello world\n" * 10, encoding="utf-8")
    preset = tiny_preset("gpt", small)
    preset.model["block_size"] = 64
    with pytest.raises(PlaygroundError) as err:
        run_training(preset, workspace, "small", device="cpu")
    assert "block size 64" in str(err.value) and "lower block_size" in str(err.value)


def test_a_compiled_model_is_saved_with_clean_keys(workspace):
    from playground.families import build_model, get_family
    from playground.training.checkpoint import save_checkpoint

    cfg = get_family("gpt").config_cls(vocab_size=11, block_size=8, n_layer=1, n_head=1, d_model=8)
    model = build_model("gpt", cfg)
    compiled = torch.compile(model)  # wraps lazily: nothing is compiled until it is called
    assert any(k.startswith("_orig_mod.") for k in compiled.state_dict())
    save_checkpoint(workspace, "c", model=compiled, family="gpt", model_config=cfg, sections={"family": "gpt"},
                    preset_name="x", train_config={}, data={}, step=0, rows=[], summary={}, tokenizer=None,
                    class_names=None, optimizer=None, scheduler=None, run_info={})
    from safetensors import safe_open

    with safe_open(str(workspace.path("models", "c") / "model.safetensors"), "pt") as f:
        keys = list(f.keys())
    assert keys and not any(k.startswith("_orig_mod.") for k in keys)
    assert load_bundle("c", workspace).model.config.d_model == 8
