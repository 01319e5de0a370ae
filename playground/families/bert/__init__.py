"""BERT: a bidirectional encoder pre-trained as a masked-language model (``bert_mlm``: fill-mask)
and fine-tuned on labelled texts from those weights (``bert_classifier``: class probabilities).

Two families over one model module (:mod:`playground.models.bert`): their outputs, data and
Generate / Analyze views differ, their encoder is the same, so a classifier can start from a
pre-trained checkpoint (``data.init_from``)."""
from __future__ import annotations

from playground.families.base import Family
from playground.families.bert.classify_training import BertClassifierAdapter
from playground.families.bert.examples import BertTextExamples, MLMExamples
from playground.families.bert.explain import BertClassifierExplainer, MLMExplainer
from playground.families.bert.generation import (
    BertClassifierGenerator,
    FillMaskGenerator,
)
from playground.families.bert.mlm_training import MLMAdapter
from playground.families.bert.sizes import BertSizes
from playground.families.bert.ui import CLASSIFIER_TRAIN_UI, MLM_TRAIN_UI
from playground.models.bert import (
    BertClassifier,
    BertClassifierConfig,
    BertConfig,
    BertMLM,
)

MLM_FAMILY = Family(
    name="bert_mlm",
    kind="lm",
    config_cls=BertConfig,
    model_cls=BertMLM,
    adapter=MLMAdapter("bert_mlm", BertConfig),
    input_embedding=lambda model: model.encoder.tok_emb,
    generator=FillMaskGenerator(),
    examples=MLMExamples(),
    explainer=MLMExplainer(),
    sizes=BertSizes(),
    train_ui=MLM_TRAIN_UI,
    exports={},
)

CLASSIFIER_FAMILY = Family(
    name="bert_classifier",
    kind="classifier",
    config_cls=BertClassifierConfig,
    model_cls=BertClassifier,
    adapter=BertClassifierAdapter("bert_classifier", BertClassifierConfig),
    input_embedding=lambda model: model.encoder.tok_emb,
    generator=BertClassifierGenerator(),
    examples=BertTextExamples(),
    explainer=BertClassifierExplainer(),
    sizes=BertSizes(),
    train_ui=CLASSIFIER_TRAIN_UI,
    exports={},
)
