"""Every config option builds, runs, and keeps the fast and explicit paths equal."""

from __future__ import annotations

import pytest
import torch

from playground.errors import DataError
from playground.models.attention import record_attention
from playground.families import build_model
from playground.models.vit import ViT, ViTConfig

from .conftest import TINY_CONFIGS, make_batch

VARIANTS = [
    ("gpt", {"pos_encoding": "sinusoidal", "norm": "rmsnorm", "ffn": "swiglu", "bias": False}),
    ("gpt", {"pos_encoding": "alibi", "norm_placement": "post", "ffn": "relu", "attn_scale": False}),
    ("vit", {"pool": "mean", "pos_encoding": "rope", "ffn": "swiglu"}),
    ("vit", {"pos_encoding": "none", "norm_placement": "post", "channels": 3}),
    ("transformer_seq2seq", {"pos_encoding": "learned", "norm": "rmsnorm", "share_embeddings": False}),
    ("transformer_seq2seq", {"pos_encoding": "alibi", "scale_embeddings": False, "ffn": "gelu"}),
] + [
    ("rnn_seq2seq", {"cell": cell, "attention": att, "n_layers": 2})
    for cell in ("gru", "lstm") for att in ("none", "additive", "dot", "general", "scaled_dot")
]


@pytest.mark.parametrize(("family", "overrides"), VARIANTS)
def test_variant_runs_and_paths_agree(family: str, overrides: dict) -> None:
    model = build_model(family, {**TINY_CONFIGS[family], **overrides}).eval()
    inputs, targets = make_batch(family)
    fast = model(*inputs)
    with record_attention(model) as maps:
        explicit = model(*inputs)
    assert torch.isfinite(fast).all()
    assert torch.allclose(fast, explicit, atol=1e-5)
    for w in maps.values():
        assert torch.allclose(w.sum(-1), torch.ones(w.shape[:3]), atol=1e-5)


def test_dropout_is_active_in_training_only() -> None:
    cfg = {**TINY_CONFIGS["gpt"], "dropout": 0.5, "attn_dropout": 0.5, "emb_dropout": 0.5}
    model = build_model("gpt", cfg)
    (idx,), _ = make_batch("gpt")
    model.train()
    assert not torch.allclose(model(idx), model(idx))
    model.eval()
    assert torch.equal(model(idx), model(idx))


@pytest.mark.parametrize(("size", "patch", "channels"), [(12, 4, 1), (10, 5, 4)])
def test_vit_sizes_channels_and_cls_layout(size: int, patch: int, channels: int) -> None:
    model = ViT(ViTConfig(image_size=size, patch_size=patch, channels=channels, n_classes=3, d_model=16,
                          n_layer=1, n_head=2)).eval()
    images = torch.randn(2, channels, size, size)
    with record_attention(model) as maps:
        logits = model(images)
    n = (size // patch) ** 2
    assert logits.shape == (2, 3)
    assert model.grid == (size // patch, size // patch)
    assert maps["blocks.0.attn"].shape == (2, 2, 1 + n, 1 + n)  # CLS first, then the patches
    patches = model.patch_emb(images)
    assert patches.shape == (2, n, 16)
    # patch k (row-major) is the k-th P x P tile
    tile = images[:, :, :patch, patch : 2 * patch]
    expected = torch.einsum("bchw,dchw->bd", tile, model.patch_emb.proj.weight) + model.patch_emb.proj.bias
    assert torch.allclose(patches[:, 1], expected, atol=1e-5)
    with pytest.raises(DataError, match=str(size)):
        model(torch.randn(2, channels, size + patch, size))
