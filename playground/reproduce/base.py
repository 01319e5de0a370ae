"""A claim of the lecture notes as an experiment: its runs (a recipe), what is measured, the
numbers compared with the paper's, and a verdict computed from them.

`Claim.run(workspace, stop)` trains the recipe's runs one after the other and yields
:class:`ClaimProgress` events, then one :class:`ClaimResult`; a stop (between runs or inside a
training) ends it with a progress event marked stopped and no result. `Claim.shipped()` reads
the result that ships in `playground/reproduce/results/NAME.json`.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import platform
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from playground.errors import NotFoundError, PlaygroundError
from playground.reproduce import measure
from playground.reproduce.recipe import EXPERIMENTS_DIR, Recipe, load_recipe
from playground.stopping import StopFlag, is_stopped
from playground.training.engine import TrainResult, train
from playground.training.spec import resolve_run
from playground.workspace import Workspace

RESULTS_DIR = Path(__file__).parent / "results"

Numbers = dict[str, Any]
Runs = dict[str, dict[str, Any]]


@dataclass(frozen=True)
class Verdict:
    """Whether the claim holds here (None: the runs cannot tell) and one line saying why, in numbers."""

    holds: bool | None
    text: str


@dataclass(frozen=True)
class ChartSpec:
    """How a claim's chart data (columns x, y, series) is drawn: axis titles, line or bars, an
    optional vertical rule (e.g. the trained context length) and whether x is a category."""

    x_title: str
    y_title: str
    mark: str = "line"  # "line" | "bar"
    rule: float | None = None
    rule_label: str = ""
    x_ordinal: bool = False


@dataclass(frozen=True)
class ClaimProgress:
    """Where a claim's re-run is: run `index` of `n_runs` at `step` of `max_steps`."""

    claim: str
    run: str
    index: int
    n_runs: int
    step: int
    max_steps: int
    message: str = ""
    stopped: bool = False

    @property
    def fraction(self) -> float:
        """Share of the whole claim done (every run counts the same)."""
        return min(1.0, (self.index + self.step / max(1, self.max_steps)) / max(1, self.n_runs))


@dataclass
class ClaimResult:
    """A finished claim: per-run data, the claim's numbers, its table, chart data and verdict."""

    claim: str
    numbers: Numbers
    table: pd.DataFrame
    chart: pd.DataFrame
    verdict: str
    holds: bool | None
    meta: dict[str, Any] = field(default_factory=dict)  # recipe hash, machine, wall time, date, quick
    runs: Runs = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """What ships: meta, runs and numbers (the table, chart and verdict are recomputed on load)."""
        return {"claim": self.claim, **self.meta, "runs": self.runs, "numbers": self.numbers,
                "verdict": self.verdict, "holds": self.holds}


@dataclass(frozen=True)
class Claim:
    """One claim: the text shown, the experiment that tests it and how its numbers are judged.

    `summarise(runs) -> numbers`, `judge(numbers) -> Verdict`, `tabulate(runs, numbers) -> table`
    and `chart_data(runs) -> frame of x, y, series` are plain functions (tested on synthetic
    numbers); `chart` says how playground.charts.reproduce draws that frame; `extra` names the
    measurement added to each run (measure.EXTRAS).
    """

    name: str
    title: str
    claim: str
    paper: str
    citation: str
    summarise: Callable[[Runs], Numbers]
    judge: Callable[[Numbers], Verdict]
    tabulate: Callable[[Runs, Numbers], pd.DataFrame]
    chart_data: Callable[[Runs], pd.DataFrame]
    chart: ChartSpec
    extra: str | None = None
    note: str = ""  # e.g. how the recipe is reduced from the paper's or the full preset

    @property
    def preset(self) -> Path:
        """The experiment file."""
        return EXPERIMENTS_DIR / f"{self.name}.toml"

    def recipe(self) -> Recipe:
        """The runs of this claim's experiment file."""
        return load_recipe(self.name)

    def result_path(self, results_dir: Path = RESULTS_DIR) -> Path:
        return Path(results_dir) / f"{self.name}.json"

    def result_from(self, data: dict[str, Any]) -> ClaimResult:
        """A ClaimResult from stored runs: numbers, verdict, table and chart recomputed."""
        runs = data["runs"]
        numbers = self.summarise(runs)
        verdict = self.judge(numbers)
        meta = {k: v for k, v in data.items() if k not in ("claim", "runs", "numbers", "verdict", "holds")}
        return ClaimResult(self.name, numbers, self.tabulate(runs, numbers), self.chart_data(runs), verdict.text,
                           verdict.holds, meta, runs)

    def shipped(self, results_dir: Path = RESULTS_DIR) -> ClaimResult:
        """The result that ships with the app (NotFoundError when there is none yet)."""
        path = self.result_path(results_dir)
        if not path.is_file():
            raise NotFoundError(f"No shipped result for {self.name!r}; re-run it (python -m playground reproduce {self.name}).")
        return self.result_from(json.loads(path.read_text(encoding="utf-8")))

    def run(self, workspace: Workspace, stop: StopFlag = None, *, quick: bool = False, device: str = "cpu",
            limits: Any | None = None, max_steps_cap: int | None = None, policy: Any | None = None
            ) -> Iterator[ClaimProgress | ClaimResult]:
        """Train every run of the recipe, measure it, and yield progress then the result.

        Runs are saved in `workspace` as `reproduce-<claim>-<run>`. `quick` applies the recipe's
        [quick] overrides (tests). Device cpu by default: the shipped numbers are the CPU's.
        """
        recipe = self.recipe()
        started = time.perf_counter()
        runs: Runs = {}
        n = len(recipe.runs)
        for i, r in enumerate(recipe.runs):
            if is_stopped(stop):
                yield ClaimProgress(self.name, r.name, i, n, 0, 1, "stopped before this run", stopped=True)
                return
            preset = r.resolved(recipe.quick if quick else None)
            spec = resolve_run(preset)
            name = f"reproduce-{self.name}-{r.name}"
            t0 = time.perf_counter()
            events = []
            gen = train(preset, workspace, name, stop=stop, device=device, limits=limits,
                        max_steps_cap=max_steps_cap, policy=policy)
            try:
                for ev in gen:
                    events.append(ev)
                    if ev.kind in ("start", "step", "eval"):
                        loss = ev.val_loss if ev.kind == "eval" else ev.train_loss
                        text = f"{r.label}: " + (ev.message if ev.kind == "start" else f"loss {loss:.3f}")
                        yield ClaimProgress(self.name, r.name, i, n, ev.step, ev.max_steps, text)
            finally:
                gen.close()
            last = events[-1]
            if last.kind == "stopped":
                yield ClaimProgress(self.name, r.name, i, n, last.step, last.max_steps,
                                    f"stopped in run {r.label!r} at step {last.step}", stopped=True)
                return
            result = TrainResult(name, last.step, last.kind, last.val_loss, last.metrics, events)
            runs[r.name] = {"label": r.label, "final": measure.final_metrics(result),
                            "curve": measure.val_curve(result)}
            if self.extra is not None:
                yield ClaimProgress(self.name, r.name, i, n, last.step, last.max_steps, f"{r.label}: measuring")
                runs[r.name].update(measure.EXTRAS[self.extra](spec, workspace, name, result))
            runs[r.name]["wall_s"] = round(time.perf_counter() - t0, 1)
        meta = {"recipe_hash": recipe.hash(), "recipe": recipe.to_dict(), "quick": quick, "machine": machine(device),
                "wall_s": round(time.perf_counter() - started, 1),
                "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}
        yield self.result_from({"claim": self.name, **meta, "runs": runs})


def machine(device: str = "cpu") -> dict[str, Any]:
    """Where a result was computed: CPU model, cores, torch's threads, torch version, device."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "threads": torch.get_num_threads(), "torch": torch.__version__,
            "python": platform.python_version(), "device": device}


def save_result(result: ClaimResult, path: Path) -> Path:
    """Write `result` as JSON (what ships), atomically."""
    if result.meta.get("quick"):
        raise PlaygroundError("A --quick result is a smoke test, not a result to ship.")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(result.to_json(), indent=1, sort_keys=False) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path
