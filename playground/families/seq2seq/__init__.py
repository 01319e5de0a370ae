"""Sequence-to-sequence families: an RNN encoder-decoder with Bahdanau/Luong attention and a
Transformer encoder-decoder. They share the model contract (``forward(src, tgt_in)``,
``start(src)``, ``step(state, y)``), so they share training, generation and analysis; each
module here only names its model."""
