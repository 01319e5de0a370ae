"""Incremental decoding gives the logits of full recomputation (GPT, Transformer, RNN)."""

from __future__ import annotations

import pytest
import torch

from playground.errors import PlaygroundError
from playground.models.gpt import GPT, GPTConfig
from playground.families import build_model

from .conftest import TINY_CONFIGS, make_batch


@pytest.mark.parametrize("pos", ["learned", "sinusoidal", "rope", "alibi", "none"])
@pytest.mark.parametrize("placement", ["pre", "post"])
def test_gpt_cache_matches_full_recomputation(pos: str, placement: str) -> None:
    model = GPT(GPTConfig(vocab_size=23, block_size=16, n_layer=2, n_head=2, d_model=16,
                          pos_encoding=pos, norm_placement=placement)).eval()
    (idx,), _ = make_batch("gpt")
    full = model(idx)
    cache = model.new_cache()
    chunks = [model(idx[:, :4], cache), model(idx[:, 4:7], cache)]  # prefill, then a chunk
    chunks += [model(idx[:, t : t + 1], cache) for t in range(7, 10)]  # one token at a time
    assert cache.length == 10
    assert torch.allclose(torch.cat(chunks, 1), full, atol=1e-5)
    assert torch.allclose(model(idx, last_only=True), full[:, -1:], atol=1e-6)


def test_gpt_cache_reorder_crop_and_limits() -> None:
    model = GPT(GPTConfig(vocab_size=23, block_size=8, n_layer=1, n_head=2, d_model=16)).eval()
    (idx,), _ = make_batch("gpt")
    idx = idx[:, :6]
    cache = model.new_cache()
    model(idx[:, :5], cache)
    index = torch.tensor([2, 2, 0])
    cache.reorder(index)
    step = model(idx[index, 5:6], cache)
    assert torch.allclose(step, model(idx[index])[:, 5:6], atol=1e-5)
    cache.crop(3)
    assert torch.allclose(model(idx[index, 3:4], cache), model(idx[index, :4])[:, 3:4], atol=1e-5)
    with pytest.raises(PlaygroundError, match="context of 8"):
        model(idx, cache)  # 4 cached + 6 > 8
    with pytest.raises(PlaygroundError):
        model(torch.zeros(1, 9, dtype=torch.long))


@pytest.mark.parametrize("family", ["transformer_seq2seq", "rnn_seq2seq"])
@pytest.mark.parametrize("variant", [{}, {"lstm_or_pre": True}])
def test_seq2seq_step_matches_teacher_forcing(family: str, variant: dict) -> None:
    cfg = dict(TINY_CONFIGS[family])
    if variant:
        cfg.update({"cell": "lstm", "n_layers": 2} if family == "rnn_seq2seq" else {"norm_placement": "pre", "pos_encoding": "rope"})
    model = build_model(family, cfg).eval()
    (src, tgt_in), _ = make_batch(family)
    full, alignment = model(src, tgt_in, return_alignment=True)
    state = model.start(src)
    steps, aligns = [], []
    for t in range(tgt_in.shape[1]):
        logits, align, state = model.step(state, tgt_in[:, t])
        steps.append(logits)
        aligns.append(align)
    assert torch.allclose(torch.stack(steps, 1), full, atol=1e-5)
    assert torch.allclose(torch.stack(aligns, 1), alignment, atol=1e-6)
    assert alignment.shape == (3, 6, 7)
    assert torch.allclose(alignment.sum(-1), torch.ones(3, 6), atol=1e-5)
    assert torch.all(alignment[0, :, 5:] == 0)  # source padding gets no attention


@pytest.mark.parametrize("family", ["transformer_seq2seq", "rnn_seq2seq"])
def test_seq2seq_state_reorder_for_beam_search(family: str) -> None:
    model = build_model(family, TINY_CONFIGS[family]).eval()
    (src, tgt_in), _ = make_batch(family)
    index = torch.tensor([1, 1, 0])
    state = model.start(src)
    for t in range(3):
        _, _, state = model.step(state, tgt_in[:, t])
    state.reorder(index)
    logits, _, _ = model.step(state, tgt_in[index, 3])
    assert torch.allclose(logits, model(src[index], tgt_in[index, :4])[:, 3], atol=1e-5)


def test_rnn_without_attention_only_sees_the_final_encoder_state() -> None:
    model = build_model("rnn_seq2seq", {**TINY_CONFIGS["rnn_seq2seq"], "attention": "none", "bidirectional": False}).eval()
    (src, tgt_in), _ = make_batch("rnn_seq2seq")
    logits, alignment = model(src, tgt_in, return_alignment=True)
    assert torch.all(alignment == 0)
    state = model.start(src)
    last = (src != 0).sum(1) - 1  # a one-way GRU's final state is its output at the last real token
    assert torch.allclose(state.summary, state.values[torch.arange(3), last], atol=1e-6)
    # the decoder depends on the source only through the final state: same final state, same output
    state_a = model.start(src)
    state_b = model.start(src)
    state_b.values = torch.randn_like(state_b.values)  # encoder states other than the summary are unused
    out_a, _, _ = model.step(state_a, tgt_in[:, 0])
    out_b, _, _ = model.step(state_b, tgt_in[:, 0])
    assert torch.equal(out_a, out_b)
