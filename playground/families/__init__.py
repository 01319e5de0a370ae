"""The model families, in one registry: a new family is its own folder plus one line here.

Everything family-specific (model, training adapter, ...) lives with the family in
``playground/families/<name>/``; the rest of the code asks :func:`get_family` and never
compares family names.
"""
from __future__ import annotations

from typing import Any

from torch import nn

from playground.errors import ConfigError, NotFoundError
from playground.families import bert, gpt, imagegpt, text_classifier, vit
from playground.families.base import Family
from playground.families.seq2seq import rnn, transformer
from playground.models.base import ModelConfig

FAMILIES: dict[str, Family] = {f.name: f for f in (gpt.FAMILY, vit.FAMILY, rnn.FAMILY, transformer.FAMILY,
                                                  text_classifier.FAMILY, imagegpt.FAMILY, bert.MLM_FAMILY,
                                                  bert.CLASSIFIER_FAMILY)}


def get_family(name: str) -> Family:
    """The family called ``name``; NotFoundError naming the valid ones otherwise."""
    try:
        return FAMILIES[name]
    except KeyError:
        raise NotFoundError(f"Unknown model family {name!r}; choose one of {sorted(FAMILIES)}.") from None


def family_of(model: nn.Module) -> Family:
    """The family whose model class ``model`` is (for code handed only a model, e.g. held-out query
    builders); its exact class first, since a family's model may subclass another's (ImageGPT's PixelGPT is a GPT)."""
    for family in FAMILIES.values():
        if type(model) is family.model_cls:
            return family
    for family in FAMILIES.values():
        if isinstance(model, family.model_cls):
            return family
    raise NotFoundError(f"{type(model).__name__} is not the model of any family ({sorted(FAMILIES)}).")


def build_model(family: str, config: dict[str, Any] | ModelConfig) -> nn.Module:
    """A freshly initialised model of ``family`` from a config dataclass or its dict."""
    spec = get_family(family)
    if isinstance(config, dict):
        config = spec.config_cls.from_dict(config)
    elif not isinstance(config, spec.config_cls):
        raise ConfigError(f"A {family} model needs a {spec.config_cls.__name__}, got {type(config).__name__}.")
    return spec.build(config)


__all__ = ["FAMILIES", "Family", "build_model", "family_of", "get_family"]
