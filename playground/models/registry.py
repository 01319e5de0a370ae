"""The model families the rest of the code dispatches through. A new family is one new file
plus one entry in FAMILIES."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from torch import nn

from playground.errors import ConfigError, NotFoundError
from playground.models.base import ModelConfig
from playground.models.gpt import GPT, GPTConfig
from playground.models.rnn_seq2seq import RNNSeq2Seq, RNNSeq2SeqConfig
from playground.models.transformer_seq2seq import TransformerSeq2Seq, TransformerSeq2SeqConfig
from playground.models.vit import ViT, ViTConfig


@dataclass(frozen=True)
class FamilySpec:
    """What the trainer, generator and analyzer need to know about one model family."""

    name: str
    config_cls: type[ModelConfig]
    model_cls: type[nn.Module]
    kind: str  # "lm" | "classifier" | "seq2seq"
    input_embedding: Callable[[nn.Module], nn.Module]  # the layer to attribute against


FAMILIES: dict[str, FamilySpec] = {
    "gpt": FamilySpec("gpt", GPTConfig, GPT, "lm", lambda m: m.tok_emb),
    "vit": FamilySpec("vit", ViTConfig, ViT, "classifier", lambda m: m.patch_emb),
    "rnn_seq2seq": FamilySpec("rnn_seq2seq", RNNSeq2SeqConfig, RNNSeq2Seq, "seq2seq", lambda m: m.src_emb),
    "transformer_seq2seq": FamilySpec(
        "transformer_seq2seq", TransformerSeq2SeqConfig, TransformerSeq2Seq, "seq2seq", lambda m: m.src_emb
    ),
}


def get_family(name: str) -> FamilySpec:
    """The family called ``name``; NotFoundError naming the valid ones otherwise."""
    try:
        return FAMILIES[name]
    except KeyError:
        raise NotFoundError(f"Unknown model family {name!r}; choose one of {sorted(FAMILIES)}.") from None


def build_model(family: str, config: dict[str, Any] | ModelConfig) -> nn.Module:
    """A freshly initialised model of ``family`` from a config dataclass or its dict."""
    spec = get_family(family)
    if isinstance(config, dict):
        config = spec.config_cls.from_dict(config)
    elif not isinstance(config, spec.config_cls):
        raise ConfigError(f"A {family} model needs a {spec.config_cls.__name__}, got {type(config).__name__}.")
    return spec.model_cls(config)
