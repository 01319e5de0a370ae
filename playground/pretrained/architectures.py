"""The transformers architectures the playground converts, each into one of its own families."""
from __future__ import annotations

from typing import Any

from playground.errors import ConfigError
from playground.families.bert.hf_import import CONVERTERS as BERT_CONVERTERS
from playground.families.gpt.hf_import import GPT2_LM
from playground.families.hf_weights import HFConverter
from playground.families.vit.hf_import import VIT_CLASSIFIER

CONVERTERS: dict[str, HFConverter] = {c.architecture: c for c in (GPT2_LM, *BERT_CONVERTERS, VIT_CLASSIFIER)}
# a config.json without "architectures" (rare): its model_type's usual head
BY_MODEL_TYPE = {"gpt2": "GPT2LMHeadModel", "bert": "BertForMaskedLM", "distilbert": "DistilBertForMaskedLM",
                 "vit": "ViTForImageClassification"}


def converter_for(hf: dict[str, Any], label: str) -> HFConverter:
    """The converter of a config.json's architecture; ConfigError naming what is supported."""
    names = hf.get("architectures") or [BY_MODEL_TYPE.get(str(hf.get("model_type")), str(hf.get("model_type")))]
    for name in names:
        if name in CONVERTERS:
            return CONVERTERS[name]
    raise ConfigError(f"{label} is a {', '.join(map(str, names))}, which the playground cannot convert into its own "
                      f"models; it converts {', '.join(sorted(CONVERTERS))}.")


def converter_named(architecture: str) -> HFConverter:
    """The converter for ``architecture`` (as stored in an imported bundle)."""
    try:
        return CONVERTERS[architecture]
    except KeyError:
        raise ConfigError(f"No converter for {architecture!r}; known: {', '.join(sorted(CONVERTERS))}.") from None
