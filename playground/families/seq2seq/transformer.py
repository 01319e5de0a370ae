"""Transformer seq2seq: an encoder-decoder with self- and cross-attention."""
from __future__ import annotations

from playground.families.base import Family
from playground.families.seq2seq.examples import PairExamples
from playground.families.seq2seq.explain import Seq2SeqExplainer
from playground.families.seq2seq.generation import Seq2SeqGenerator
from playground.families.seq2seq.sizes import TransformerSeq2SeqSizes
from playground.families.seq2seq.training import Seq2SeqAdapter
from playground.families.seq2seq.ui import TRAIN_UI
from playground.models.transformer_seq2seq import TransformerSeq2Seq, TransformerSeq2SeqConfig

FAMILY = Family(
    name="transformer_seq2seq",
    kind="seq2seq",
    config_cls=TransformerSeq2SeqConfig,
    model_cls=TransformerSeq2Seq,
    adapter=Seq2SeqAdapter("transformer_seq2seq", TransformerSeq2SeqConfig),
    input_embedding=lambda model: model.src_emb,
    generator=Seq2SeqGenerator(),
    examples=PairExamples(),
    explainer=Seq2SeqExplainer({"flow", "relevancy"}, ("n_encoder_layers", "n_decoder_layers"),
                               uniform_override={"model.uniform_attention": True}),
    sizes=TransformerSeq2SeqSizes(),
    train_ui=TRAIN_UI,
    exports={},
)
