"""A model family: everything the trainer, generator, analyzer and tabs need to know about it.

Each family lives in its own folder under ``playground/families/`` and builds one
:class:`Family`; :mod:`playground.families` registers them. Code outside the family folders
asks the family (``get_family(name).adapter``, ...) and never compares family names.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from torch import nn

from playground.analysis.explainer import FamilyExplainer
from playground.data.examples import FamilyExamples
from playground.generation.family import FamilyGenerator
from playground.limits import ModelSizes
from playground.models.base import ModelConfig
from playground.training.adapters import FamilyAdapter
from playground.ui.train_hints import TrainHints


@dataclass(frozen=True)
class Family:
    """One model family.

    name: the registry key, stored in every checkpoint's JSON ("gpt", "vit", ...).
    kind: what its output is: "lm" (next token), "classifier" (a class) or "seq2seq" (a sequence).
    config_cls / model_cls: the model's config dataclass and module; ``model_cls(config)`` builds it.
    adapter: the trainer's part (data, batches, loss, evaluation, preview).
    input_embedding: the layer attributions are computed against (token / patch / source embedding).
    generator: what "generate" means for it (prompt / source / image in, how a run streams, the hand-off to Analyze).
    examples: its validation examples, for Generate, Analyze and the experiments.
    explainer: what explaining its output means (F, the input units, the explaining attention rows).
    sizes: how big its model is from the config alone (parameters, training memory), for the size limits.
    train_ui: its part of the Train tab (tokenizer choices, uploads, preview).
    exports: the formats its checkpoints export to ("hf-gpt2"), each as
        ``write(model, model_config, out_dir, tokenizer=None) -> out_dir``; empty: none.
    """

    name: str
    kind: str
    config_cls: type[ModelConfig]
    model_cls: type[nn.Module]
    adapter: FamilyAdapter
    input_embedding: Callable[[nn.Module], nn.Module]
    generator: FamilyGenerator
    examples: FamilyExamples
    explainer: FamilyExplainer
    sizes: ModelSizes
    train_ui: TrainHints
    exports: Mapping[str, Callable[..., Path]]

    def build(self, config: ModelConfig) -> nn.Module:
        """A freshly initialised model of this family."""
        return self.model_cls(config)
