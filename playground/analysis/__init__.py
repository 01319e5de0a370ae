"""Does attention explain a prediction? The analyzer's three layers.

- :mod:`.query` — :class:`~playground.analysis.query.Query`, a batch of inputs with the
  positions and targets to explain: the one object every method takes.
- :mod:`.inputs` — from a checkpoint and a raw input (text, image, source sentence) to a query.
- :mod:`.divergences` — total variation and Jensen–Shannon distances.
- :mod:`.explain` — one input at a time: attention views, captum attributions, agreement.
- :mod:`.experiments` — a held-out set at a time: the Jain & Wallace, Wiegreffe & Pinter and
  erasure experiments.
"""
