"""ImageGPT: a GPT over the pixels of the 8x8 digits (grey levels as tokens, raster order)."""
from __future__ import annotations

from playground.families.base import Family
from playground.families.gpt.explain import LMExplainer
from playground.families.gpt.sizes import GPTSizes
from playground.families.imagegpt.examples import DigitExamples
from playground.families.imagegpt.generation import PixelGenerator
from playground.families.imagegpt.pixels import PixelGPT
from playground.families.imagegpt.training import PixelAdapter
from playground.families.imagegpt.ui import TRAIN_UI
from playground.models.gpt import GPTConfig

FAMILY = Family(
    name="imagegpt",
    kind="lm",
    config_cls=GPTConfig,
    model_cls=PixelGPT,
    adapter=PixelAdapter("imagegpt", GPTConfig),
    input_embedding=lambda model: model.tok_emb,
    generator=PixelGenerator(),
    examples=DigitExamples(),
    explainer=LMExplainer(),
    sizes=GPTSizes(),
    train_ui=TRAIN_UI,
    exports={},
)
