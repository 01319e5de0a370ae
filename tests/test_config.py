"""Presets and overrides: typed coercion, errors that name the key and the valid choices."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import pytest

from playground.config import apply_overrides, build_dataclass, coerce, list_presets, load_preset, parse_overrides, parse_preset
from playground.errors import ConfigError, NotFoundError


@dataclass
class Toy:
    n_layer: int = 2
    lr: float = 1e-3
    bias: bool = True
    norm: Literal["layernorm", "rmsnorm"] = "layernorm"
    betas: tuple[float, ...] = (0.9, 0.99)
    name: str | None = None
    tags: list[str] = field(default_factory=list)


def test_coercion_by_field_type():
    cfg = build_dataclass(Toy, {"n_layer": "4", "lr": "3e-4", "bias": "false", "norm": "rmsnorm",
                                "betas": "0.9,0.95", "name": "none", "tags": "a,b"}, "model")
    assert cfg == Toy(4, 3e-4, False, "rmsnorm", (0.9, 0.95), None, ["a", "b"])


def test_unknown_key_names_key_and_valid_keys():
    with pytest.raises(ConfigError) as info:
        build_dataclass(Toy, {"n_layers": 3}, "model")
    msg = str(info.value)
    assert "model.n_layers" in msg and "n_layer" in msg and "lr" in msg


@pytest.mark.parametrize("value,typ,fragment", [("x", int, "not an integer"), ("1.5", int, "not an integer"),
                                                ("abc", float, "not a number"), ("maybe", bool, "true or false")])
def test_bad_values(value, typ, fragment):
    with pytest.raises(ConfigError, match=fragment):
        coerce(value, typ, "k")


def test_literal_lists_choices():
    with pytest.raises(ConfigError, match="layernorm, rmsnorm"):
        build_dataclass(Toy, {"norm": "batchnorm"}, "model")


def test_preset_text_and_overrides():
    preset = parse_preset('family = "gpt"\n[model]\nn_layer = 2\n[train]\nlr = 0.001\n', name="p")
    new = apply_overrides(preset, parse_overrides(["model.n_layer=6", "train.lr=3e-4", "data.corpus=python-docs"]))
    assert new.model == {"n_layer": "6"} and new.train == {"lr": "3e-4"} and new.data == {"corpus": "python-docs"}
    assert preset.model == {"n_layer": 2}  # the original is untouched


@pytest.mark.parametrize("bad", ["model.n_layer", "=3", "layers=3"])
def test_bad_overrides(bad):
    with pytest.raises(ConfigError):
        apply_overrides(parse_preset('family="gpt"'), parse_overrides([bad]))


def test_bad_preset_text():
    with pytest.raises(ConfigError, match="not valid TOML"):
        parse_preset("[model\n")
    with pytest.raises(ConfigError, match="family"):
        parse_preset("[model]\nx=1\n")
    with pytest.raises(ConfigError, match="unknown top-level"):
        parse_preset('family="gpt"\n[optim]\nx=1\n')


def test_missing_preset_lists_the_shipped_ones():
    with pytest.raises(NotFoundError, match="No preset"):
        load_preset("does-not-exist")


def test_every_shipped_preset_parses():
    for name in list_presets():
        preset = load_preset(name)
        assert preset.family in {"gpt", "vit", "rnn_seq2seq", "transformer_seq2seq", "text_classifier", "imagegpt",
                                 "bert_mlm", "bert_classifier"}


def test_an_integer_past_any_range_is_refused_in_a_short_line():
    from playground.config import coerce

    for value in (10**400, "1" + "0" * 400, "1e400"):
        with pytest.raises(ConfigError, match="far too large") as err:
            coerce(value, int, "model.n_layers")
        assert len(str(err.value)) < 120
