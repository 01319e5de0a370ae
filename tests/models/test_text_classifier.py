"""The text classifiers (J&W encoders + one attention layer, a small Transformer encoder):
shapes, padding, attention over the real tokens."""
from __future__ import annotations

import pytest
import torch

from playground.errors import ConfigError
from playground.families import get_family
from playground.families.text_classifier.sizes import TextClassifierSizes
from playground.models.attention import record_attention
from playground.models.text_classifier import (
    ENCODERS,
    TextClassifier,
    TextClassifierConfig,
)

VARIANTS = [(e, "cls", "learned") for e in ENCODERS] + [("transformer", "mean", "learned"),
                                                         ("transformer", "cls", "rope")]


def _model(encoder: str, pool: str = "cls", pos: str = "learned", **kw) -> TextClassifier:
    torch.manual_seed(0)
    config = TextClassifierConfig(vocab_size=30, n_classes=3, encoder=encoder, pool=pool, pos_encoding=pos, emb_dim=8,
                                  hidden=16,
                                  n_head=2, n_layer=2, max_len=20, dropout=0.0, **kw)
    return TextClassifier(config).eval()


def _ids() -> torch.Tensor:
    g = torch.Generator().manual_seed(1)
    return torch.randint(2, 30, (4, 9), generator=g)  # [B,T], no padding


@pytest.mark.parametrize("encoder, pool, pos", VARIANTS)
def test_shapes_and_padding_does_not_change_the_output(encoder: str, pool: str, pos: str) -> None:
    model, ids = _model(encoder, pool, pos), _ids()
    out = model(ids)
    assert out.shape == (4, 3)
    padded = torch.cat([ids, torch.zeros(4, 5, dtype=torch.long)], 1)  # right padding with pad_id 0
    assert torch.allclose(model(padded), out, atol=1e-5)
    short = ids.clone()
    short[0, 6:] = 0  # row 0 is 6 tokens long: the same as that row alone
    assert torch.allclose(model(short)[0], model(ids[:1, :6])[0], atol=1e-5)
    assert model.num_parameters() == TextClassifierSizes().count_parameters(model.config)


@pytest.mark.parametrize("encoder, pool, pos", VARIANTS)
def test_attention_sums_to_one_over_the_real_tokens(encoder: str, pool: str, pos: str) -> None:
    model = _model(encoder, pool, pos)
    ids = _ids()
    ids[1, 5:] = 0
    alpha = model.attention_weights(ids)  # [B,T]
    assert alpha.shape == (4, 9) and torch.all(alpha >= 0)
    assert torch.all(alpha[1, 5:] == 0)  # padding gets nothing
    total = alpha.sum(1)
    if (encoder, pool) == ("transformer", "cls"):
        assert torch.all(total < 1)  # the CLS row also looks at CLS itself ...
        with record_attention(model) as maps:
            model(ids)
        assert torch.allclose(maps["blocks.1.attn"][:, :, 0].sum(-1), torch.ones(4, 2), atol=1e-5)  # ... key 0
    else:
        assert torch.allclose(total, torch.ones(4), atol=1e-5)


def test_jw_attention_is_the_named_map_and_uniform_is_uniform() -> None:
    model = _model("bilstm")
    ids = _ids()
    with record_attention(model) as maps:
        model(ids)
    assert set(maps) == {"attention"} and maps["attention"].shape == (4, 1, 1, 9)
    assert torch.allclose(maps["attention"][:, 0, 0], model.attention_weights(ids))
    ids[0, 4:] = 0
    uniform = _model("cnn", uniform_attention=True).attention_weights(ids)
    assert torch.allclose(uniform[0, :4], torch.full((4,), 0.25)) and torch.allclose(uniform[1], torch.full((9,), 1 / 9))
    assert get_family("text_classifier").explainer.for_model(model).explaining_maps(model) == ["attention"]


def test_embeddings_are_the_attribution_layer_and_start_at_zero_for_pad_and_unk() -> None:
    for encoder in ENCODERS:
        model = _model(encoder)
        emb = get_family("text_classifier").input_embedding(model)
        assert emb is model.embedding
        assert torch.all(emb.weight[[0, 1]] == 0)  # <pad>, <unk>: the baseline is a zero vector


def test_config_checks() -> None:
    with pytest.raises(ConfigError, match="encoder"):
        TextClassifierConfig(encoder="gru")
    with pytest.raises(ConfigError, match="even hidden"):
        TextClassifierConfig(encoder="bilstm", hidden=15)
    with pytest.raises(ConfigError, match="divisible"):
        TextClassifierConfig(encoder="transformer", hidden=30, n_head=4)
    with pytest.raises(ValueError, match="max_len"):
        _model("transformer")(torch.ones(1, 21, dtype=torch.long))
