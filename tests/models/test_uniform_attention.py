"""uniform_attention: the frozen-uniform baseline of Wiegreffe & Pinter, as a config switch."""
from __future__ import annotations

import pytest
import torch

from playground.models.attention import record_attention
from playground.families import build_model


def _visible_uniform(maps: torch.Tensor) -> torch.Tensor:
    """The uniform distribution over the keys each row may see (its nonzero support)."""
    support = (maps > 0).to(maps.dtype)
    return support / support.sum(-1, keepdim=True)


@pytest.mark.parametrize("pos", ["learned", "alibi", "rope"])
def test_gpt_uniform_rows_are_uniform_over_the_causal_prefix(pos):
    torch.manual_seed(0)
    model = build_model("gpt", {"vocab_size": 13, "block_size": 8, "n_layer": 2, "n_head": 2, "d_model": 16,
                                "pos_encoding": pos, "uniform_attention": True}).eval()
    idx = torch.randint(0, 13, (2, 8))
    with record_attention(model) as maps:
        fast = model(idx)
    expected = torch.tril(torch.ones(8, 8)) / torch.arange(1, 9)[:, None]
    for name in ("blocks.0.attn", "blocks.1.attn"):
        torch.testing.assert_close(maps[name], expected.expand(2, 2, 8, 8))
    torch.testing.assert_close(model(idx), fast, atol=1e-5, rtol=1e-5)  # SDPA path == explicit path


def test_transformer_seq2seq_uniform_freezes_only_cross_attention():
    torch.manual_seed(0)
    model = build_model("transformer_seq2seq", {"vocab_size": 11, "d_model": 16, "n_head": 2, "n_encoder_layers": 1,
                                                "n_decoder_layers": 1, "uniform_attention": True}).eval()
    src = torch.tensor([[5, 6, 7, 8, 0, 0]])  # two pads at the end
    tgt = torch.tensor([[1, 5, 6]])
    with record_attention(model) as maps:
        model(src, tgt)
    cross = maps["decoder.blocks.0.cross_attn"]
    torch.testing.assert_close(cross, torch.tensor([0.25] * 4 + [0.0] * 2).expand_as(cross))
    enc = maps["encoder.blocks.0.attn"]
    assert not torch.allclose(enc, _visible_uniform(enc))  # the encoder still learns its attention


def test_rnn_uniform_alpha_is_uniform_over_real_source_tokens():
    torch.manual_seed(0)
    model = build_model("rnn_seq2seq", {"vocab_size": 11, "attention": "uniform", "emb_dim": 8, "hidden": 8}).eval()
    src = torch.tensor([[5, 6, 7, 0], [5, 6, 7, 8]])
    tgt = torch.tensor([[1, 5, 6], [1, 5, 6]])
    with record_attention(model) as maps:
        model(src, tgt)
    alpha = maps["decoder.attention"]  # [B,1,T,S]
    torch.testing.assert_close(alpha[0, 0], torch.tensor([1 / 3] * 3 + [0.0]).expand(3, 4))
    torch.testing.assert_close(alpha[1, 0], torch.full((3, 4), 0.25))


def test_vit_uniform_rows():
    torch.manual_seed(0)
    model = build_model("vit", {"image_size": 8, "patch_size": 4, "channels": 1, "n_classes": 3, "d_model": 16,
                                "n_layer": 1, "n_head": 2, "uniform_attention": True}).eval()
    with record_attention(model) as maps:
        model(torch.rand(2, 1, 8, 8))
    torch.testing.assert_close(maps["blocks.0.attn"], torch.full((2, 2, 5, 5), 0.2))
