"""Head analysis: per-head ablation, importance, pruning curves and automatic head scores.

- :mod:`.mask`: gate / replace one head's output before ``out_proj`` (zero or mean ablation,
  Michel et al.'s gates xi for gradient importance).
- :mod:`.ablation`: ablation losses, gradient importance, the pruning curve.
- :mod:`.scores`: previous-token, self, next, first-token and induction scores from attention maps.
- :mod:`.report`: all of it on a checkpoint's own validation data (:func:`analyse_heads`).
"""
