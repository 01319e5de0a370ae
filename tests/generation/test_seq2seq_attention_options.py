"""Decoding an RNN seq2seq with Luong's local window or See et al.'s coverage (#17): greedy and
beam search carry the new state (coverage vector, window centre) so their outputs, scores and
alignments are those of a teacher-forced forward; the repeated/dropped view decodes the same."""
from __future__ import annotations

import functools
import random

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from playground.analysis.coverage import attention_coverage, greedy_with_attention
from playground.generation import GenerateRequest, beam_search, generate
from playground.generation.seq2seq import greedy_decode, length_penalty
from tests.generation.conftest import PAIR_ALPHABET

OPTIONS = {
    "local-p+coverage": dict(attention="general", local="predictive", local_d=2, coverage=True),
    "local-m": dict(attention="dot", local="monotonic", local_d=1),
    "additive+coverage": dict(attention="additive", coverage=True, coverage_weight=0.5),
}
SOURCES = ["abc", "hgfedc", "a1b2c3d", "jj"]


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """The machine is shared: one torch thread is faster than two fighting for the cores."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@functools.cache
def _trained(kind: str) -> tuple[dict, dict]:
    """A tiny RNN with the option, trained 40 steps to copy strings (its outputs follow the source)."""
    from playground.models.rnn_seq2seq import RNNSeq2Seq, RNNSeq2SeqConfig
    from playground.tokenization.simple import build_char_tokenizer, special_ids

    tok = build_char_tokenizer([PAIR_ALPHABET])
    ids = special_ids(tok)
    cfg = RNNSeq2SeqConfig(vocab_size=tok.get_vocab_size(), pad_id=ids["pad_id"], bos_id=ids["bos_id"],
                           eos_id=ids["eos_id"], emb_dim=16, hidden=32, **OPTIONS[kind])
    torch.manual_seed(0)
    model = RNNSeq2Seq(cfg)
    opt = torch.optim.Adam(model.parameters(), 1e-2)
    rng = random.Random(0)
    pad = ids["pad_id"]
    for _ in range(40):
        srcs = ["".join(rng.choice("abcdefghij") for _ in range(rng.randint(2, 7))) for _ in range(16)]
        S = max(map(len, srcs))
        src, tgt_in, tgt_out = (torch.full((16, n), pad) for n in (S, S + 1, S + 1))
        for i, s in enumerate(srcs):
            a = tok.encode(s).ids
            src[i, : len(a)] = torch.tensor(a)
            tgt_in[i, : len(a) + 1] = torch.tensor([ids["bos_id"], *a])
            tgt_out[i, : len(a) + 1] = torch.tensor([*a, ids["eos_id"]])
        loss = F.cross_entropy(model(src, tgt_in).flatten(0, 1), tgt_out.flatten(), ignore_index=pad)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {k: v.detach().clone() for k, v in model.state_dict().items()}, cfg.to_dict()


@pytest.fixture(params=list(OPTIONS))
def bundle(request, workspace):
    from playground.bundle import load_bundle, save_bundle
    from playground.models.rnn_seq2seq import RNNSeq2Seq, RNNSeq2SeqConfig
    from playground.tokenization.simple import build_char_tokenizer

    state, cfg_dict = _trained(request.param)
    cfg = RNNSeq2SeqConfig.from_dict(cfg_dict)
    model = RNNSeq2Seq(cfg)
    model.load_state_dict(state)
    save_bundle(workspace, "tiny-rnn-option", model, "rnn_seq2seq", cfg, tokenizer=build_char_tokenizer([PAIR_ALPHABET]))
    return load_bundle("tiny-rnn-option", workspace)


def _teacher_forced(model, src: list[int], steps: list[int], bos: int) -> tuple[float, np.ndarray]:
    with torch.no_grad():
        logits, align = model(torch.tensor([src]), torch.tensor([[bos, *steps[:-1]]]), return_alignment=True)
    logp = logits.log_softmax(-1)[0, torch.arange(len(steps)), torch.tensor(steps)]
    return float(logp.sum()), align[0].numpy()


def test_greedy_and_beam_match_teacher_forcing(bundle):
    model, cfg = bundle.model, bundle.model_config
    ended = 0
    for source in SOURCES:
        src = bundle.tokenizer.encode(source).ids
        greedy = generate(bundle, GenerateRequest(prompt=source, max_new_tokens=12)).samples[0]
        steps = [e.token_id for e in greedy.events]
        ended += steps[-1] == cfg.eos_id
        logprob, align = _teacher_forced(model, src, steps, cfg.bos_id)
        assert greedy.score == pytest.approx(logprob, abs=1e-4)
        np.testing.assert_allclose(greedy.alignment, align, atol=1e-5)  # the window's zeros included
        beam = beam_search(model, bundle.tokenizer, src, beam_width=3, alpha=0.6, max_new_tokens=12)
        best = beam.samples[0]
        b_steps = [e.token_id for e in best.events]
        b_logprob, b_align = _teacher_forced(model, src, b_steps, cfg.bos_id)
        assert beam.info["logprob"] == pytest.approx(b_logprob, abs=1e-4)  # reorder kept each beam's coverage
        assert best.score == pytest.approx(b_logprob / length_penalty(len(b_steps), 0.6), abs=1e-4)
        np.testing.assert_allclose(best.alignment, b_align, atol=1e-5)
    assert ended >= 2  # trained: the outputs end


def test_window_shows_in_the_alignment(bundle):
    """A window leaves at most 2D+1 nonzero weights per row (local-p's Gaussian: rows below 1);
    without one the rows are the softmax's distributions."""
    cfg = bundle.model_config
    sample = generate(bundle, GenerateRequest(prompt="a1b2c3d4e5", max_new_tokens=12)).samples[0]
    if cfg.local == "none":
        np.testing.assert_allclose(sample.alignment.sum(-1), 1.0, atol=1e-5)
    else:
        assert ((sample.alignment > 0).sum(-1) <= 2 * cfg.local_d + 1).all()
        assert (sample.alignment.sum(-1) <= 1.0 + 1e-5).all()


def test_view_decodes_like_the_trainer(bundle):
    model, cfg = bundle.model, bundle.model_config
    sources = [bundle.tokenizer.encode(s).ids for s in SOURCES]
    src = torch.full((len(sources), max(map(len, sources))), cfg.pad_id)
    for i, s in enumerate(sources):
        src[i, : len(s)] = torch.tensor(s)
    outputs, rows = greedy_with_attention(model, src, cfg.bos_id, cfg.eos_id, 12)
    assert outputs == greedy_decode(model, src, cfg.bos_id, cfg.eos_id, 12)
    for s, out, r in zip(sources, outputs, rows):
        steps = out + [cfg.eos_id] if r.shape[0] == len(out) + 1 else out
        _, align = _teacher_forced(model, s, steps, cfg.bos_id)
        np.testing.assert_allclose(r[:, : len(s)].numpy(), align, atol=1e-5)
        assert float(r[:, len(s):].abs().sum()) == 0.0  # padding gets nothing
    counts = attention_coverage(model, sources, sources, pad_id=cfg.pad_id, bos_id=cfg.bos_id, eos_id=cfg.eos_id)
    assert [e.output for e in counts.examples] == greedy_decode(model, src, cfg.bos_id, cfg.eos_id, 12)
    assert counts.output_steps == sum(r.shape[0] for r in rows)
