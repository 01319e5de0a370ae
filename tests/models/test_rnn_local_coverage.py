"""Luong's local-m / local-p attention and See et al.'s coverage in the RNN decoder (#17): the
weights against loops written from the papers' formulas, padding, beam reordering of the new
state, the coverage loss of training, and the config's refusals."""
from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from playground.errors import ConfigError
from playground.families import get_family
from playground.models.rnn_seq2seq import RNNSeq2Seq, RNNSeq2SeqConfig

V, PAD, BOS, EOS = 14, 0, 1, 2


def _model(seed: int = 0, **options) -> RNNSeq2Seq:
    torch.manual_seed(seed)
    cfg = RNNSeq2SeqConfig(vocab_size=V, pad_id=PAD, bos_id=BOS, eos_id=EOS, emb_dim=8, hidden=12, attn_dim=6,
                           **{"attention": "general", **options})
    model = RNNSeq2Seq(cfg).eval()
    att = model.decoder.attention
    with torch.no_grad():
        if getattr(att, "w_c", None) is not None:
            att.w_c.normal_(0, 1.0)  # starts at 0: give it a value so the coverage term is tested
        if hasattr(att, "W_p"):
            att.W_p.weight.mul_(4.0)  # spread the predicted centres over the source
    return model


def _batch() -> tuple[torch.Tensor, torch.Tensor]:
    """Sources of lengths 9 and 5 (right padding) and targets of 7 steps."""
    g = torch.Generator().manual_seed(3)
    src = torch.randint(3, V, (2, 9), generator=g)
    src[1, 5:] = PAD
    tgt_in = torch.randint(3, V, (2, 7), generator=g)
    tgt_in[:, 0] = BOS
    return src, tgt_in


def _expected_alpha(model: RNNSeq2Seq, s: torch.Tensor, h: torch.Tensor, length: int, t: int,
                    coverage: list[float] | None) -> list[float]:
    """One row's weights by loops over source positions: the formulas of Luong §3.2 / See et al."""
    c = model.config
    att = model.decoder.attention
    scores = []
    for j in range(length):
        if c.attention == "general":
            e = float(s @ (att.score.W.weight @ h[j]))  # s^T W h_j
        else:  # additive: v^T tanh(W_s s + W_h h_j + w_c c_j)
            W = att.score.W.weight
            pre = W[:, : c.hidden] @ s + W[:, c.hidden:] @ h[j]
            if coverage is not None:
                pre = pre + att.w_c * coverage[j]
            e = float(att.score.v.weight[0] @ torch.tanh(pre))
        if coverage is not None and c.attention == "general":
            e += float(att.w_c[0]) * coverage[j]
        scores.append(e)
    if c.local == "none":
        window = list(range(length))
        p = None
    else:
        if c.local == "monotonic":
            p = float(min(t, length - 1))
        else:
            p = (length - 1) / (1 + math.exp(-float(att.v_p.weight[0] @ torch.tanh(att.W_p.weight @ s))))
        window = [j for j in range(length) if abs(j - p) <= c.local_d]
    z = sum(math.exp(scores[j]) for j in window)
    out = [0.0] * h.shape[0]  # padded positions and positions outside the window stay 0
    for j in window:
        out[j] = math.exp(scores[j]) / z
        if c.local == "predictive":
            sigma = c.local_d / 2
            out[j] *= math.exp(-((j - p) ** 2) / (2 * sigma ** 2))
    return out


OPTIONS = [
    dict(local="monotonic", local_d=2),
    dict(local="predictive", local_d=2),
    dict(local="predictive", local_d=3, coverage=True),
    dict(coverage=True),
    dict(attention="additive", coverage=True),
    dict(attention="additive", local="monotonic", local_d=1, coverage=True),
]


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: "-".join(f"{k}={v}" for k, v in o.items()))
def test_weights_match_the_papers_formulas(options):
    """Each step's alpha (what the maps show) equals the loop computation from the decoder's
    query s_{t-1}: the window, the Gaussian, zeros on padding, and the coverage so far."""
    model = _model(**options)
    src, tgt_in = _batch()
    lengths = (src != PAD).sum(1).tolist()
    with torch.no_grad():
        _, alphas = model(src, tgt_in, return_alignment=True)  # [B,T,S]
        state = model.start(src)
        coverage = [[0.0] * src.shape[1] for _ in range(2)]
        for t in range(tgt_in.shape[1]):
            s_prev = state.hidden[-1].clone()  # [B,H] the query of step t
            _, alpha, state = model.step(state, tgt_in[:, t])
            for b in range(2):
                want = _expected_alpha(model, s_prev[b], state.values[b], lengths[b], t,
                                       coverage[b] if model.config.coverage else None)
                assert alpha[b].tolist() == pytest.approx(want, abs=1e-5)
                assert alphas[b, t].tolist() == pytest.approx(want, abs=1e-5)
                coverage[b] = [c + a for c, a in zip(coverage[b], want)]
            if model.config.coverage:  # c^{t+1} = sum of the weights so far
                assert state.coverage.tolist() == [pytest.approx(row, abs=1e-5) for row in coverage]
    # padding is never attended; a local window holds at most 2D+1 positions
    assert float(alphas[1, :, lengths[1]:].abs().max()) == 0.0
    if model.config.local != "none":
        assert int((alphas > 0).sum(-1).max()) <= 2 * model.config.local_d + 1


def test_local_m_centre_follows_the_step_and_stops_at_the_last_token():
    model = _model(local="monotonic", local_d=1)
    src, tgt_in = _batch()
    with torch.no_grad():
        _, alphas = model(src, tgt_in, return_alignment=True)
    for t in range(7):
        support = torch.nonzero(alphas[1, t] > 0).flatten().tolist()  # source of length 5
        centre = min(t, 4)
        assert support == [j for j in (centre - 1, centre, centre + 1) if 0 <= j < 5]


def test_local_p_rows_are_softmax_times_gaussian_and_padding_does_not_change_them():
    """The unpadded source alone gives the same weights (p_t uses the true length S)."""
    model = _model(local="predictive", local_d=2)
    src, tgt_in = _batch()
    with torch.no_grad():
        _, padded = model(src, tgt_in, return_alignment=True)
        _, alone = model(src[1:, :5], tgt_in[1:], return_alignment=True)
    torch.testing.assert_close(padded[1, :, :5], alone[0], atol=1e-5, rtol=1e-5)
    assert float(padded.sum(-1).max()) <= 1.0 + 1e-6  # a Gaussian-weighted softmax sums to at most 1


def test_coverage_loss_is_the_sum_of_min_of_attention_and_coverage():
    model = _model(attention="additive", coverage=True)
    src, tgt_in = _batch()
    with torch.no_grad():
        _, alphas, per_step = model(src, tgt_in, return_alignment=True, return_coverage=True)
    for b in range(2):
        running = [0.0] * src.shape[1]
        for t in range(tgt_in.shape[1]):
            a = alphas[b, t].tolist()
            want = sum(min(x, c) for x, c in zip(a, running))
            assert float(per_step[b, t].detach()) == pytest.approx(want, abs=1e-5)
            running = [c + x for c, x in zip(running, a)]
    assert float(per_step[:, 0].abs().max()) == 0.0  # nothing is covered before the first step


def test_training_loss_adds_the_weighted_coverage_loss_over_real_target_tokens():
    model = _model(attention="additive", coverage=True, coverage_weight=0.7)
    src, tgt_in = _batch()
    tgt_out = torch.cat([tgt_in[:, 1:], torch.full((2, 1), EOS)], 1)
    tgt_in[1, 4:], tgt_out[1, 4:] = PAD, PAD  # the second target is shorter
    batch = {"src": src, "tgt_in": tgt_in, "tgt_out": tgt_out}
    loss = get_family("rnn_seq2seq").adapter.loss(model, batch)
    with torch.no_grad():
        logits, per_step = model(src, tgt_in, return_coverage=True)
    ce = F.cross_entropy(logits.flatten(0, 1), tgt_out.flatten(), ignore_index=PAD)
    real = [(b, t) for b in range(2) for t in range(7) if int(tgt_out[b, t]) != PAD]
    cov = sum(float(per_step[b, t]) for b, t in real) / len(real)
    assert loss.item() == pytest.approx(float(ce) + 0.7 * cov, abs=1e-5)
    assert cov > 0
    loss.backward()
    assert model.decoder.attention.w_c.grad is not None and float(model.decoder.attention.w_c.grad.abs().sum()) > 0


@pytest.mark.parametrize("options", [dict(local="predictive", local_d=2, coverage=True),
                                     dict(local="monotonic", local_d=2, coverage=True)])
def test_beam_reorder_carries_the_coverage(options):
    """After reorder(index), every row continues exactly like the row it was copied from."""
    model = _model(**options)
    src, tgt_in = _batch()
    index = torch.tensor([1, 1, 0])
    with torch.no_grad():
        state = model.start(src)
        for t in range(3):
            _, _, state = model.step(state, tgt_in[:, t])
        state.reorder(index)
        assert state.coverage.shape == (3, src.shape[1])
        _, reordered, _ = model.step(state, tgt_in[index, 3])
        ref = model.start(src)
        for t in range(4):
            _, alpha, ref = model.step(ref, tgt_in[:, t])
    torch.testing.assert_close(reordered, alpha[index], atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("values, message", [
    (dict(attention="none", local="monotonic", local_d=2), "model.attention is \"none\""),
    (dict(attention="none", coverage=True), "model.attention is \"none\""),
    (dict(local="predictive"), "local_d from 1"),
    (dict(local="predictive", local_d=10_000), "local_d from 1"),
    (dict(local_d=3), "model.local is \"none\""),
    (dict(local="sideways", local_d=2), "local"),
    (dict(coverage=True, coverage_weight=-1.0), "coverage_weight"),
    (dict(coverage=True, coverage_weight=float("nan")), "coverage_weight"),
])
def test_bad_combinations_say_what_to_change(values, message):
    with pytest.raises(ConfigError, match=message):
        RNNSeq2SeqConfig(vocab_size=V, **values)


def test_uniform_scores_ignore_coverage_and_stay_uniform_in_the_window():
    model = _model(attention="uniform", local="monotonic", local_d=1, coverage=True)
    src, tgt_in = _batch()
    with torch.no_grad():
        _, alphas = model(src, tgt_in, return_alignment=True)
    row = alphas[0, 3]  # window 2..4 of a 9-token source
    assert row.tolist() == pytest.approx([0, 0, 1 / 3, 1 / 3, 1 / 3, 0, 0, 0, 0], abs=1e-6)


def test_parameter_count_includes_the_new_weights():
    sizes = get_family("rnn_seq2seq").sizes
    for options in OPTIONS:
        model = _model(**options)
        assert sizes.count_parameters(model.config) == sum(p.numel() for p in model.parameters())


def test_bf16_autocast_keeps_positions_and_coverage_in_float32():
    """The GPU path (bf16 autocast), run on the CPU: the window centre, Gaussian and coverage
    vector stay float32, and the weights stay close to the fp32 ones."""
    model = _model(local="predictive", local_d=2, coverage=True)
    src, tgt_in = _batch()
    with torch.no_grad():
        _, want = model(src, tgt_in, return_alignment=True)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            _, got = model(src, tgt_in, return_alignment=True)
            state = model.start(src)
            _, _, state = model.step(state, tgt_in[:, 0])
    assert state.coverage.dtype == torch.float32
    assert torch.isfinite(got).all()
    assert float((got.float() - want).abs().max()) < 0.05
    assert float(got[1, :, 5:].abs().max()) == 0.0  # padding still gets nothing
