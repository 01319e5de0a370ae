"""The plain module under the wrappers training puts around it."""
from __future__ import annotations

from torch import nn


def unwrap_model(model: nn.Module) -> nn.Module:
    """The plain module under torch.compile (`_orig_mod`) and DDP (`module`) wrappers."""
    while True:
        if hasattr(model, "_orig_mod"):
            model = model._orig_mod
        elif isinstance(model, nn.parallel.DistributedDataParallel):
            model = model.module
        else:
            return model
