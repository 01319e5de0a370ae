"""Causal evidence: activation patching, attribution patching, the logit lens, and the
attention / gradient proxies scored against what the model causally uses."""
