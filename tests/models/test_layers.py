"""Blocks: parameter counts, permutation equivariance, causality, norm placement, FFN kinds."""

from __future__ import annotations

import pytest
import torch

from playground.models.attention import MultiHeadAttention
from playground.models.gpt import GPT, GPTConfig
from playground.models.layers import EncoderBlock, FeedForward
from playground.models.positional import sinusoidal_table


def n_params(m: torch.nn.Module) -> int:
    return sum(p.numel() for p in m.parameters())


def test_encoder_block_parameter_count() -> None:
    block = EncoderBlock(512, 8, 2048, attn_bias=False, ffn_bias=True, norm_bias=True, norm_placement="post")
    assert n_params(block) == 3_150_336
    with_attn_bias = EncoderBlock(512, 8, 2048, bias=True)
    assert n_params(with_attn_bias) == 3_150_336 + 4 * 512  # q, k, v and output biases
    no_bias = EncoderBlock(512, 8, 2048, bias=False)
    assert n_params(no_bias) == 3_150_336 - 2048 - 512 - 2 * 512  # FFN biases, LayerNorm biases


def test_ffn_kinds() -> None:
    x = torch.randn(2, 3, 8)
    ff = FeedForward(8, 16, "gelu")
    assert torch.allclose(ff(x), ff.proj(torch.nn.functional.gelu(ff.fc(x), approximate="tanh")))
    swiglu = FeedForward(8, 16, "swiglu")
    gate, up = swiglu.fc(x).chunk(2, -1)
    assert torch.allclose(swiglu(x), swiglu.proj(torch.nn.functional.silu(gate) * up))
    assert n_params(swiglu) == 8 * 32 + 32 + 16 * 8 + 8


def test_self_attention_is_permutation_equivariant_without_positions() -> None:
    attn = MultiHeadAttention(16, 2).eval()
    x, perm = torch.randn(1, 7, 16), torch.randperm(7)
    out = attn(x)[0]
    assert torch.allclose(attn(x[:, perm])[0], out[:, perm], atol=1e-5)
    pe = sinusoidal_table(7, 16)
    with_pe = attn(x + pe)[0]
    assert not torch.allclose(attn(x[:, perm] + pe)[0], with_pe[:, perm], atol=1e-3)


@pytest.mark.parametrize("pos", ["learned", "rope", "alibi"])
def test_causal_gradient_is_exactly_zero_for_future_inputs(pos: str) -> None:
    model = GPT(GPTConfig(vocab_size=11, block_size=8, n_layer=2, n_head=2, d_model=16, pos_encoding=pos))
    emb = torch.randn(1, 6, 16, requires_grad=True)
    handle = model.tok_emb.register_forward_hook(lambda m, i, o: emb)  # differentiate w.r.t. inputs
    logits = model(torch.zeros(1, 6, dtype=torch.long))
    handle.remove()
    for i in range(6):
        (grad,) = torch.autograd.grad(logits[0, i].sum(), emb, retain_graph=True)
        assert torch.all(grad[0, i + 1 :] == 0)
        assert grad[0, : i + 1].abs().sum() > 0


def test_post_ln_normalises_the_block_output() -> None:
    block = EncoderBlock(16, 2, 32, norm_placement="post").eval()
    out = block(torch.randn(2, 5, 16) * 10)
    assert torch.allclose(out.mean(-1), torch.zeros(2, 5), atol=1e-5)
    pre = EncoderBlock(16, 2, 32, norm_placement="pre").eval()
    assert pre(torch.randn(2, 5, 16) * 10).mean(-1).abs().max() > 1e-2
