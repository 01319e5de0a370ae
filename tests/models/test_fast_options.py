"""GPT options of the nanogpt-cpu-fast preset: relu2, qk_norm, tie_embeddings, zero_init.

Each defaults to today's model; each builds, keeps the fast and explicit attention paths equal,
decodes with the KV cache like a full forward, and does what its name says.
"""
from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from playground.errors import ConfigError
from playground.models.attention import MultiHeadAttention, record_attention
from playground.models.export_hf import check_gpt2_compatible
from playground.models.gpt import GPT, GPTConfig
from playground.models.layers import FeedForward

from .conftest import TINY_CONFIGS, make_batch

FAST = {"ffn": "relu2", "qk_norm": True, "tie_embeddings": False, "zero_init": True, "pos_encoding": "rope",
        "bias": False}


def _gpt(**kw) -> GPT:
    torch.manual_seed(0)
    return GPT(GPTConfig(**{**TINY_CONFIGS["gpt"], **kw})).eval()


def test_defaults_are_todays_model():
    c = GPTConfig()
    assert (c.qk_norm, c.tie_embeddings, c.zero_init) == (False, True, False)
    model = _gpt()
    assert model.lm_head.weight is model.tok_emb.weight
    assert not any(m.qk_norm for m in model.modules() if isinstance(m, MultiHeadAttention))


@pytest.mark.parametrize("options", [FAST, {"qk_norm": True}, {"ffn": "relu2"}, {"tie_embeddings": False}])
def test_options_run_paths_agree_and_cache_matches(options):
    model = _gpt(**options)
    for p in model.parameters():  # zero_init: give the zeroed layers values so the paths differ
        if p.abs().sum() == 0 and p.dim() == 2:
            torch.nn.init.normal_(p, std=0.1)
    (idx,), _ = make_batch("gpt")
    fast = model(idx)
    assert fast.shape == (*idx.shape, TINY_CONFIGS["gpt"]["vocab_size"])
    with record_attention(model) as maps:
        explicit = model(idx)
    assert torch.allclose(fast, explicit, atol=1e-5)
    assert all(torch.allclose(w.sum(-1), torch.ones(w.shape[:3]), atol=1e-5) for w in maps.values())
    cache = model.new_cache()
    steps = [model(idx[:, :4], cache)] + [model(idx[:, t:t + 1], cache) for t in range(4, idx.shape[1])]
    assert torch.allclose(torch.cat(steps, dim=1), fast, atol=1e-5)


def test_relu2_is_relu_squared():
    ffn = FeedForward(4, 8, "relu2", bias=False)
    x = torch.randn(2, 3, 4)
    assert torch.allclose(ffn(x), ffn.proj(F.relu(ffn.fc(x)) ** 2))


def test_qk_norm_bounds_scores_whatever_the_projection_scale():
    torch.manual_seed(0)
    att = MultiHeadAttention(16, 2, causal=True, qk_norm=True, bias=False).eval()
    x = torch.randn(2, 5, 16)
    with record_attention(att) as small:
        att(x)
    with torch.no_grad():
        att.qkv.weight[:32] *= 100.0  # queries and keys 100x larger
    with record_attention(att) as large:
        att(x)
    (a,), (b,) = small.values(), large.values()
    assert torch.allclose(a, b, atol=1e-5)  # normalised: the weights do not change


def test_untied_head_is_its_own_parameter_and_zero_init_starts_uniform():
    model = _gpt(tie_embeddings=False, zero_init=True)
    assert model.lm_head.weight is not model.tok_emb.weight
    names = dict(model.named_parameters())
    assert "lm_head.weight" in names
    for block in model.blocks:
        assert not block.attn.out_proj.weight.any() and not block.mlp.proj.weight.any()
    (idx,), targets = make_batch("gpt")
    logits = model(idx)
    assert torch.equal(logits, torch.zeros_like(logits))  # every first prediction uniform
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
    assert loss.item() == pytest.approx(math.log(TINY_CONFIGS["gpt"]["vocab_size"]))
    n_tied = _gpt().num_parameters()
    assert model.num_parameters() == n_tied + TINY_CONFIGS["gpt"]["vocab_size"] * TINY_CONFIGS["gpt"]["d_model"]


def test_zero_init_with_tied_embeddings_keeps_the_embedding():
    model = _gpt(zero_init=True)
    assert model.lm_head.weight is model.tok_emb.weight and model.tok_emb.weight.abs().sum() > 0


@pytest.mark.parametrize("option", [{"qk_norm": True}, {"tie_embeddings": False}, {"ffn": "relu2"}])
def test_options_gpt2_cannot_express_refuse_export(option):
    with pytest.raises(ConfigError):
        check_gpt2_compatible(GPTConfig(**option))
