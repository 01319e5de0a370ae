"""Loss at each position of a language model, out to several times the context it was trained on.

`checkpoint_position_loss` runs the measurement the position-extrapolation claim makes
(`playground.analysis.position_loss`) on a user's checkpoint over its own validation
text and summarises it the way the claim does (`reproduce.judges.positions_numbers`): mean loss
on the second half of the trained window, past it, and the rise. A learned position table has no
vector past block_size, so such a checkpoint is refused beyond factor 1.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pandas as pd
from torch import Tensor

from playground.analysis.experiments.data import prepare_data
from playground.analysis.position_loss import loss_by_position
from playground.bundle import Bundle
from playground.errors import ConfigError, DataError, TooBigError
from playground.reproduce.judges import positions_chart, positions_numbers
from playground.workspace import Workspace

DEFAULT_FACTOR = 4  # evaluate out to 4 x block_size
MAX_FACTOR = 8
DEFAULT_WINDOWS = 32
MAX_WINDOWS = 256
MAX_EVAL_TOKENS = 1_000_000  # windows x positions one evaluation may cost


@dataclass(frozen=True)
class PositionLoss:
    """A checkpoint's loss at each position: `trained` = block_size, `loss[p]` for p < `positions`."""

    checkpoint: str
    trained: int
    positions: int
    loss: list[float]

    def numbers(self) -> dict[str, Any]:
        """inside (mean over trained/2 .. trained-1), beyond, worst and rise (when evaluated past it)."""
        return positions_numbers({self.checkpoint: self._run()})[self.checkpoint]

    def frame(self, smooth: int = 4) -> pd.DataFrame:
        """Chart data: x (position, the middle of `smooth` positions), y (mean loss), series."""
        return positions_chart({self.checkpoint: self._run()}, smooth)

    def table(self) -> pd.DataFrame:
        """One row per position: position, loss (nats), trained (inside block_size)."""
        return pd.DataFrame({"position": range(self.positions), "loss": self.loss,
                             "trained": [p < self.trained for p in range(self.positions)]})

    def summary(self) -> str:
        """The numbers in words."""
        n = self.numbers()
        text = (f"{self.checkpoint}: loss {n['inside']:.3f} nats at positions {self.trained // 2}..{self.trained - 1} "
                f"(inside the trained context of {self.trained})")
        if "beyond" not in n:
            return text + "."
        return (f"{text}; {n['beyond']:.3f} past it, at {self.trained}..{self.positions - 1} "
                f"(worst {n['worst']:.3f}, rise {n['rise']:+.3f}).")

    def _run(self) -> dict[str, Any]:
        return {"label": self.checkpoint, "positions": {"trained": self.trained, "positions": self.positions,
                                                        "loss": self.loss}}


def check_length_options(factor: Any, windows: Any, block_size: int) -> tuple[int, int]:
    """(factor, windows) as whole numbers within their bounds, before anything is computed."""
    for value, what in ((factor, "factor"), (windows, "windows")):
        if (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
                or value != int(value)):
            raise ConfigError(f"The {what} must be a whole number, got {value!r}.")
    factor, windows = int(factor), int(windows)
    if not 1 <= factor <= MAX_FACTOR:
        raise ConfigError(f"Evaluate out to 1 .. {MAX_FACTOR} times the trained context, not {factor}.")
    if not 1 <= windows <= MAX_WINDOWS:
        raise ConfigError(f"Use 1 .. {MAX_WINDOWS} validation windows, not {windows}.")
    if windows * factor * block_size > MAX_EVAL_TOKENS:
        raise TooBigError(f"{windows} windows of {factor * block_size:,} positions are {windows * factor * block_size:,} "
                          f"tokens, above the {MAX_EVAL_TOKENS:,} one evaluation may read; use fewer windows or a "
                          "smaller factor.")
    return factor, windows


def checkpoint_position_loss(bundle: Bundle, factor: int = DEFAULT_FACTOR, windows: int = DEFAULT_WINDOWS,
                             workspace: Workspace | None = None) -> PositionLoss:
    """Loss at positions 0 .. factor x block_size - 1 of a language model checkpoint on its own
    validation text. Refuses a model with learned positions past factor 1 (it has no vectors
    there), a model that cannot read past its block size, and validation text too short."""
    model = bundle.model
    if not hasattr(model, "forward_beyond"):
        raise ConfigError(f"{bundle.name!r} is not a language model over positions (a GPT); the loss per position "
                          "applies to GPT checkpoints.")
    block = int(bundle.model_config.block_size)
    factor, windows = check_length_options(factor, windows, block)
    if factor > 1 and not model.extrapolates:
        raise ConfigError(
            f"{bundle.name!r} has learned positions: one trained vector for each position 0 .. {block - 1} and none "
            f"after, so its loss past {block} cannot be computed. Use factor 1 to see its loss inside the trained "
            "context, or train it with sinusoidal, RoPE, ALiBi or no positions (model.pos_encoding).")
    _, prep, _ = prepare_data(bundle, workspace)
    val = getattr(prep.payload, "val", None)
    if not isinstance(val, Tensor) or val.dim() != 1:
        raise DataError(f"{bundle.name!r} has no validation token stream to read positions from.")
    length = factor * block
    if len(val) < length + 2:
        raise DataError(f"The validation text of {bundle.name!r} has {len(val):,} tokens; {length + 2:,} are needed "
                        f"for windows of {length:,} positions. Use a smaller factor.")
    loss = loss_by_position(model, val, length, windows)
    return PositionLoss(bundle.name, block, length, [round(v, 4) for v in loss])
