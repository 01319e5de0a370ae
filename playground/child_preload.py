"""Imported once by the fork server that starts job children (playground.child.PRELOAD): every
job forked from it starts with these modules loaded instead of importing them (3–10 s).

The fork server itself keeps the server's priority: at the jobs' low priority its imports
could starve for minutes behind a busy machine's other work, and the first Start would wait
for them. Each child lowers its own priority (playground.child.JOB_NICENESS)."""
from __future__ import annotations

import torch._dynamo  # noqa: F401 - torch.optim's constructors import it on first use (~1.8 s)

import playground.reproduce.base
import playground.tokenization.build_process
import playground.training.engine  # noqa: F401 - training runs
