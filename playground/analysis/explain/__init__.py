"""Explaining one prediction: attention views, captum attributions, and how far they agree.

- :mod:`.attention` — record a forward's attention; head means, rollout, flow, norm-weighted,
  relevancy; the rows that explain an output.
- :mod:`.attributions` — saliency, input × gradient, integrated gradients, leave-one-out,
  DeepLift (captum).
- :mod:`.propagation` — the pure rollout / flow / relevancy math.
- :mod:`.agreement` — Kendall tau-b, Spearman, top-k Jaccard, JSD and the pair table.
- :mod:`.pointing` — pointing game (vit-shapes masks) and seq2seq alignment accuracy.
- :mod:`.per_input` — everything at once for the Analyze tab and ``python -m playground analyze``.
"""
