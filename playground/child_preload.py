"""Imported once by the fork server that starts job children (playground.child.PRELOAD): every
job forked from it starts with these modules loaded instead of importing them (3–10 s)."""
from __future__ import annotations

import torch._dynamo  # noqa: F401  - torch.optim's constructors import it on first use (~1.8 s)

import playground.reproduce.base
import playground.tokenization.build_process
import playground.training.engine  # noqa: F401  - training runs
