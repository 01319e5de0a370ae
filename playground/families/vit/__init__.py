"""ViT: a vision transformer that classifies images from their patches."""
from __future__ import annotations

from playground.families.base import Family
from playground.families.vit.examples import ImageExamples
from playground.families.vit.explain import ClassifierExplainer
from playground.families.vit.generation import ClassifierGenerator
from playground.families.vit.sizes import ViTSizes
from playground.families.vit.training import ViTAdapter
from playground.families.vit.ui import TRAIN_UI
from playground.models.vit import ViT, ViTConfig

FAMILY = Family(
    name="vit",
    kind="classifier",
    config_cls=ViTConfig,
    model_cls=ViT,
    adapter=ViTAdapter("vit", ViTConfig),
    input_embedding=lambda model: model.patch_emb,
    generator=ClassifierGenerator(),
    examples=ImageExamples(),
    explainer=ClassifierExplainer(),
    sizes=ViTSizes(),
    train_ui=TRAIN_UI,
    exports={},
)
