"""RNN seq2seq: a GRU/LSTM encoder-decoder with additive (Bahdanau) or multiplicative (Luong) attention."""
from __future__ import annotations

from playground.families.base import Family
from playground.families.seq2seq.examples import PairExamples
from playground.families.seq2seq.explain import Seq2SeqExplainer
from playground.families.seq2seq.generation import Seq2SeqGenerator
from playground.families.seq2seq.sizes import RNNSeq2SeqSizes
from playground.families.seq2seq.training import Seq2SeqAdapter
from playground.families.seq2seq.ui import TRAIN_UI
from playground.models.rnn_seq2seq import RNN_ATTENTIONS, RNNSeq2Seq, RNNSeq2SeqConfig

FAMILY = Family(
    name="rnn_seq2seq",
    kind="seq2seq",
    config_cls=RNNSeq2SeqConfig,
    model_cls=RNNSeq2Seq,
    adapter=Seq2SeqAdapter("rnn_seq2seq", RNNSeq2SeqConfig),
    input_embedding=lambda model: model.src_emb,
    generator=Seq2SeqGenerator(),
    examples=PairExamples(),
    explainer=Seq2SeqExplainer({"rollout", "flow", "relevancy"}, ("n_layers",),
                               uniform_override={"model.attention": "uniform"} if "uniform" in RNN_ATTENTIONS else None),
    sizes=RNNSeq2SeqSizes(),
    train_ui=TRAIN_UI,
    exports={},
)
