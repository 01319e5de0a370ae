"""Reading and replacing attention: names, shapes, overrides, gradients, cleanup, threads."""

from __future__ import annotations

import contextvars
import threading

import pytest
import torch

from playground.errors import PlaygroundError
from playground.models.attention import (
    attention_modules,
    logits_override,
    override_attention,
    permute_override,
    record_attention,
    rows_override,
    uniform_override,
)
from playground.models.gpt import GPT, GPTConfig
from playground.models.hooks import _SESSIONS
from playground.families import build_model

from .conftest import TINY_CONFIGS, make_batch


def tiny_gpt() -> GPT:
    """A tiny GPT whose attention is far from uniform (fresh GPT-2 init is nearly uniform)."""
    model = GPT(GPTConfig(vocab_size=23, block_size=16, n_layer=2, n_head=2, d_model=16)).eval()
    with torch.no_grad():
        for block in model.blocks:
            block.attn.qkv.weight.mul_(30)
            block.attn.out_proj.weight.mul_(30)
    return model


def test_names_follow_module_paths() -> None:
    assert sorted(attention_modules(tiny_gpt())) == ["blocks.0.attn", "blocks.1.attn"]
    seq = build_model("transformer_seq2seq", TINY_CONFIGS["transformer_seq2seq"])
    assert sorted(attention_modules(seq)) == [
        "decoder.blocks.0.cross_attn", "decoder.blocks.0.self_attn", "decoder.blocks.1.cross_attn",
        "decoder.blocks.1.self_attn", "encoder.blocks.0.attn", "encoder.blocks.1.attn",
    ]
    assert list(attention_modules(build_model("rnn_seq2seq", TINY_CONFIGS["rnn_seq2seq"]))) == ["decoder.attention"]


def test_overriding_with_own_weights_changes_nothing_uniform_does() -> None:
    model = tiny_gpt()
    (idx,), _ = make_batch("gpt")
    with record_attention(model) as maps:
        base = model(idx)
    own = {name: (lambda w, q0, m=maps[name]: m) for name in maps}
    with override_attention(model, own):
        assert torch.allclose(model(idx), base, atol=1e-6)
    with override_attention(model, {"blocks.0.attn": uniform_override()}), record_attention(model) as after:
        changed = model(idx)
    assert (changed - base).abs().max() > 1e-2
    w = after["blocks.0.attn"]  # causal uniform: row q has weight 1/(q+1) on keys 0..q
    expected = torch.tril(torch.ones(10, 10)) / torch.arange(1, 11)[:, None]
    assert torch.allclose(w[0, 0], expected, atol=1e-6)
    assert torch.equal(after["blocks.1.attn"].sum(-1).round(), torch.ones(3, 2, 10))


def test_override_rows_and_heads_only() -> None:
    model = tiny_gpt()
    (idx,), _ = make_batch("gpt")
    with record_attention(model) as before:
        model(idx)
    target = torch.zeros(10)
    target[2] = 1.0
    fn = rows_override({5: target}, heads=[1])
    with override_attention(model, {"blocks.1.attn": fn}), record_attention(model) as after:
        model(idx)
    b, a = before["blocks.1.attn"], after["blocks.1.attn"]
    assert torch.equal(a[:, 1, 5], target.expand(3, 10))
    assert torch.allclose(a[:, 0], b[:, 0]) and torch.allclose(a[:, 1, :5], b[:, 1, :5])


def test_permute_override_permutes_keys() -> None:
    model = tiny_gpt()
    (idx,), _ = make_batch("gpt")
    perm = torch.arange(9, -1, -1)
    with record_attention(model) as before:
        model(idx)
    with override_attention(model, {"blocks.0.attn": permute_override(perm, rows=[9])}), record_attention(model) as after:
        model(idx)
    assert torch.allclose(after["blocks.0.attn"][:, :, 9], before["blocks.0.attn"][:, :, 9].flip(-1))


def test_gradients_flow_into_learnable_logits() -> None:
    model = build_model("rnn_seq2seq", TINY_CONFIGS["rnn_seq2seq"]).eval()
    (src, tgt_in), _ = make_batch("rnn_seq2seq")
    logits = torch.zeros(3, 1, 1, 7, requires_grad=True)
    with override_attention(model, {"decoder.attention": logits_override(logits, rows=[2])}), \
            record_attention(model) as maps:
        out = model(src, tgt_in)
    out[:, 2].logsumexp(-1).sum().backward()
    assert logits.grad is not None and logits.grad.abs().sum() > 0
    alpha = maps["decoder.attention"]  # [B,1,T,S]
    assert torch.allclose(alpha[1, 0, 2], torch.full((7,), 1 / 7))  # zero logits: uniform
    assert torch.allclose(alpha[0, 0, 2, :5], torch.full((5,), 1 / 5)) and torch.all(alpha[0, 0, 2, 5:] == 0)


def test_keep_grad_keeps_maps_in_the_graph() -> None:
    model = tiny_gpt()
    (idx,), _ = make_batch("gpt")
    with record_attention(model, keep_grad=True) as maps:
        model(idx)[:, -1].sum().backward()
    assert maps["blocks.0.attn"].requires_grad
    with record_attention(model) as plain:
        model(idx)
    assert not plain["blocks.0.attn"].requires_grad


def test_state_is_removed_after_an_exception() -> None:
    model = tiny_gpt()
    (idx,), _ = make_batch("gpt")
    hooks_before = [len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules()]
    with pytest.raises(RuntimeError, match="boom"):
        with override_attention(model, {"blocks.0.attn": uniform_override()}), record_attention(model):
            model(idx)
            raise RuntimeError("boom")
    assert _SESSIONS.get() == ()
    assert [len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules()] == hooks_before
    with record_attention(model) as maps:  # and everything still works
        model(idx)
    assert set(maps) == {"blocks.0.attn", "blocks.1.attn"}


def test_bad_override_is_reported_and_cleaned_up() -> None:
    model = tiny_gpt()
    (idx,), _ = make_batch("gpt")
    with pytest.raises(PlaygroundError, match="blocks.0.attn"):
        with override_attention(model, {"blocks.9.attn": uniform_override()}):
            pass
    with pytest.raises(PlaygroundError, match="shape"):
        with override_attention(model, {"blocks.0.attn": lambda w, q0: w[..., :1]}):
            model(idx)
    assert _SESSIONS.get() == ()


def test_recording_is_per_thread_and_per_model() -> None:
    model, other = tiny_gpt(), tiny_gpt()
    (idx,), _ = make_batch("gpt")
    started, release = threading.Event(), threading.Event()

    def other_thread() -> None:
        started.wait()
        model(idx)  # the same shared model in another thread while the recorder is open
        release.set()

    t = threading.Thread(target=other_thread)
    t.start()
    with record_attention(model) as maps:
        started.set()
        release.wait(timeout=30)
        other(idx)  # a different model in this thread
    t.join()
    assert len(maps) == 0
    with record_attention(model) as maps:
        model(idx)
    assert maps["blocks.0.attn"].shape == (3, 2, 10, 10)


def test_incremental_decoding_concatenates_along_query() -> None:
    model = tiny_gpt()
    (idx,), _ = make_batch("gpt")
    with record_attention(model) as full:
        model(idx)
    cache = model.new_cache()
    with record_attention(model) as inc:
        model(idx[:, :4], cache)
        for t in range(4, 10):
            model(idx[:, t : t + 1], cache)
    assert inc["blocks.1.attn"].shape == (3, 2, 10, 10)
    assert torch.allclose(inc["blocks.1.attn"], full["blocks.1.attn"], atol=1e-6)


def test_override_q_start_is_absolute_when_decoding() -> None:
    model = tiny_gpt()
    (idx,), _ = make_batch("gpt")
    seen: list[tuple[int, int]] = []

    def spy(w: torch.Tensor, q_start: int) -> torch.Tensor:
        seen.append((q_start, w.shape[2]))
        return w

    cache = model.new_cache()
    with override_attention(model, {"blocks.0.attn": spy}):
        model(idx[:, :4], cache)
        model(idx[:, 4:5], cache)
        model(idx[:, 5:6], cache)
    assert seen == [(0, 4), (4, 1), (5, 1)]


def test_a_context_closed_in_another_context_does_not_raise_or_leak() -> None:
    """A generator resumed in a different context (as Gradio does per step) exits cleanly."""
    model = tiny_gpt()

    def gen():
        with record_attention(model):
            yield 1
        yield 2

    g = gen()
    assert contextvars.copy_context().run(next, g) == 1
    assert contextvars.copy_context().run(next, g) == 2
    assert _SESSIONS.get() == ()
