"""GPT (NanoGPT): a decoder-only language model over a BPE or character vocabulary."""
from __future__ import annotations

from playground.families.base import Family
from playground.families.gpt.examples import TextExamples
from playground.families.gpt.explain import LMExplainer
from playground.families.gpt.generation import LMGenerator
from playground.families.gpt.sizes import GPTSizes
from playground.families.gpt.training import GPTAdapter
from playground.families.gpt.ui import TRAIN_UI
from playground.models.export_hf import export_hf_gpt2
from playground.models.gpt import GPT, GPTConfig

FAMILY = Family(
    name="gpt",
    kind="lm",
    config_cls=GPTConfig,
    model_cls=GPT,
    adapter=GPTAdapter("gpt", GPTConfig),
    input_embedding=lambda model: model.tok_emb,
    generator=LMGenerator(),
    examples=TextExamples(),
    explainer=LMExplainer(),
    sizes=GPTSizes(),
    train_ui=TRAIN_UI,
    exports={"hf-gpt2": export_hf_gpt2},
)
