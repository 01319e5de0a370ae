"""The "attention is (not) explanation" experiments, over a held-out set of a user's model.

- :mod:`.core` — the probe (one example, one attention row, batched interventions), the
  example loop with progress and Stop, results and their JSON.
- :mod:`.data` — the held-out examples each family is tested on.
- :mod:`.jain_wallace` — Jain & Wallace (2019): agreement with attributions, random
  permutation, adversarial attention.
- :mod:`.wiegreffe_pinter` — Wiegreffe & Pinter (2019): uniform baseline, seed variance,
  retrained-uniform and the diagnostic MLP.
- :mod:`.erasure` — Serrano & Smith (2019) erasure, AOPC and pointing.
- :mod:`.runner` — one entry point that runs any experiment by name; :mod:`.estimate` — how long it will take.
- :mod:`.summary` — the plain-language verdict shown beside each result.
"""
