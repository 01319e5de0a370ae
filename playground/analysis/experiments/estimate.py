"""How long an experiment will take, said before it starts.

Method: one held-out example is timed on this machine with the run's options (the adversarial
search twice, at CALIBRATION_STEPS and 2 x CALIBRATION_STEPS Adam steps, so the per-step cost
and the fixed per-example cost come apart); the run's estimate is

    draw_s + n x (fixed_s + steps x step_s)      adversarial search
    draw_s + n x example_s                        the other per-example experiments

where draw_s is the time drawing the held-out example(s) took. Experiments that retrain models
or score whole validation splits (uniform, seeds, diagnostic) get no estimate.
"""
from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass
from typing import Any

from playground.analysis.experiments.core import drive
from playground.analysis.experiments.data import load_held_out
from playground.analysis.experiments.runner import iter_experiment
from playground.bundle import Bundle
from playground.workspace import Workspace

TIMED = ("agreement", "permutation", "adversarial", "erasure", "aopc", "pointing")
CALIBRATION_STEPS = 5  # Adam steps of the shorter timed adversarial search (the longer one has twice as many)


@dataclass(frozen=True)
class Calibration:
    """Timings of one example of an experiment on this machine."""

    experiment: str
    draw_s: float  # drawing the held-out examples
    example_s: float  # one example (adversarial: its fixed part, without the Adam steps)
    step_s: float = 0.0  # adversarial: one Adam step (k adversaries)

    def seconds(self, n: int, steps: int | None = None) -> float:
        """Expected seconds of a run over `n` examples (`steps` Adam steps for the adversarial search)."""
        per = self.example_s + (self.step_s * int(steps or 0) if self.experiment == "adversarial" else 0.0)
        return self.draw_s + max(0, int(n)) * per

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def calibrate(name: str, bundle: Bundle, options: Any, workspace: Workspace | None = None) -> Calibration | None:
    """Time one example of experiment `name` on `bundle` with `options` (None: not estimated).

    The model of `bundle` should be a private copy: the interventions hook into it.
    """
    if name not in TIMED:
        return None
    one = dataclasses.replace(options, n=1)
    t0 = time.perf_counter()
    held = load_held_out(bundle, 1, one.seed, workspace)
    draw_s = time.perf_counter() - t0

    def timed(opts: Any) -> float:
        start = time.perf_counter()
        drive(iter_experiment(name, bundle, opts, workspace, held=held))
        return time.perf_counter() - start

    if name != "adversarial":
        return Calibration(name, draw_s, timed(one))
    timed(dataclasses.replace(one, steps=1))  # warm-up: the first Adam step imports and allocates
    short = timed(dataclasses.replace(one, steps=CALIBRATION_STEPS))
    long = timed(dataclasses.replace(one, steps=2 * CALIBRATION_STEPS))
    return Calibration(name, draw_s, *split_steps(short, long, CALIBRATION_STEPS))


def split_steps(short_s: float, long_s: float, steps: int) -> tuple[float, float]:
    """(fixed seconds, seconds per step) from runs of `steps` and `2 * steps` steps.

    Timing noise can make the longer run look no slower; then every second counts as steps.
    """
    step_s = (long_s - short_s) / steps
    if step_s <= 0:
        return 0.0, long_s / (2 * steps)
    return max(0.0, short_s - steps * step_s), step_s


def format_seconds(seconds: float) -> str:
    """'about 40 s', 'about 3 min', 'about 1.5 h' (below 2 minutes: rounded up to 5 s)."""
    s = max(0.0, float(seconds))
    if s < 120:
        return f"about {max(5, 5 * math.ceil(s / 5))} s"
    if s < 3600:
        return f"about {round(s / 60)} min"
    return f"about {s / 3600:.1f} h"


__all__ = ["CALIBRATION_STEPS", "TIMED", "Calibration", "calibrate", "format_seconds", "split_steps"]
