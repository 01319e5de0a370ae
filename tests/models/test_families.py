"""One contract over every family in the registry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_model, save_model

from playground.errors import ConfigError, NotFoundError
from playground.models.attention import attention_modules, record_attention
from playground.families import FAMILIES, build_model, get_family

from .conftest import TINY_CONFIGS, loss_of, make_batch

FAMILY_NAMES = sorted(FAMILIES)


def test_registry_covers_the_tiny_configs() -> None:
    assert set(FAMILIES) == {"gpt", "vit", "rnn_seq2seq", "transformer_seq2seq", "text_classifier",
                             "imagegpt", "bert_mlm", "bert_classifier"} == set(TINY_CONFIGS)
    with pytest.raises(NotFoundError, match="gpt"):
        get_family("bert")


@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_config_json_round_trip_and_validation(family: str) -> None:
    spec = get_family(family)
    config = spec.config_cls.from_dict(TINY_CONFIGS[family])
    assert spec.config_cls.from_dict(json.loads(json.dumps(config.to_dict()))) == config
    with pytest.raises(ConfigError, match="nope"):
        spec.config_cls.from_dict({**TINY_CONFIGS[family], "nope": 1})
    with pytest.raises(ConfigError, match="must be int"):
        spec.config_cls.from_dict({**TINY_CONFIGS[family], "vocab_size" if family != "vit" else "n_classes": "7"})
    bad_choice = "attention" if family == "rnn_seq2seq" else "norm"
    with pytest.raises(ConfigError, match=bad_choice):
        spec.config_cls.from_dict({**TINY_CONFIGS[family], bad_choice: "bogus"})


@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_shapes_and_parameter_count(family: str) -> None:
    model = build_model(family, TINY_CONFIGS[family]).eval()
    inputs, targets = make_batch(family)
    out = model(*inputs)
    spec = get_family(family)
    if spec.kind == "classifier":
        assert out.shape == (3, model.config.n_classes)
    else:
        assert out.shape == (*targets.shape, model.config.vocab_size)
    assert model.num_parameters() == sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())
    assert isinstance(spec.input_embedding(model), torch.nn.Module)


@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_loss_decreases_when_overfitting_one_batch(family: str) -> None:
    model = build_model(family, TINY_CONFIGS[family]).train()
    inputs, targets = make_batch(family)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    first = loss_of(family, model, inputs, targets).item()
    for _ in range(40):
        opt.zero_grad()
        loss = loss_of(family, model, inputs, targets)
        loss.backward()
        opt.step()
    assert loss.item() < 0.5 * first


@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_safetensors_round_trip_gives_identical_outputs(family: str, tmp_path: Path) -> None:
    model = build_model(family, TINY_CONFIGS[family]).eval()
    inputs, _ = make_batch(family)
    save_model(model, str(tmp_path / "model.safetensors"))
    (tmp_path / "config.json").write_text(json.dumps(model.config.to_dict()))
    torch.manual_seed(123)  # a different init
    loaded = build_model(family, json.loads((tmp_path / "config.json").read_text())).eval()
    load_model(loaded, str(tmp_path / "model.safetensors"))
    assert torch.equal(loaded(*inputs), model(*inputs))


@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_fast_path_equals_explicit_path_and_rows_sum_to_one(family: str) -> None:
    model = build_model(family, TINY_CONFIGS[family]).eval()
    inputs, _ = make_batch(family)
    fast = model(*inputs)
    with record_attention(model) as maps:
        explicit = model(*inputs)
    assert torch.allclose(fast, explicit, atol=1e-5)
    assert set(maps) == set(attention_modules(model))
    for name, w in maps.items():
        assert w.dim() == 4 and w.shape[0] == 3, name
        assert torch.all(w >= 0)
        if ("seq2seq" in family and not name.endswith("self_attn")) or family == "text_classifier":  # keys: tokens
            assert torch.all(w[0, ..., 5:] == 0), name  # padded source positions
        assert torch.allclose(w.sum(-1), torch.ones(w.shape[:3]), atol=1e-5), name
