"""Per-input analysis: attention views, captum attributions, their agreement.

Layers (each usable on its own; see /work/notes/ANALYSIS_API.md):

- :mod:`query` — :class:`Query`, a batch of inputs with positions and targets (the one object
  every method takes).
- :mod:`attention_methods` — attention, rollout, flow, norm-weighted, relevancy (from a
  :func:`record`-ed forward).
- :mod:`attributions` — saliency, input x gradient, integrated gradients, leave-one-out,
  DeepLift (captum).
- :mod:`propagation` — the pure rollout / flow / relevancy math.
- :mod:`agreement` — Kendall tau-b, Spearman, top-k Jaccard, JSD and the pair table.
- :mod:`pointing` — pointing game (vit-shapes masks) and seq2seq alignment accuracy.
- :mod:`interventions` — Jain & Wallace permutation of the explaining row.
- :mod:`inputs` — from a checkpoint and raw input to a prepared query.
- :mod:`per_input` — everything at once for the Analyze tab and the CLI.
"""
from playground.analysis.agreement import Agreement, agreement, agreement_table, jsd, kendall_tau, spearman_rho, \
    topk_jaccard, tvd
from playground.analysis.query import Query

__all__ = ["Agreement", "Query", "agreement", "agreement_table", "jsd", "kendall_tau", "spearman_rho",
           "topk_jaccard", "tvd"]
