"""Text classifier: J&W's attention classifiers (BiLSTM / CNN / averaging encoder + one attention
layer) and a small Transformer encoder, on generated reviews with known rationales or the
user's labelled texts."""
from __future__ import annotations

from playground.families.base import Family
from playground.families.text_classifier.examples import TextExamples
from playground.families.text_classifier.explain import TextClassifierExplainer
from playground.families.text_classifier.generation import TextClassifierGenerator
from playground.families.text_classifier.sizes import TextClassifierSizes
from playground.families.text_classifier.training import TextClassifierAdapter
from playground.families.text_classifier.ui import TRAIN_UI
from playground.models.text_classifier import TextClassifier, TextClassifierConfig

FAMILY = Family(
    name="text_classifier",
    kind="classifier",
    config_cls=TextClassifierConfig,
    model_cls=TextClassifier,
    adapter=TextClassifierAdapter("text_classifier", TextClassifierConfig),
    input_embedding=lambda model: model.embedding,
    generator=TextClassifierGenerator(),
    examples=TextExamples(),
    explainer=TextClassifierExplainer(),
    sizes=TextClassifierSizes(),
    train_ui=TRAIN_UI,
    exports={},
)
