"""BERT families: the 80/10/10 masking rule, bidirectional attention with a padding mask, the
tied MLM head, fine-tuning from a pre-trained encoder, each preset learning in a short run,
fill-mask against an independent forward, and explanations of both tasks."""
from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from playground.analysis.explain.per_input import (
    AnalysisOptions,
    InputSpec,
    analyze_checkpoint,
)
from playground.bundle import load_bundle, read_metrics_csv, save_bundle
from playground.config import load_preset
from playground.data.reviews import (
    NEGATIVE,
    POSITIVE,
    cue_words,
    held_out_cue_words,
    make_reviews,
)
from playground.data.splits import split_indices
from playground.errors import ConfigError, DataError, NotFoundError, TooBigError
from playground.families import get_family
from playground.families.bert.generation import fill_mask
from playground.families.bert.masking import IGNORE, MaskRule, mask_tokens
from playground.families.bert.tokens import BERT_SPECIALS, build_tokenizer, special_ids
from playground.generation.api import GenerateRequest
from playground.models.bert import (
    BertClassifier,
    BertClassifierConfig,
    BertConfig,
    BertMLM,
    copy_encoder,
    encoder_state,
)
from playground.training.device import device_caps
from playground.training.engine import run_training
from playground.training.spec import resolve_run
from playground.workspace import Workspace

TINY = {"vocab_size": 30, "d_model": 16, "n_layer": 2, "n_head": 2, "block_size": 16, "dropout": 0.0}
TINY_RUN = {"model.d_model": "32", "model.n_layer": "1", "model.n_head": "2", "model.block_size": "24",
            "train.batch_size": "16", "train.eval_interval": "10", "train.eval_iters": "2", "train.log_interval": "1",
            "train.warmup_steps": "2", "train.lr": "3e-3"}


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    return Workspace(tmp_path / "ws")


# -- masking ------------------------------------------------------------------------------


def test_masking_follows_the_80_10_10_rule_and_never_selects_specials() -> None:
    B, T, K = 1000, 102, 50  # 100k eligible positions; candidates 5..54
    g = torch.Generator().manual_seed(0)
    candidates = torch.arange(5, 5 + K)
    ids = candidates[torch.randint(K, (B, T), generator=g)]
    ids[:, 0], ids[:, -1] = 2, 3  # [CLS] ... [SEP]
    special = torch.zeros(B, T, dtype=torch.bool)
    special[:, [0, -1]] = True
    inputs, labels = mask_tokens(ids, special, 4, candidates, torch.Generator().manual_seed(1), MaskRule())

    assert torch.equal(inputs[special], ids[special]) and (labels[special] == IGNORE).all()
    selected = labels != IGNORE
    assert torch.equal(labels[selected], ids[selected])  # the loss reads the original token
    assert torch.equal(inputs[~selected], ids[~selected])  # nothing else changes
    n_eligible = int((~special).sum())

    def within(count: int, n: int, p: float) -> bool:  # 4 binomial standard errors
        return abs(count / n - p) < 4 * math.sqrt(p * (1 - p) / n)

    n_sel = int(selected.sum())
    assert within(n_sel, n_eligible, 0.15)
    masked = int((inputs[selected] == 4).sum())
    replaced = int(((inputs != ids) & (inputs != 4) & selected).sum())
    kept = int(((inputs == ids) & selected).sum())
    assert masked + replaced + kept == n_sel
    assert within(masked, n_sel, 0.8)
    assert within(replaced, n_sel, 0.1 * (1 - 1 / K))  # a random draw equal to the original reads as kept
    assert within(kept, n_sel, 0.1 + 0.1 / K)
    assert set(inputs[selected & (inputs != 4)].tolist()) <= set(candidates.tolist())  # never a special


def test_mask_rule_refuses_shares_that_do_not_add_up() -> None:
    with pytest.raises(ConfigError, match="mask_prob"):
        MaskRule(select=0.0)
    with pytest.raises(ConfigError, match="sum to at most 1"):
        MaskRule(to_mask=0.8, to_random=0.3)


# -- the model ----------------------------------------------------------------------------


def test_attention_is_bidirectional_and_padding_changes_no_real_position() -> None:
    torch.manual_seed(0)
    model = BertMLM(BertConfig(**TINY)).eval()
    ids = torch.tensor([[2, 7, 8, 9, 10, 11, 3]])
    changed = ids.clone()
    changed[0, 5] = 20  # a later token
    with torch.no_grad():
        out, out2 = model(ids), model(changed)
        assert not torch.allclose(out[0, 1], out2[0, 1])  # an earlier position sees it
        padded = torch.cat([ids, torch.zeros(1, 4, dtype=torch.long)], 1)  # [PAD] = 0
        assert torch.allclose(model(padded)[0, :7], out[0], atol=1e-5)
    clf = BertClassifier(BertClassifierConfig(**TINY, n_classes=3)).eval()
    with torch.no_grad():
        assert torch.allclose(clf(padded), clf(ids), atol=1e-5)


def test_mlm_head_is_tied_to_the_token_embedding() -> None:
    torch.manual_seed(0)
    model = BertMLM(BertConfig(**TINY)).eval()
    assert model.mlm_head.decoder.weight is model.encoder.tok_emb.weight
    ids = torch.tensor([[2, 5, 4, 6, 3]])
    with torch.no_grad():
        h = model.encoder(ids)  # [1,T,D]
        head = model.mlm_head
        by_hand = F.layer_norm(F.gelu(h @ head.dense.weight.T + head.dense.bias), (16,), head.norm.weight, head.norm.bias)
        expected = by_hand @ model.encoder.tok_emb.weight.T + head.decoder.bias  # [1,T,V]
        assert torch.allclose(model(ids), expected, atol=1e-5)
    names = [n for n, _ in model.named_parameters()]
    assert "mlm_head.decoder.weight" not in names  # one tensor, counted once


def test_copy_encoder_copies_equal_tensors_and_refuses_other_shapes() -> None:
    torch.manual_seed(0)
    mlm = BertMLM(BertConfig(**TINY))
    clf = BertClassifier(BertClassifierConfig(**TINY, n_classes=2))
    copy_encoder(clf, encoder_state(mlm))
    for k, v in encoder_state(mlm).items():
        assert torch.equal(encoder_state(clf)[k], v), k
    wider = BertClassifier(BertClassifierConfig(**{**TINY, "d_model": 32}, n_classes=2))
    with pytest.raises(ConfigError, match="d_model"):
        copy_encoder(wider, encoder_state(mlm))


# -- tokenizer ------------------------------------------------------------------------------


def test_builtin_tokenizers_carry_the_bert_specials_and_read_a_typed_mask() -> None:
    for kind in ("char", "words"):
        tok = build_tokenizer(kind, ["The plot was good. The acting was bad."])
        ids = special_ids(tok)
        assert [tok.id_to_token(i) for i in range(5)] == BERT_SPECIALS
        assert ids["mask_id"] in tok.encode("the [MASK] was good", add_special_tokens=False).ids


# -- training: presets, init_from -------------------------------------------------------------


def _mlm_run(workspace: Workspace, name: str = "mlm") -> list[dict]:
    overrides = {**TINY_RUN, "data.corpus": "reviews", "data.n_reviews": "600", "train.max_steps": "30"}
    run_training(resolve_run("bert-mlm-reviews", overrides).preset, workspace, name, device="cpu")
    return read_metrics_csv(workspace.path("models", name) / "metrics.csv")


def test_mlm_presets_lower_their_loss_in_a_short_run(workspace: Workspace) -> None:
    rows = _mlm_run(workspace)
    uniform = math.log(load_bundle("mlm", workspace).model_config.vocab_size)  # the loss of a uniform guess
    assert rows[-1]["val_loss"] < min(rows[0]["val_loss"] - 0.1, uniform - 0.3)
    assert 0 < rows[-1]["masked_accuracy"] <= 1
    overrides = {**TINY_RUN, "data.max_chars": "30000", "train.max_steps": "20"}
    run_training(resolve_run("bert-mlm-shakespeare", overrides).preset, workspace, "shakespeare", device="cpu")
    rows = read_metrics_csv(workspace.path("models", "shakespeare") / "metrics.csv")
    uniform = math.log(load_bundle("shakespeare", workspace).model_config.vocab_size)
    assert rows[-1]["val_loss"] < min(rows[0]["val_loss"], uniform - 0.3)


def test_finetune_starts_from_the_pretrained_encoder_and_both_presets_learn(workspace: Workspace) -> None:
    _mlm_run(workspace)
    pre = load_bundle("mlm", workspace)
    model = {k: v for k, v in TINY_RUN.items() if k.startswith("model.")}  # the pre-trained encoder's shape
    small = {**model, "data.n": "400", "train.max_steps": "60", "train.eval_interval": "30", "train.lr": "3e-3",
             "train.batch_size": "16", "train.log_interval": "1",
             "data.held_out_cues": "false", "data.n_train": "0"}  # all 320 training reviews, every cue word
    # (the held-out split has its own test)
    spec = resolve_run("bert-reviews-finetune", {**small, "data.init_from": "mlm"})
    adapter = get_family("bert_classifier").adapter
    prep = adapter.prepare(spec.data, spec.preset.model, workspace)
    assert prep.model_config.d_model == 32 and prep.tokenizer.get_vocab() == pre.tokenizer.get_vocab()
    model = get_family("bert_classifier").build(prep.model_config)
    adapter.init_model(model, prep)
    for k, v in encoder_state(pre.model).items():
        assert torch.equal(encoder_state(model)[k], v), k

    for preset, init in (("bert-reviews-finetune", "mlm"), ("bert-reviews-scratch", "")):
        run_training(resolve_run(preset, {**small, "data.init_from": init}).preset, workspace, preset, device="cpu")
        rows = read_metrics_csv(workspace.path("models", preset) / "metrics.csv")
        assert rows[-1]["val_loss"] < rows[0]["val_loss"] and 0 <= rows[-1]["accuracy"] <= 1

    wider = resolve_run("bert-reviews-finetune", {**small, "data.init_from": "mlm", "model.d_model": "64"})
    with pytest.raises(ConfigError, match="d_model = 64 differs"):
        adapter.prepare(wider.data, wider.preset.model, workspace)
    with pytest.raises(NotFoundError, match="bert-mlm-reviews"):
        adapter.prepare(resolve_run("bert-reviews-finetune", {**small, "data.init_from": "nothing"}).data, {}, workspace)
    with pytest.raises(ConfigError, match="may not contain"):
        resolve_run("bert-reviews-finetune", {"data.init_from": "../mlm"})


def test_held_out_cues_keep_half_the_cue_words_out_of_training_and_report_them_apart(workspace: Workspace) -> None:
    spec = resolve_run("bert-reviews-scratch", {**TINY_RUN, "data.n": "600", "data.n_train": "0",
                                                 "data.held_out_cues": "true"})
    adapter = get_family("bert_classifier").adapter
    prep = adapter.prepare(spec.data, spec.preset.model, workspace)
    split, held = prep.payload, held_out_cue_words()
    reviews = make_reviews(600, spec.data.seed, spec.data.negation, spec.data.intensify)
    train_idx, val_idx = split_indices(600, spec.data.val_fraction, spec.data.seed)
    kept = [reviews[i] for i in train_idx if not held & set(cue_words(reviews[i]))]  # an independent filter
    assert 0 < len(split.train_ids) == len(kept) < len(train_idx)
    vocab = prep.tokenizer.get_vocab()
    assert not {"wonderful", "awful", "brilliant", "boring"} & set(vocab)  # held-out words never reach training
    assert {"good", "bad", "excellent", "terrible"} <= set(vocab)
    val = split.val_reviews
    assert len(val) == len(val_idx) and any(held & set(cue_words(r)) for r in val)  # validation keeps every review
    unseen = [held.issuperset(cue_words(r)) for r in val]
    assert split.val_unseen.tolist() == unseen and any(unseen)
    assert split.val_seen.tolist() == [not held & set(cue_words(r)) for r in val]
    model = get_family("bert_classifier").build(prep.model_config).eval()  # no dropout: both reads agree
    metrics = adapter.evaluate(model, prep, spec.train, device_caps("cpu"))
    with torch.no_grad():
        preds = model(split.collate(split.val_ids)).argmax(-1)  # [N_val]
    right = (preds == split.val_labels).float()
    assert metrics["unseen_cue_accuracy"] == pytest.approx(right[split.val_unseen].mean().item())
    assert metrics["seen_cue_accuracy"] == pytest.approx(right[split.val_seen].mean().item())
    with pytest.raises(ConfigError, match="held_out_cues needs data.texts = reviews"):
        resolve_run("bert-reviews-scratch", {"data.texts": "csv", "data.held_out_cues": "true"})


def test_the_shipped_finetune_pair_differs_only_in_its_start() -> None:
    fine, scratch = load_preset("bert-reviews-finetune"), load_preset("bert-reviews-scratch")
    assert fine.data.pop("init_from") == "bert-mlm-reviews" and scratch.data.pop("init_from") == ""
    assert (fine.model, fine.data, fine.train) == (scratch.model, scratch.data, scratch.train)
    assert load_preset("bert-mlm-reviews").model["d_model"] == fine.model["d_model"]


def test_the_shipped_reviews_mlm_knows_which_way_a_verdict_word_leans() -> None:
    bundle = load_bundle("bert-mlm-reviews", Workspace(Path(__file__).resolve().parent.parent / "checkpoints"))
    tok, cfg = bundle.tokenizer, bundle.model_config
    pos = [tok.token_to_id(w) for w in POSITIVE if " " not in w]
    neg = [tok.token_to_id(w) for w in NEGATIVE if " " not in w]
    emb = F.normalize(bundle.model.encoder.tok_emb.weight.detach(), dim=-1)  # [V,d]
    cos = emb @ emb.T  # [V,V]

    def mean(a: list[int], b: list[int]) -> float:
        return float(torch.stack([cos[i, j] for i in a for j in b if i != j]).mean())

    assert mean(pos, neg) < min(mean(pos, pos), mean(neg, neg)) - 0.1  # polarity clusters in the embedding
    for word, same, other in (("wonderful", pos, neg), ("awful", neg, pos)):
        words = f"the story was {word} and the acting was [MASK]".split()
        ids = [cfg.cls_id, *(tok.token_to_id(w) for w in words), cfg.sep_id]
        with torch.no_grad():
            probs = bundle.model(torch.tensor([ids]))[0, -2].softmax(-1)  # [V] at the [MASK]
        assert probs[same].sum() > 3 * probs[other].sum(), word  # the hidden verdict follows the other one


# -- fill-mask and explanations ----------------------------------------------------------------


@pytest.fixture
def bundles(workspace: Workspace) -> tuple:
    """An MLM and a classifier bundle of tiny random models with a words tokenizer."""
    torch.manual_seed(0)
    tok = build_tokenizer("words", ["the plot was good and the acting was bad", "a long scene in a train station"])
    ids = special_ids(tok)
    cfg = BertConfig(**{**TINY, "vocab_size": tok.get_vocab_size()}, **ids)
    save_bundle(workspace, "m", BertMLM(cfg), "bert_mlm", cfg, tokenizer=tok)
    ccfg = BertClassifierConfig(**cfg.to_dict(), n_classes=2)
    save_bundle(workspace, "c", BertClassifier(ccfg), "bert_classifier", ccfg, tokenizer=tok,
                class_names=["negative", "positive"])
    return load_bundle("m", workspace), load_bundle("c", workspace)


def test_fill_mask_gives_the_independent_forwards_top_candidates(bundles) -> None:
    mlm, _ = bundles
    fills, ids = fill_mask(mlm, "the [MASK] was good and the acting was [MASK]", top_k=4)
    with torch.no_grad():
        probs = mlm.model(torch.tensor([ids]))[0].softmax(-1)  # [T,V]
    assert [f.position for f in fills] == [2, 9]
    for f in fills:
        assert sum(f.probs) <= 1 + 1e-6 and f.probs == sorted(f.probs, reverse=True)
        assert f.ids[0] == int(probs[f.position].argmax())
        assert torch.allclose(torch.tensor(f.probs), probs[f.position][f.ids], atol=1e-6)
    gen = get_family("bert_mlm").generator
    done = list(gen.stream(mlm, GenerateRequest(prompt="the [MASK] was good", n_alternatives=3)))[-1]
    one, _ = fill_mask(mlm, "the [MASK] was good", top_k=3)
    assert [r["token"] for r in done.info["fill_mask"]] == one[0].tokens
    assert done.samples[0].events[0].token_id == one[0].ids[0]
    with pytest.raises(DataError, match=r"\[MASK\]"):
        fill_mask(mlm, "no mask here")
    with pytest.raises(TooBigError, match="at most"):
        fill_mask(mlm, " ".join(["the"] * 40) + " [MASK]")
    with pytest.raises(TooBigError, match="masks"):
        fill_mask(mlm, " ".join(["[MASK]"] * 9))


def test_explanations_run_for_a_masked_token_and_a_class(bundles) -> None:
    mlm, clf = bundles
    opts = AnalysisOptions(methods=("attention", "rollout", "saliency", "ig", "loo"), ig_steps=8, ig_auto=False)
    result = analyze_checkpoint(mlm, InputSpec(text="the [MASK] was good and the acting was bad"), opts)
    p = result.prepared
    assert p.position == 2 and p.units[2] == "[MASK]"
    with torch.no_grad():
        assert p.target_id == int(mlm.model(p.query.inputs)[0, 2].argmax())
    for m in opts.methods:
        values = result.importances[m][0]
        assert values.shape == (len(p.units),) and all(math.isfinite(v) for v in values)
    result = analyze_checkpoint(clf, InputSpec(text="the plot was good", target="positive"), opts)
    assert result.prepared.target_label == "positive" and result.prepared.units[0] == "[CLS]"
    assert all(result.importances[m].shape == (1, 6) for m in opts.methods)


def test_generate_tab_fills_masks_and_hands_a_mask_to_analyze(bundles, workspace: Workspace) -> None:
    from playground.ui.analyze_tab import handoff_of, run_analysis
    from playground.ui.generate_tab import Env, explain, generate_text

    mlm, _ = bundles
    env = Env(workspace, "cpu", None)
    out = list(generate_text(env, "m", "the [MASK] was good and the acting was [MASK]", 1.0, 0, 1.0, 0.0, 1.0, 0.0, 0.0,
                             20, None, 1, "", 1, 0.0))[-1]
    fills, _ = fill_mask(mlm, "the [MASK] was good and the acting was [MASK]", top_k=5)
    table = out.table
    assert list(table["token"]) == [f.tokens[0] for f in fills]  # one row per mask, best candidate first
    assert list(table["alt2"]) == [f"{f.tokens[1]} {f.probs[1]:.3f}" for f in fills]
    handed = explain(out.result, "0:1", {})  # the second mask
    selection = handed[0] if isinstance(handed, tuple) else handed  # (selection, tab switch) or the selection alone
    handoff = handoff_of(workspace, selection)
    assert handoff["position"] == "9" and handoff["target"] == f"#{fills[1].ids[0]}"
    shown = run_analysis(workspace, "cpu", "m", handoff["text"], None, None, handoff["position"], handoff["target"],
                         ["attention", "saliency"], None, None, 8, False, handoff)
    assert f"`{fills[1].tokens[0]}`" in shown.summary and "position 9" in shown.summary


def test_held_out_queries_explain_a_mask_and_a_class(workspace: Workspace) -> None:
    from playground.analysis.experiments.data import HeldOut

    _mlm_run(workspace)
    model = {k: v for k, v in TINY_RUN.items() if k.startswith("model.")}
    cases = (("mlm", "bert-mlm-reviews", {"data.n_reviews": "300"}),
             ("clf", "bert-reviews-scratch", {"data.n": "200"}))
    run_training(resolve_run(cases[1][1], {**model, **cases[1][2], "train.max_steps": "2"}).preset, workspace, "clf",
                 device="cpu")
    for name, preset, data in cases:
        bundle = load_bundle(name, workspace)
        spec = resolve_run(preset, {**model, **data})
        family = get_family(bundle.family)
        prep = family.adapter.prepare(spec.data, spec.preset.model, workspace, tokenizer=bundle.tokenizer)
        held: HeldOut = family.examples.held_out(bundle, prep, bundle.tokenizer, 3, torch.Generator().manual_seed(0))
        assert len(held) == 3 and len(held.units[0]) == held.queries[0].inputs.shape[1]
        for q in held.queries:
            with torch.no_grad():
                rows = q.explainer.output_rows(q, q.inputs, q.positions, None, False)  # [1,V] or [1,C]
                f = q.explainer.score_fn(q)(q.inputs, *q.explainer.forward_args(q))  # [1]
            assert torch.allclose(f, rows.log_softmax(-1)[0, q.targets], atol=1e-5)
            assert int(q.targets[0]) == int(rows.argmax())  # each explains the model's own prediction


def test_framing_pads_lines_and_splits_segments_and_segments_reach_the_output() -> None:
    from playground.families.bert.mlm_training import MLMData
    from playground.training.data import TextData

    def data(segments: bool) -> MLMData:
        stream = torch.arange(5, 40)
        return MLMData(TextData(stream, stream, 6), None, 0, 2, 3, 4, torch.arange(5, 40), MaskRule(), segments)

    ids, seg = data(False).frame([torch.tensor([5, 6]), torch.tensor([5, 6, 7, 8])])
    assert ids.tolist() == [[2, 5, 6, 3, 0, 0], [2, 5, 6, 7, 8, 3]] and not seg.any()
    ids, seg = data(True).frame([torch.tensor([5, 6, 7, 8, 9, 10])])
    assert ids.tolist() == [[2, 5, 6, 7, 3, 8, 9, 10, 3]] and seg.tolist() == [[0, 0, 0, 0, 0, 1, 1, 1, 1]]
    batch = data(True).masked([torch.tensor([5, 6, 7, 8, 9, 10])] * 50, torch.Generator().manual_seed(0))
    assert (batch["labels"][:, [0, 4, 8]] == IGNORE).all()  # [CLS] and both [SEP] never selected
    torch.manual_seed(0)
    model = BertMLM(BertConfig(**TINY, segments=True)).eval()
    with torch.no_grad():
        assert not torch.allclose(model(ids), model(ids, seg))
