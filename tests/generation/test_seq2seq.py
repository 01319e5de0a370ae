"""Seq2seq decoding (RNN and Transformer): greedy, beam search, alignments, input errors."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from playground.errors import ConfigError, DataError
from playground.generation import GenerateRequest, beam_search, generate, stream
from playground.generation.events import Done, StepEvent
from playground.generation.seq2seq import length_penalty, stream_greedy

SOURCES = ["abc", "jihgf", "abcdefgh", "a1b2"]


def _src(bundle, text: str) -> list[int]:
    return bundle.tokenizer.encode(text).ids


def teacher_forced(model, src: list[int], out_ids: list[int], bos: int):
    """Log-probability of out_ids and the alignment [T,S] from one teacher-forced forward."""
    tgt_in = torch.tensor([[bos, *out_ids[:-1]]])
    with torch.no_grad():
        logits, align = model(torch.tensor([src]), tgt_in, return_alignment=True)
    logp = logits.log_softmax(-1)[0, torch.arange(len(out_ids)), torch.tensor(out_ids)]
    return float(logp.sum()), align[0].numpy()


@pytest.mark.parametrize("source", SOURCES)
def test_greedy_matches_teacher_forcing(seq2seq_bundle, source):
    model, cfg = seq2seq_bundle.model, seq2seq_bundle.model_config
    src = _src(seq2seq_bundle, source)
    done = generate(seq2seq_bundle, GenerateRequest(prompt=source, max_new_tokens=12))
    sample = done.samples[0]
    steps = [e.token_id for e in sample.events]  # the <eos> step included when reached
    assert len(steps) >= 1
    # each step is the argmax given the previous ones (teacher forcing on the greedy output)
    with torch.no_grad():
        logits = model(torch.tensor([src]), torch.tensor([[cfg.bos_id, *steps[:-1]]]))
    assert logits[0].argmax(-1).tolist() == steps
    logprob, align = teacher_forced(model, src, steps, cfg.bos_id)
    assert sample.score == pytest.approx(logprob, abs=1e-4)
    assert sample.alignment.shape == (len(steps), len(src))
    np.testing.assert_allclose(sample.alignment, align, atol=1e-5)
    np.testing.assert_allclose(sample.alignment.sum(-1), 1.0, atol=1e-5)  # attention rows are distributions
    assert sample.source_tokens == list(source)
    assert len(sample.target_tokens) == len(steps)


@pytest.mark.parametrize("source", SOURCES)
def test_beam_width_one_equals_greedy(seq2seq_bundle, source):
    greedy = generate(seq2seq_bundle, GenerateRequest(prompt=source, max_new_tokens=12)).samples[0]
    beam = beam_search(seq2seq_bundle.model, seq2seq_bundle.tokenizer, _src(seq2seq_bundle, source),
                       beam_width=1, max_new_tokens=12).samples[0]
    assert beam.ids == greedy.ids
    assert beam.stop_reason == greedy.stop_reason
    np.testing.assert_allclose(beam.alignment, greedy.alignment, atol=1e-6)
    assert beam.score == pytest.approx(greedy.score, abs=1e-4)


@pytest.mark.parametrize("alpha", [0.0, 0.8])
def test_beam_search_scores_and_alignment_are_those_of_its_output(seq2seq_bundle, alpha):
    model, cfg = seq2seq_bundle.model, seq2seq_bundle.model_config
    src = _src(seq2seq_bundle, "abc-123")
    done = beam_search(model, seq2seq_bundle.tokenizer, src, beam_width=4, alpha=alpha, max_new_tokens=10)
    best = done.samples[0]
    steps = [e.token_id for e in best.events]
    logprob, align = teacher_forced(model, src, steps, cfg.bos_id)
    assert done.info["logprob"] == pytest.approx(logprob, abs=1e-4)
    assert best.score == pytest.approx(logprob / length_penalty(len(steps), alpha), abs=1e-4)
    np.testing.assert_allclose(best.alignment, align, atol=1e-5)
    # the returned hypothesis ranks first among the finished ones
    scores = [h["score"] for h in done.info["hypotheses"]]
    assert scores == sorted(scores, reverse=True) and scores[0] == pytest.approx(best.score)
    # per-token probabilities are the model's (teacher-forced) ones
    with torch.no_grad():
        probs = model(torch.tensor([src]), torch.tensor([[cfg.bos_id, *steps[:-1]]]))[0].softmax(-1)
    assert [e.prob for e in best.events] == pytest.approx(probs[torch.arange(len(steps)), torch.tensor(steps)].tolist(), rel=1e-4)


def test_wide_beam_is_at_least_as_likely_as_greedy(seq2seq_bundle):
    """With alpha = 0 and a wide beam, the result's log-probability is no worse than greedy's
    (deterministic for these fixed weights; beam search is not exact in general)."""
    ended = 0
    for source in SOURCES:
        src = _src(seq2seq_bundle, source)
        greedy = generate(seq2seq_bundle, GenerateRequest(prompt=source, max_new_tokens=10)).samples[0]
        wide = beam_search(seq2seq_bundle.model, seq2seq_bundle.tokenizer, src, beam_width=8, max_new_tokens=10)
        ended += greedy.stop_reason == "eos"
        assert wide.info["logprob"] >= greedy.score - 1e-5
    assert ended >= 2  # the trained fixture does end its outputs


def test_length_penalty_values():
    assert length_penalty(1, 0.0) == 1.0
    assert length_penalty(7, 1.0) == pytest.approx(2.0)
    assert length_penalty(13, 0.5) == pytest.approx(math.sqrt(3.0))


def test_stream_yields_steps_then_done(seq2seq_bundle):
    events = list(stream(seq2seq_bundle, GenerateRequest(prompt="abc", max_new_tokens=5)))
    assert all(isinstance(e, StepEvent) for e in events[:-1]) and isinstance(events[-1], Done)
    assert len(events) - 1 == events[-1].samples[0].alignment.shape[0]
    beam = list(stream(seq2seq_bundle, GenerateRequest(prompt="abc", max_new_tokens=5, beam_width=3)))
    assert isinstance(beam[-1], Done) and beam[-1].info["decoder"] == "beam"


def test_source_errors(seq2seq_bundle):
    with pytest.raises(DataError) as err:
        generate(seq2seq_bundle, GenerateRequest(prompt="abcXYZ!", max_new_tokens=5))
    assert "'X'" in str(err.value) and "'!'" in str(err.value)
    with pytest.raises(DataError, match="empty"):
        generate(seq2seq_bundle, GenerateRequest(prompt="  ", max_new_tokens=5))
    with pytest.raises(ConfigError, match="beam width"):
        beam_search(seq2seq_bundle.model, seq2seq_bundle.tokenizer, [5, 6], beam_width=0)


def test_transformer_source_longer_than_max_len_is_refused(workspace):
    from tests.generation.conftest import _seq2seq_bundle

    bundle = _seq2seq_bundle(workspace, "transformer_seq2seq", "t-long")
    with pytest.raises(DataError, match="at most 24"):
        generate(bundle, GenerateRequest(prompt="a" * 30, max_new_tokens=5))
    # the output is capped at max_len steps instead of crashing
    done = list(stream_greedy(bundle.model, bundle.tokenizer, [5, 6, 7], max_new_tokens=500))[-1]
    assert len(done.samples[0].events) <= 24


def test_word_level_pieces_join_to_the_output(workspace):
    """With a word vocabulary the streamed pieces carry the spaces, so they read as the output."""
    from playground.bundle import load_bundle, save_bundle
    from playground.models.rnn_seq2seq import RNNSeq2Seq, RNNSeq2SeqConfig
    from playground.tokenization.simple import build_word_tokenizer, special_ids

    tok = build_word_tokenizer(["le chat noir dort the black cat sleeps"])
    ids = special_ids(tok)
    cfg = RNNSeq2SeqConfig(vocab_size=tok.get_vocab_size(), pad_id=ids["pad_id"], bos_id=ids["bos_id"],
                           eos_id=ids["eos_id"], emb_dim=8, hidden=8)
    torch.manual_seed(0)
    save_bundle(workspace, "words", RNNSeq2Seq(cfg), "rnn_seq2seq", cfg, tokenizer=tok)
    bundle = load_bundle("words", workspace)
    for width in (1, 3):
        sample = generate(bundle, GenerateRequest(prompt="the black cat", max_new_tokens=6, beam_width=width)).samples[0]
        words = [e for e in sample.events if not e.stopped]
        assert "".join(e.text for e in words) == sample.text
        if len(words) > 1:
            assert words[1].text.startswith(" ")
