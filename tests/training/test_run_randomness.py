"""Runs own their randomness (#14): weights from the run's init generator, dropout masks from its
dropout generator, never torch's global RNG. Two trainings with dropout in two threads each get
exactly their single-run loss curve, a Resume in one thread leaves the other's curve alone, and
a model's init does not depend on the global RNG state."""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
import torch

from playground.config import Preset
from playground.models.init import init_weights
from playground.families import build_model
from playground.training.engine import (
    TrainEvent,
    restore_generators,
    run_generators,
    run_training,
    train,
)
from playground.workspace import Workspace
from tests.training.conftest import tiny_preset

Curve = list[tuple[str, int, float | None, float | None]]  # (kind, step, train_loss, val_loss)
START, STEP, EVAL, DONE = "start", "step", "eval", "done"  # TrainEvent kinds


def _transformer_dropouts(p: float) -> dict[str, float]:
    return {"dropout": p, "attn_dropout": p, "emb_dropout": p}


DROPOUTS: dict[str, Callable[[float], dict[str, Any]]] = {
    "gpt": _transformer_dropouts,
    "vit": _transformer_dropouts,
    "transformer_seq2seq": _transformer_dropouts,
    "rnn_seq2seq": lambda p: {"dropout": p, "n_layers": 2},
}


def with_dropout(family: str, corpus: Any, seed: int, p: float = 0.2, **train_kw: Any) -> Preset:
    """A tiny preset of `family` with every dropout it has at `p` (RNN: 2 layers, so the
    inter-layer dropout runs too)."""
    preset = tiny_preset(family, corpus, **{"max_steps": 8, "eval_interval": 4, "seed": seed, **train_kw})
    preset.model.update(DROPOUTS[family](p))
    return preset


def curve(events: list[TrainEvent]) -> Curve:
    return [(e.kind, e.step, e.train_loss, e.val_loss) for e in events if e.kind in {STEP, EVAL}]


def in_threads(*jobs: Callable[[], Any]) -> list[Any]:
    """Run the jobs at once, one thread each; their results (an exception is re-raised)."""
    results: list[Any] = [None] * len(jobs)

    def run(i: int) -> None:
        try:
            results[i] = jobs[i]()
        except BaseException as exc:  # noqa: BLE001 - re-raised below, in the test's thread
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    for r in results:
        if isinstance(r, BaseException):
            raise r
    return results


def training(preset: Preset | None, workspace: Workspace, name: str, **kw: Any) -> Callable[[], Curve]:
    return lambda: curve(run_training(preset, workspace, name, device="cpu", **kw).events)


# ---------------------------------------------------------------------------------------------
# init


MODELS = [
    ("gpt", {"vocab_size": 17, "block_size": 8, "n_layer": 2, "n_head": 2, "d_model": 16}),
    ("gpt", {"vocab_size": 17, "block_size": 8, "n_layer": 1, "n_head": 2, "d_model": 16, "pos_encoding": "rope",
             "tie_embeddings": False, "norm": "rmsnorm", "ffn": "swiglu"}),
    ("vit", {"image_size": 8, "patch_size": 4, "channels": 3, "n_classes": 5, "d_model": 16, "n_layer": 1,
             "n_head": 2}),
    ("vit", {"image_size": 8, "patch_size": 4, "channels": 1, "n_classes": 3, "d_model": 16, "n_layer": 1,
             "n_head": 2, "pool": "mean", "pos_encoding": "sinusoidal"}),
    ("rnn_seq2seq", {"vocab_size": 17, "emb_dim": 8, "hidden": 16, "attention": "additive", "n_layers": 2}),
    ("rnn_seq2seq", {"vocab_size": 17, "emb_dim": 8, "hidden": 16, "attention": "general", "cell": "lstm",
                     "bidirectional": False}),
    ("transformer_seq2seq", {"vocab_size": 17, "d_model": 16, "n_head": 2, "max_len": 16}),
    ("transformer_seq2seq", {"vocab_size": 17, "d_model": 16, "n_head": 2, "max_len": 16, "share_embeddings": False,
                             "pos_encoding": "learned", "scale_embeddings": False}),
]


def _seeded_build(family: str, config: dict, global_seed: int, seed: int) -> dict[str, torch.Tensor]:
    torch.manual_seed(global_seed)  # what another thread may have done to the global RNG
    model = build_model(family, config)
    init_weights(model, run_generators(seed, "cpu")["init"])
    return model.state_dict()


@pytest.mark.parametrize(("family", "config"), MODELS)
def test_init_comes_from_the_run_generator_not_the_global_rng(family: str, config: dict) -> None:
    a = _seeded_build(family, config, global_seed=1, seed=5)
    b = _seeded_build(family, config, global_seed=2, seed=5)
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a), [k for k in a if not torch.equal(a[k], b[k])]
    c = _seeded_build(family, config, global_seed=1, seed=6)
    # every randomly drawn tensor changes with the run's seed (constant ones: norms, zero biases)
    assert all(not torch.equal(a[k], c[k]) for k in a if a[k].float().std() > 0)


@pytest.mark.parametrize(("family", "config"), MODELS)
def test_the_generator_init_has_the_distributions_of_torchs_init(family: str, config: dict) -> None:
    """Per parameter: constant ones (norm gains, zero biases, a padding row) are equal, random
    ones have the same spread as the model's own constructor gives them."""
    torch.manual_seed(0)
    model = build_model(family, config)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    init_weights(model, run_generators(0, "cpu")["init"])
    for k, new in model.state_dict().items():
        old = before[k]
        if old.float().std() == 0:
            assert torch.equal(new, old), k
        else:  # a bound or std of the same size (numbers of elements are small here)
            assert new.abs().max() <= 1.5 * old.abs().max() + 1e-6 and old.abs().max() <= 1.5 * new.abs().max(), k
            if old.numel() >= 200:
                assert new.float().std().item() == pytest.approx(old.float().std().item(), rel=0.2), k


def test_a_module_without_a_generator_init_is_refused() -> None:
    class Odd(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(3))

    with pytest.raises(TypeError, match="generator-aware init"):
        init_weights(torch.nn.Sequential(Odd()), torch.Generator())


# ---------------------------------------------------------------------------------------------
# training


@pytest.mark.parametrize("family", sorted(DROPOUTS))
def test_a_run_with_dropout_never_touches_the_global_rng(family, workspace, corpus_file) -> None:
    """From the start event (model built) to the end: batches (ViT: shifted images too),
    dropout, evaluations, previews and checkpoints."""
    preset = with_dropout(family, corpus_file, seed=3)
    if "dataset" in preset.data:  # images
        preset.data["augment"] = "shift"
    states = [torch.get_rng_state() for event in train(preset, workspace, "g", device="cpu")
              if event.kind in {START, DONE}]
    assert len(states) == 2 and torch.equal(*states)


@pytest.mark.parametrize("family", sorted(DROPOUTS))
def test_dropout_is_on_in_these_runs(family, workspace, corpus_file) -> None:
    """The same run without dropout has another first loss (same init, same batch)."""
    on = curve(run_training(with_dropout(family, corpus_file, seed=3), workspace, "on", device="cpu").events)
    off = curve(run_training(with_dropout(family, corpus_file, seed=3, p=0.0), workspace, "off", device="cpu").events)
    assert on[0] != off[0]


@pytest.mark.parametrize("families", [("gpt", "gpt"), ("rnn_seq2seq", "transformer_seq2seq"), ("vit", "vit")])
def test_two_runs_with_dropout_in_two_threads_each_get_their_own_curve(families, workspace, corpus_file) -> None:
    presets = [with_dropout(f, corpus_file, seed=10 + i) for i, f in enumerate(families)]
    alone = [in_threads(training(p, workspace, f"alone-{i}"))[0] for i, p in enumerate(presets)]
    together = in_threads(*(training(p, workspace, f"together-{i}") for i, p in enumerate(presets)))
    assert alone[0] != alone[1]  # different seeds: different curves
    assert together == alone  # bit for bit


def test_a_resume_in_one_thread_leaves_the_other_threads_curve_alone(workspace, corpus_file) -> None:
    a_preset = with_dropout("gpt", corpus_file, seed=21, max_steps=12)
    b_preset = with_dropout("gpt", corpus_file, seed=22)
    a_alone = in_threads(training(a_preset, workspace, "a-alone"))[0]
    b_whole = in_threads(training(b_preset, workspace, "b-whole"))[0]

    stop = threading.Event()  # run b to step 5, stopped (its checkpoint holds its generators' states)
    for event in train(b_preset, workspace, "b", device="cpu", stop=stop):
        if event.kind == STEP and event.step >= 5:
            stop.set()

    b_started = threading.Event()

    def run_a() -> Curve:
        events = []
        for event in train(a_preset, workspace, "a", device="cpu"):
            events.append(event)
            if event.kind == STEP and event.step == 4:
                assert b_started.wait(timeout=120)  # b resumed (its RNG restored) while a is mid-run
        return curve(events)

    def resume_b() -> Curve:
        events = []
        for event in train(None, workspace, "b", device="cpu", resume=True):
            events.append(event)
            if event.kind == START:
                b_started.set()
        return curve(events)

    a_curve, b_resumed = in_threads(run_a, resume_b)
    assert a_curve == a_alone
    # the resumed run retraces the whole one (an eval's train_loss averages only the steps it ran)
    b_rest = [c for c in b_whole if c[1] > 5]
    assert [c for c in b_resumed if c[0] == STEP] == [c for c in b_rest if c[0] == STEP]
    assert [(c[1], c[3]) for c in b_resumed if c[0] == EVAL] == [(c[1], c[3]) for c in b_rest if c[0] == EVAL]


def test_a_checkpoint_from_before_run_generators_still_resumes(workspace, corpus_file) -> None:
    """Old bundles hold torch's global state as rng.cpu: the dropout stream continues from it."""
    from safetensors.torch import load_file, save_file

    preset = with_dropout("gpt", corpus_file, seed=31)
    whole = curve(run_training(preset, workspace, "whole", device="cpu").events)
    stop = threading.Event()
    for event in train(preset, workspace, "old", device="cpu", stop=stop):
        if event.kind == STEP and event.step >= 5:
            stop.set()
    path = workspace.path("models", "old") / "train_state.safetensors"
    tensors = load_file(str(path))
    tensors["rng.cpu"] = tensors.pop("rng.dropout")  # what dropout drew from before #14
    del tensors["rng.init"]
    save_file(tensors, str(path))
    resumed = curve(run_training(None, workspace, "old", device="cpu", resume=True).events)
    assert [c for c in resumed if c[0] == STEP] == [c for c in whole if c[0] == STEP and c[1] > 5]


def test_a_generator_state_of_another_device_type_reseeds_from_seed_and_step() -> None:
    generators = run_generators(4, "cpu")
    cuda_like_state = torch.zeros(16, dtype=torch.uint8)  # a CUDA generator's state: seed and offset
    notes = restore_generators(generators, {"rng.dropout": cuda_like_state}, seed=4, step=7)
    assert len(notes) == 1 and "dropout" in notes[0] and "step 7" in notes[0]
    again = run_generators(4, "cpu")
    restore_generators(again, {"rng.dropout": cuda_like_state}, seed=4, step=7)
    assert torch.equal(generators["dropout"].get_state(), again["dropout"].get_state())  # reproducible
    assert not torch.equal(generators["dropout"].get_state(), run_generators(4, "cpu")["dropout"].get_state())
