"""The model options the claims need: blocks without residuals, GPT evaluated past block_size."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from playground.errors import ConfigError, PlaygroundError
from playground.models.gpt import GPT, GPTConfig
from playground.models.layers import EncoderBlock
from playground.models.positional import PositionalEmbedding, Rotary


def _gpt(pos: str, **kw) -> GPT:
    torch.manual_seed(0)
    return GPT(GPTConfig(vocab_size=11, block_size=8, n_layer=2, n_head=2, d_model=16, pos_encoding=pos, **kw)).eval()


@pytest.mark.parametrize("placement", ["pre", "post"])
def test_block_without_residual_chains_the_sublayers(placement):
    torch.manual_seed(0)
    block = EncoderBlock(8, 2, 16, causal=True, norm_placement=placement, residual=False).eval()
    x = torch.randn(2, 5, 8)  # [B,T,D]
    attn = lambda h: block.attn(h)[0]
    if placement == "pre":
        want = block.mlp(block.ln2(attn(block.ln1(x))))
    else:
        want = block.ln2(block.mlp(block.ln1(attn(x))))
    torch.testing.assert_close(block(x), want)


def test_block_with_residual_is_unchanged_by_default():
    torch.manual_seed(0)
    block = EncoderBlock(8, 2, 16, causal=True).eval()
    x = torch.randn(2, 5, 8)
    h = x + block.attn(block.ln1(x))[0]
    torch.testing.assert_close(block(x), h + block.mlp(block.ln2(h)))
    assert GPTConfig().residual is True


def test_residual_option_is_validated():
    with pytest.raises(ConfigError, match="residual"):
        GPTConfig(residual="no")


def test_gpt_without_residual_trains_a_step():
    model = _gpt("learned", residual=False).train()
    idx = torch.randint(0, 11, (3, 8))
    loss = torch.nn.functional.cross_entropy(model(idx).flatten(0, 1), idx.flatten())
    loss.backward()
    assert all(p.grad is not None for p in model.parameters())
    assert all(not b.residual for b in model.blocks)


def test_extended_sinusoidal_table_equals_the_formula():
    emb = PositionalEmbedding("sinusoidal", 8, 6)
    got = emb(12, offset=4).numpy()  # positions 4..15, past the 8-row table
    pos = np.arange(4, 16)[:, None]
    i = np.arange(0, 6, 2)[None, :]
    angle = pos / 10000 ** (i / 6)
    want = np.empty((12, 6))
    want[:, 0::2], want[:, 1::2] = np.sin(angle), np.cos(angle)
    np.testing.assert_allclose(got, want, atol=1e-6)


def test_rotary_past_its_table_equals_a_longer_table():
    short, long = Rotary(4, 8), Rotary(4, 20)
    x = torch.randn(1, 2, 20, 4)
    torch.testing.assert_close(short(x), long(x))
    torch.testing.assert_close(short(x[:, :, :6], offset=14), long(x[:, :, :6], offset=14))
    assert math.isclose(float(long.cos[19, 0]), math.cos(19.0), rel_tol=1e-6)


@pytest.mark.parametrize("pos", ["sinusoidal", "rope", "alibi", "none"])
def test_forward_beyond_keeps_the_first_block_causal(pos):
    model = _gpt(pos)
    idx = torch.randint(0, 11, (2, 24))  # 3 x block_size
    with torch.no_grad():
        long = model.forward_beyond(idx)  # [2,24,V]
        short = model(idx[:, :8])
    assert long.shape == (2, 24, 11) and torch.isfinite(long).all()
    torch.testing.assert_close(long[:, :8], short, atol=1e-5, rtol=1e-5)
    assert model.extrapolates


def test_learned_positions_refuse_past_block_size_and_say_why():
    model = _gpt("learned")
    assert not model.extrapolates
    with pytest.raises(PlaygroundError, match="never trained"):
        model.forward_beyond(torch.zeros(1, 9, dtype=torch.long))
    with pytest.raises(PlaygroundError, match="no trained vector|none for position"):
        model.pos_emb(9)
    with torch.no_grad():  # within block_size it is the ordinary forward
        torch.testing.assert_close(model.forward_beyond(torch.ones(1, 8, dtype=torch.long)),
                                   model(torch.ones(1, 8, dtype=torch.long)))


def test_forward_still_refuses_past_block_size():
    with pytest.raises(PlaygroundError, match="do not fit"):
        _gpt("rope")(torch.zeros(1, 9, dtype=torch.long))


def test_scaled_embeddings_multiply_by_sqrt_d_model_and_start_at_unit_variance():
    from playground.models.export_hf import check_gpt2_compatible

    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=50, block_size=8, n_layer=1, n_head=2, d_model=64, scale_embeddings=True))
    model.init_family_weights(torch.Generator().manual_seed(0))
    idx = torch.arange(8)[None]
    torch.testing.assert_close(model._tokens(idx), model.tok_emb(idx) * 8.0)
    assert abs(float(model.tok_emb.weight.detach().std()) - 64**-0.5) < 0.02
    assert GPTConfig().scale_embeddings is False
    with pytest.raises(ConfigError, match="scale_embeddings"):
        check_gpt2_compatible(model.config)
    with pytest.raises(ConfigError, match="residual"):
        check_gpt2_compatible(GPTConfig(residual=False))


def test_init_std_sets_the_weights_spread_and_must_be_positive():
    model = GPT(GPTConfig(vocab_size=50, block_size=8, n_layer=1, n_head=2, d_model=128, init_std=128**-0.5))
    model.init_family_weights(torch.Generator().manual_seed(0))
    assert abs(float(model.blocks[0].attn.qkv.weight.detach().std()) - 128**-0.5) < 0.005
    assert GPTConfig().init_std == 0.02
    with pytest.raises(ConfigError, match="init_std"):
        GPTConfig(init_std=0.0)
