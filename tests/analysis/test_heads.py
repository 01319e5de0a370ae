"""Head analysis: ablation against hand recomputation, pruning-curve endpoints, scores on
hand-built attention and against independent loops, and the shipped GPT checkpoint."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from playground.__main__ import main
from playground.analysis.heads.ablation import (
    HeadData,
    ablation_losses,
    gradient_importance,
    loss_without,
    mean_loss,
    pruning_curve,
    ranking,
)
from playground.analysis.heads.mask import (
    full_gates,
    head_mask,
    head_modules,
    mean_head_outputs,
)
from playground.analysis.heads.report import HeadReport, analyse_heads
from playground.analysis.heads.scores import (
    in_context_losses,
    induction_scores,
    positional_scores,
    repeated_random_tokens,
    uniform_causal_baseline,
)
from playground.bundle import load_bundle
from playground.charts.heads import head_heatmaps_chart, pruning_chart
from playground.charts.layout import chart_frames
from playground.models.attention import (
    MultiHeadAttention,
    assign_attention_names,
    record_attention,
)
from playground.models.gpt import GPT, GPTConfig
from playground.models.transformer_seq2seq import (
    TransformerSeq2Seq,
    TransformerSeq2SeqConfig,
)

CHECKPOINT = Path(__file__).resolve().parents[2] / "checkpoints" / "models" / "gpt-python-docs-char"


@pytest.fixture(autouse=True)
def one_thread():
    """Tiny models run fastest on one thread, above all on a shared, busy machine."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def tiny_gpt(seed: int = 0) -> GPT:
    torch.manual_seed(seed)
    model = GPT(GPTConfig(vocab_size=13, block_size=16, n_layer=2, n_head=2, d_model=16))
    with torch.no_grad():  # larger weights than GPT-2's init, so heads differ clearly
        for p in model.parameters():
            if p.ndim == 2:
                p.normal_(0, 0.3)
    return model.eval()


def lm_data(model: GPT, n: int = 6, T: int = 12, seed: int = 1) -> HeadData:
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(model.config.vocab_size, (n, T + 1), generator=g)
    batches = [(ids[i:i + 3, :-1], ids[i:i + 3, 1:]) for i in range(0, n, 3)]
    return HeadData(batches, lambda m, b: F.cross_entropy(m(b[0]).flatten(0, 1), b[1].flatten()))


def out_proj_inputs(model: GPT, x: Tensor, name: str) -> Tensor:
    """The input of ``name``'s out_proj in a clean forward (an independent capture) [B,T,D]."""
    module = dict(model.named_modules())[name]
    seen: list[Tensor] = []
    handle = module.out_proj.register_forward_pre_hook(lambda _, args: seen.append(args[0].detach()))
    with torch.no_grad():
        model(x)
    handle.remove()
    return torch.cat([s.flatten(0, 1) for s in seen])  # [B*T,D]


def test_zero_ablation_equals_zeroed_out_proj_columns() -> None:
    model = tiny_gpt()
    x = torch.randint(13, (3, 10))
    name, h, hd = "blocks.1.attn", 1, 8
    gates = full_gates(model)
    gates[name][h] = 0.0
    with torch.no_grad(), head_mask(model, gates):
        ablated = model(x)
    manual = copy.deepcopy(model)  # head h's output times zero columns = that head's output zeroed
    with torch.no_grad():
        dict(manual.named_modules())[name].out_proj.weight[:, h * hd:(h + 1) * hd] = 0.0
        expected = manual(x)
        clean = model(x)
    torch.testing.assert_close(ablated, expected, atol=1e-5, rtol=1e-5)
    assert (ablated - clean).abs().max() > 1e-3  # the head mattered: the check is not vacuous
    torch.testing.assert_close(model(x).detach(), clean)  # hooks removed on exit


def test_mean_ablation_uses_the_heads_mean_output() -> None:
    model = tiny_gpt()
    data = lm_data(model)
    name, h, hd = "blocks.0.attn", 0, 8
    means = mean_head_outputs(model, data.run)
    captured = torch.cat([out_proj_inputs(model, b[0], name) for b in data.batches])  # [N*T,D]
    expected_mean = captured[:, h * hd:(h + 1) * hd].mean(0)  # [hd]
    torch.testing.assert_close(means[name][h], expected_mean, atol=1e-6, rtol=1e-5)

    gates = full_gates(model)
    gates[name][h] = 0.0
    x = data.batches[0][0]
    with torch.no_grad(), head_mask(model, gates, means):
        ablated = model(x)
    manual = copy.deepcopy(model)  # W y with y_h := mean = (W with head h's columns 0) y + W_h mean
    with torch.no_grad():
        proj = dict(manual.named_modules())[name].out_proj
        cols = proj.weight[:, h * hd:(h + 1) * hd].clone()
        proj.weight[:, h * hd:(h + 1) * hd] = 0.0
        proj.bias += cols @ expected_mean
        expected = manual(x)
    torch.testing.assert_close(ablated, expected, atol=1e-5, rtol=1e-5)
    # ablation_losses uses the same replacement
    losses = ablation_losses(model, data, "mean")
    torch.testing.assert_close(torch.tensor(losses[name][h]),
                               torch.tensor(loss_without(model, data, [(name, h)], means)))


def test_pruning_curve_endpoints() -> None:
    model = tiny_gpt()
    data = lm_data(model)
    order = [head for head, _ in ranking(ablation_losses(model, data, "zero"))]
    assert len(order) == 4
    curve = pruning_curve(model, data, order, "zero")
    assert len(curve) == 5
    assert curve[0] == pytest.approx(mean_loss(model, data), abs=1e-6)
    all_off = {name: torch.zeros(hm.n_head) for name, hm in head_modules(model).items()}
    with head_mask(model, all_off):
        everything = mean_loss(model, data)
    assert curve[-1] == pytest.approx(everything, abs=1e-6)
    assert curve[-1] != pytest.approx(curve[0], abs=1e-3)


def test_gradient_importance_matches_finite_differences() -> None:
    model = tiny_gpt()
    data = lm_data(model, n=3)  # one batch: |dL/dxi| of that batch
    grads = gradient_importance(model, data)
    name, h, eps = "blocks.1.attn", 0, 1e-3
    losses = []
    for sign in (1, -1):
        gates = full_gates(model)
        gates[name][h] = 1 + sign * eps
        with head_mask(model, gates):
            losses.append(mean_loss(model, data))
    assert grads[name][h] == pytest.approx(abs(losses[0] - losses[1]) / (2 * eps), rel=2e-2, abs=1e-4)
    assert all(p.grad is None for p in model.parameters())  # a shared model's parameters are left alone


class OneLayer(nn.Module):
    """Positions one-hot [T] -> one causal attention layer; head 0 built to look one token back."""

    def __init__(self, T: int = 8, c: float = 60.0) -> None:
        super().__init__()
        self.T, D = T, 16
        self.attn = MultiHeadAttention(D, 2, causal=True)
        with torch.no_grad():
            w = torch.zeros(3 * D, D)
            for r in range(T - 1):
                w[r, r + 1] = 1.0  # head 0 query of position i = e_{i-1}
            for r in range(T):
                w[D + r, r] = c  # head 0 key of position j = c e_j
            w[D + 8:D + 16] = torch.randn(8, D)  # head 1: arbitrary
            self.attn.qkv.weight.copy_(w)
            self.attn.qkv.bias.zero_()
        assign_attention_names(self)

    def forward(self, B: int) -> Tensor:
        x = torch.eye(16)[: self.T].expand(B, -1, -1)  # [B,T,D]
        return self.attn(x)[0]


def test_previous_token_score_of_a_hand_built_head() -> None:
    model = OneLayer()
    with torch.no_grad(), record_attention(model) as maps:
        model(2)
    scores = positional_scores(dict(maps))
    assert scores["previous"]["attn"][0] == pytest.approx(1.0, abs=1e-4)
    assert scores["first"]["attn"][0] < 0.2  # only query 1 looks at key 0
    assert scores["previous"]["attn"][1] < 0.9
    assert scores["next"]["attn"] == [0.0, 0.0]  # causal


def test_induction_score_against_a_loop() -> None:
    model = tiny_gpt()
    L = 5
    tokens = repeated_random_tokens(range(13), L, 3, torch.Generator().manual_seed(0))  # [3,10]
    assert torch.equal(tokens[:, :L], tokens[:, L:])
    with torch.no_grad(), record_attention(model) as maps:
        logits = model(tokens)
    got = induction_scores(dict(maps), L)
    for name, w in maps.items():
        for h in range(w.shape[1]):
            vals = []
            for b in range(w.shape[0]):
                for i in range(L):  # second-copy query L+i sees token r[i]; after its first occurrence: r[i+1] at key i+1
                    vals.append(float(w[b, h, L + i, i + 1]))
            assert got[name][h] == pytest.approx(sum(vals) / len(vals), abs=1e-6)
    ctx = in_context_losses(logits, tokens, L)
    per = F.cross_entropy(logits[:, :-1].flatten(0, 1), tokens[:, 1:].flatten(), reduction="none").view(3, -1)
    first = per[:, [t - 1 for t in range(1, L)]].mean()
    second = per[:, [t - 1 for t in range(L + 1, 2 * L)]].mean()
    assert ctx["first"] == pytest.approx(float(first), abs=1e-5)
    assert ctx["second"] == pytest.approx(float(second), abs=1e-5)


@pytest.mark.skipif(not CHECKPOINT.is_dir(), reason="shipped checkpoint missing")
def test_report_on_the_shipped_gpt() -> None:
    report = analyse_heads(load_bundle(CHECKPOINT), n=4, batch_size=4)
    assert report.modules == [f"blocks.{i}.attn" for i in range(4)] and report.n_head == [4] * 4
    assert report.clean_loss < 2.5  # the checkpoint's val loss is 1.37 (4 windows: noisy, but far below log 104)
    for curve in report.pruning.values():
        assert curve["loss"][0] == pytest.approx(report.clean_loss, abs=1e-5)
        assert len(curve["loss"]) == 17 and curve["loss"][-1] > curve["loss"][0]
    assert report.pruning["gradient"]["loss"][-1] == pytest.approx(report.pruning["ablation"]["loss"][-1], abs=1e-5)
    frame = report.frame()
    assert set(frame["score"]) >= {"ablation_zero", "ablation_mean", "gradient", "previous", "first", "induction"}
    assert frame.groupby("score").size().eq(16).all()
    assert report.induction_length == 32 and 0 <= min(min(v) for v in report.induction.values())


def test_head_charts_one_panel_per_score() -> None:
    mods = ["blocks.0.attn", "blocks.1.attn"]
    report = HeadReport(
        checkpoint="x", family="gpt", modules=mods, n_head=[2, 2], n_examples=1, clean_loss=1.0,
        ablation={"zero": {m: [1.5, 0.9] for m in mods}}, gradient={m: [0.1, 0.2] for m in mods},
        positional={"previous": {m: [0.9, 0.1] for m in mods}},
        pruning={"gradient": {"order": [], "loss": [1.0, 1.1, 1.3, 2.0, 3.0]}},
    )
    frame = report.frame()
    assert sorted(set(frame["score"])) == ["ablation_zero", "gradient", "previous"]
    assert frame[frame["score"] == "ablation_zero"]["value"].tolist() == pytest.approx([0.5, -0.1, 0.5, -0.1])
    heat = head_heatmaps_chart(frame, columns=2)
    heat.to_dict()
    assert [len(f) for f in chart_frames(heat)] == [4] * 3  # one frame per panel (rect and text share it), 4 heads
    curve = pruning_chart(report.pruning_frame(), report.clean_loss)
    curve.to_dict()
    assert report.pruning_frame()["fraction"].tolist() == [0, 0.25, 0.5, 0.75, 1.0]
    assert report.loss_at(0.5) == 1.3


def test_uniform_baseline_matches_uniform_attention() -> None:
    T, L = 8, 4
    w = torch.tril(torch.ones(T, T))
    w = (w / w.sum(-1, keepdim=True))[None, None]  # [1,1,T,T] uniform causal attention
    scores = positional_scores({"m": w})
    assert scores["previous"]["m"][0] == pytest.approx(uniform_causal_baseline(T, -1))
    assert scores["first"]["m"][0] == pytest.approx(uniform_causal_baseline(T, -1))
    assert induction_scores({"m": w}, L)["m"][0] == pytest.approx(uniform_causal_baseline(2 * L, first_query=L))


@pytest.mark.skipif(not CHECKPOINT.is_dir(), reason="shipped checkpoint missing")
def test_cli_heads_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["heads", str(CHECKPOINT), "--examples", "2", "--batch-size", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["checkpoint"] == "gpt-python-docs-char" and out["n_examples"] == 2
    assert len(out["pruning"]["gradient"]["loss"]) == 17 and set(out["uniform"]) == {"previous", "first", "induction"}


def test_seq2seq_encoder_decoder_and_cross_heads_are_masked() -> None:
    torch.manual_seed(0)
    model = TransformerSeq2Seq(TransformerSeq2SeqConfig(vocab_size=11, d_model=16, n_head=2, n_encoder_layers=1,
                                                        n_decoder_layers=1, max_len=16)).eval()
    names = list(head_modules(model))
    assert len(names) == 3 and any("cross" in n for n in names)  # encoder self, decoder self, decoder cross
    src, tgt = torch.randint(3, 11, (2, 7)), torch.randint(3, 11, (2, 5))
    for name in names:
        gates = full_gates(model)
        gates[name][1] = 0.0
        with torch.no_grad(), head_mask(model, gates):
            ablated = model(src, tgt)
        manual = copy.deepcopy(model)
        with torch.no_grad():
            dict(manual.named_modules())[name].out_proj.weight[:, 8:16] = 0.0
            expected = manual(src, tgt)
        torch.testing.assert_close(ablated, expected, atol=1e-5, rtol=1e-5)
