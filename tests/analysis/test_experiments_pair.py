"""Experiments on two models: the user's own trainer-written checkpoint beside an imported one,
over the same held-out examples, each model reading them through its own tokenizer."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import torch
from pandas.testing import assert_frame_equal

from playground.__main__ import main
from playground.analysis.experiments.core import drive
from playground.analysis.experiments.data import load_held_out
from playground.analysis.experiments.pair import (
    common_inputs,
    draw_inputs,
    held_out_evaluator,
    iter_on_inputs,
    iter_pair,
    read_inputs,
)
from playground.analysis.experiments.runner import ExperimentOptions, iter_experiment
from playground.analysis.experiments.summary import summarize
from playground.bundle import load_bundle
from playground.config import Preset
from playground.errors import PlaygroundError
from playground.pretrained.importer import import_pretrained
from playground.training.engine import run_training
from playground.workspace import Workspace
from tests.pretrained.conftest import save, wordpiece

TINY_TRAIN = {"max_steps": 2, "batch_size": 4, "eval_interval": 2, "eval_iters": 1, "eval_examples": 8,
              "warmup_steps": 1, "log_interval": 1, "save_optimizer": False, "preview": False}


def _sst2_like(folder: Path, positions: int = 128) -> None:
    """A tiny random DistilBERT sentiment classifier with SST-2's labels (upper case), saved with
    transformers; it reads up to ``positions`` tokens."""
    import transformers as tf  # function-level: a test extra, slow to import

    torch.manual_seed(1)
    config = tf.DistilBertConfig(vocab_size=120, dim=32, n_layers=2, n_heads=4, hidden_dim=48,
                                 max_position_embeddings=positions, pad_token_id=0, id2label={0: "NEGATIVE", 1: "POSITIVE"},
                                 label2id={"NEGATIVE": 0, "POSITIVE": 1})
    config._attn_implementation = "eager"
    tf.DistilBertForSequenceClassification(config).eval().save_pretrained(folder)
    wordpiece(120).save(str(folder / "tokenizer.json"))


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    """Own char GPT and word-level BERT review classifier (trained 2 steps), imported GPT-2,
    a 3-class BERT and two 2-class (SST-2 labels) DistilBERTs, one reading only 40 tokens."""
    root = tmp_path_factory.mktemp("pair")
    corpus = root / "corpus.txt"
    corpus.write_text("the quick brown fox jumps over the lazy dog. " * 60, encoding="utf-8")
    workspace = Workspace(root / "ws")
    torch.manual_seed(0)
    run_training(Preset("tiny-gpt", "gpt", model={"block_size": 16, "n_layer": 2, "n_head": 2, "d_model": 16},
                        data={"corpus": str(corpus), "tokenizer": "char"}, train=dict(TINY_TRAIN)),
                 workspace, "own-gpt", device="cpu")
    run_training(Preset("tiny-bert", "bert_classifier", model={"d_model": 16, "n_layer": 1, "n_head": 2, "block_size": 24},
                        data={"texts": "reviews", "n": 80, "tokenizer": "words"}, train=dict(TINY_TRAIN)),
                 workspace, "own-bert", device="cpu")
    for arch, name in (("GPT2LMHeadModel", "gpt2-tiny"), ("BertForSequenceClassification", "bert-3class")):
        import_pretrained(str(save(arch, root / arch).folder), workspace, name)
    _sst2_like(root / "sst2")
    import_pretrained(str(root / "sst2"), workspace, "sst2-tiny")
    _sst2_like(root / "sst2-short", positions=40)
    import_pretrained(str(root / "sst2-short"), workspace, "sst2-short")
    return workspace


def _b(ws: Workspace, name: str):
    return load_bundle(name, ws)


PERM = ExperimentOptions(n=4, n_perm=12, seed=3)
pytestmark = pytest.mark.slow  # the module's workspace trains two models and imports three (about 15 s)


@pytest.mark.parametrize("first,second", [("own-gpt", "gpt2-tiny"), ("own-bert", "sst2-tiny")])
@pytest.mark.parametrize("experiment", ["permutation", "uniform"])
def test_the_pair_equals_two_single_model_runs_on_the_same_texts(ws: Workspace, first: str, second: str,
                                                                  experiment: str) -> None:
    a, b = _b(ws, first), _b(ws, second)
    pair = drive(iter_pair(experiment, [a, b], PERM, ws))
    assert pair.models == [first, second] and not pair.stopped
    inputs = draw_inputs(_b(ws, first), PERM.n, PERM.seed, ws)  # the same draw, fresh models
    fresh = [_b(ws, first), _b(ws, second)]
    helds, left_out, _ = common_inputs(fresh, inputs)  # the texts both models can read
    assert pair.left_out == left_out and len(helds[0]) == len(helds[1]) == PERM.n - left_out >= 2
    for bundle, held, result in zip(fresh, helds, pair.results):
        alone = drive(iter_on_inputs(experiment, bundle, held, PERM, ws))
        assert_frame_equal(result.to_frame(), alone.to_frame())  # the numbers are identical
        assert result.stats() == alone.stats()
        assert summarize(result).to_markdown() == summarize(alone).to_markdown()
    both = pair.to_frame()
    assert list(both["model"].unique()) == [first, second] and len(both) == sum(len(r.rows) for r in pair.results)


@pytest.mark.parametrize("first", ["own-gpt", "own-bert"])
def test_the_first_column_is_the_ordinary_single_model_run(ws: Workspace, first: str) -> None:
    """The texts decode and re-encode to the very queries a one-model run draws (char / word tokenizers),
    so the own model's column equals the experiment as it always ran."""
    bundle = _b(ws, first)
    held = load_held_out(bundle, PERM.n, PERM.seed, ws)
    again, _ = read_inputs(bundle, draw_inputs(bundle, PERM.n, PERM.seed, ws))
    for q, r in zip(held.queries, again.queries, strict=True):
        for field in ("inputs", "targets", "baselines", "units_mask"):
            assert torch.equal(getattr(q, field), getattr(r, field)), field
    pair = drive(iter_pair("permutation", [_b(ws, first), _b(ws, "gpt2-tiny" if first == "own-gpt" else "sst2-tiny")],
                           PERM, ws))
    classic = drive(iter_experiment("permutation", _b(ws, first), PERM, ws))
    assert_frame_equal(pair.results[0].to_frame(), classic.to_frame())


def test_examples_one_model_cannot_read_are_left_out_of_both(ws: Workspace) -> None:
    from playground.analysis.experiments.pair import pair_note

    pair = drive(iter_pair("permutation", [_b(ws, "own-bert"), _b(ws, "sst2-short")], PERM, ws))
    inputs = draw_inputs(_b(ws, "own-bert"), PERM.n, PERM.seed, ws)
    readable = [p is None for p in read_inputs(_b(ws, "sst2-short"), inputs)[1]]
    assert 0 < pair.left_out == readable.count(False) < PERM.n  # the long reviews do not fit 40 positions
    assert [r.examples_done for r in pair.results] == [readable.count(True)] * 2
    note = pair_note(pair)
    assert f"{pair.left_out} example(s) were left out of both" in note and "sst2-short: The text is" in note


def test_the_uniform_baseline_on_held_out_examples_counts_by_hand(ws: Workspace) -> None:
    from playground.models.attention import attention_modules, override_attention, uniform_override

    bundle = _b(ws, "own-bert")
    held, _ = read_inputs(bundle, draw_inputs(bundle, 5, 0, ws))
    evaluate = held_out_evaluator(held)
    learned = [q.probs()[0] for q in held.queries]
    with override_attention(bundle.model, {n: uniform_override() for n in attention_modules(bundle.model)}):
        got = evaluate(bundle.model)
        flat = [q.probs()[0] for q in held.queries]
    n = len(held.queries)
    assert got["accuracy"] == pytest.approx(sum(int(p.argmax()) == g for p, g in zip(flat, held.gold)) / n)
    assert got["predictions kept"] == pytest.approx(sum(int(p.argmax()) == int(q.argmax()) for p, q in zip(flat, learned)) / n)
    assert got["mean TVD from learned"] == pytest.approx(sum(0.5 * float((p - q).abs().sum()) for p, q in zip(flat, learned)) / n)
    assert evaluate(bundle.model) == {"accuracy": pytest.approx(sum(int(p.argmax()) == g for p, g in zip(learned, held.gold)) / n),
                                      "predictions kept": 1.0, "mean TVD from learned": 0.0}


@pytest.mark.parametrize("experiment,pair,message", [
    ("permutation", ("own-gpt", "own-bert"), "does next-token prediction and 'own-bert' does text classification"),
    ("permutation", ("own-bert", "bert-3class"), "needs the same label set in both"),
    ("seeds", ("own-gpt", "gpt2-tiny"), "retrains the first model's preset"),
    ("diagnostic", ("own-bert", "sst2-tiny"), "run it on one model"),
    ("permutation", ("own-gpt", "own-gpt"), "other than the first"),
])
def test_pairs_that_cannot_be_compared_are_refused_before_anything_runs(ws: Workspace, experiment: str,
                                                                        pair: tuple[str, str], message: str) -> None:
    with pytest.raises(PlaygroundError, match=message):
        next(iter_pair(experiment, [_b(ws, n) for n in pair], PERM, ws))


def test_an_imported_model_cannot_be_the_first(ws: Workspace) -> None:
    with pytest.raises(PlaygroundError, match="imported pretrained model"):
        drive(iter_pair("permutation", [_b(ws, "gpt2-tiny"), _b(ws, "own-gpt")], PERM, ws))


def test_label_randomisation_is_refused_with_a_second_model(ws: Workspace) -> None:
    opts = ExperimentOptions(n=2, label_randomisation=True)
    with pytest.raises(PlaygroundError, match="untick it"):
        next(iter_pair("sanity", [_b(ws, "own-bert"), _b(ws, "sst2-tiny")], opts, ws))


def test_cli_second_model_prints_both_and_writes_both(ws: Workspace, tmp_path: Path, capsys) -> None:
    out = tmp_path / "pair.csv"
    rc = main(["--workspace", str(ws.root), "analyze", "experiment", "permutation", "own-gpt", "--second", "gpt2-tiny",
               "--n", "3", "--n-perm", "5", "--quiet", "--out", str(out)])
    assert rc == 0
    printed = capsys.readouterr().out
    assert "== own-gpt ==" in printed and "== gpt2-tiny ==" in printed
    assert "Both models read the same 3 windows of 16 tokens" in printed
    frame = pd.read_csv(out)
    assert list(frame["model"]) == ["own-gpt"] * 3 + ["gpt2-tiny"] * 3
    pair = drive(iter_pair("permutation", [_b(ws, "own-gpt"), _b(ws, "gpt2-tiny")],
                           ExperimentOptions(n=3, n_perm=5), ws))
    assert frame["median_tvd"].tolist() == pytest.approx(pair.to_frame()["median_tvd"].tolist(), rel=1e-6)
    js = tmp_path / "pair.json"
    assert main(["--workspace", str(ws.root), "analyze", "experiment", "uniform", "own-gpt", "--second", "gpt2-tiny",
                 "--n", "2", "--quiet", "--out", str(js)]) == 0
    data = json.loads(js.read_text())
    assert data["models"] == ["own-gpt", "gpt2-tiny"] and len(data["results"]) == 2


def test_masked_language_models_read_the_same_masked_texts(tmp_path: Path) -> None:
    """The shipped review MLM beside a tiny random BERT (WordPiece, 256 positions): each reads the
    held-out texts with its own [MASK] at the same word, and the experiment explains that position."""
    import shutil

    import transformers as tf  # function-level: a test extra, slow to import

    from playground.settings import REPO_ROOT

    ws = Workspace(tmp_path / "ws")
    shutil.copytree(REPO_ROOT / "checkpoints" / "models" / "bert-mlm-reviews", ws.path("models", "bert-mlm-reviews"))
    torch.manual_seed(2)
    config = tf.BertConfig(vocab_size=120, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                           intermediate_size=48, max_position_embeddings=256, pad_token_id=0)
    config._attn_implementation = "eager"
    tf.BertForMaskedLM(config).eval().save_pretrained(tmp_path / "bert")
    wordpiece(120).save(str(tmp_path / "bert" / "tokenizer.json"))
    import_pretrained(str(tmp_path / "bert"), ws, "bert-tiny")
    own, other = _b(ws, "bert-mlm-reviews"), _b(ws, "bert-tiny")
    inputs = draw_inputs(own, 3, 0, ws)
    assert all(e.source.count("[MASK]") == 1 for e in inputs.examples)
    for bundle in (own, other):
        held, problems = read_inputs(bundle, inputs)
        assert problems == [None] * 3
        for q in held.queries:  # the explained position is the model's own [MASK]
            assert int(q.inputs[0, int(q.positions[0])]) == bundle.model_config.mask_id
    pair = drive(iter_pair("permutation", [own, other], ExperimentOptions(n=3, n_perm=5), ws))
    assert [r.examples_done for r in pair.results] == [3, 3] and pair.left_out == 0
    assert all("of 3 examples the median TVD" in summarize(r).findings[0] for r in pair.results)


def test_image_classifiers_read_the_same_images_and_masks(tmp_path: Path) -> None:
    """The shipped vit-shapes beside a tiny random ViT of the same four classes (another order,
    upper case, 16-pixel images): the same images, each resized to its model; the pointing game's
    object masks come along; true classes are matched by name."""
    import shutil

    import transformers as tf  # function-level: a test extra, slow to import

    from playground.settings import REPO_ROOT

    ws = Workspace(tmp_path / "ws")
    shutil.copytree(REPO_ROOT / "checkpoints" / "models" / "vit-shapes", ws.path("models", "vit-shapes"))
    names = ["CROSS", "CIRCLE", "TRIANGLE", "SQUARE"]
    torch.manual_seed(3)
    config = tf.ViTConfig(image_size=16, patch_size=4, num_channels=3, hidden_size=32, num_hidden_layers=2,
                          num_attention_heads=4, intermediate_size=48, id2label=dict(enumerate(names)),
                          label2id={n: i for i, n in enumerate(names)})
    config._attn_implementation = "eager"
    tf.ViTForImageClassification(config).eval().save_pretrained(tmp_path / "vit")
    import_pretrained(str(tmp_path / "vit"), ws, "vit-tiny")
    own, other = _b(ws, "vit-shapes"), _b(ws, "vit-tiny")
    held = load_held_out(own, 3, 0, ws)
    inputs = draw_inputs(own, 3, 0, ws)
    theirs, problems = read_inputs(other, inputs)
    assert problems == [None] * 3 and tuple(theirs.queries[0].inputs.shape[-2:]) == (16, 16)
    assert [names[g].lower() for g in theirs.gold] == [own.class_names[g] for g in held.gold]  # matched by name
    assert all(m is not None and m.any() for m in theirs.masks)
    pair = drive(iter_pair("pointing", [own, other], ExperimentOptions(n=3, methods=("attention", "random")), ws))
    assert [r.examples_done for r in pair.results] == [3, 3]
