"""Experiment recipes: `presets/experiments/NAME.toml`, a set of training runs, each a preset
of `presets/` plus overrides.

    [common]                      # every run: a preset and overrides
    preset = "nanogpt-cpu-tiny"
    set = { "model.block_size" = 32, "train.max_steps" = 600 }

    [quick]                       # tests only: scales every run down to seconds
    set = { "train.max_steps" = 4 }

    [[run]]                       # one training run; its own preset/set win over [common]
    name = "learned"
    label = "learned table"
    set = { "model.pos_encoding" = "learned" }

The recipe hash covers every run's resolved preset (the base preset's sections with the
overrides applied, descriptions left out), so editing the experiment file or a base preset
without re-running is detectable against a shipped result.
"""
from __future__ import annotations

import hashlib
import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from playground.config import Preset, apply_overrides, load_preset
from playground.errors import ConfigError, NotFoundError
from playground.settings import REPO_ROOT

EXPERIMENTS_DIR = REPO_ROOT / "presets" / "experiments"


@dataclass(frozen=True)
class RunRecipe:
    """One training run of an experiment: a base preset and `section.key` overrides."""

    name: str
    label: str
    preset: str
    overrides: dict[str, Any] = field(default_factory=dict)

    def resolved(self, quick: dict[str, Any] | None = None) -> Preset:
        """The base preset with this run's overrides (and the quick scale-down, if given)."""
        return apply_overrides(load_preset(self.preset, allow_paths=False), {**self.overrides, **(quick or {})})


@dataclass(frozen=True)
class Recipe:
    """An experiment file: its runs and the test-only quick overrides."""

    name: str
    runs: tuple[RunRecipe, ...]
    quick: dict[str, Any] = field(default_factory=dict)

    def run(self, name: str) -> RunRecipe:
        """The run called `name`."""
        for r in self.runs:
            if r.name == name:
                return r
        raise NotFoundError(f"Experiment {self.name!r} has no run {name!r}; runs: {', '.join(r.name for r in self.runs)}.")

    def hash(self) -> str:
        """sha256 (first 16 hex digits) of every run's resolved sections, descriptions left out."""
        resolved = []
        for r in self.runs:
            p = r.resolved()
            resolved.append({"name": r.name, "family": p.family, "model": p.model, "data": p.data, "train": p.train})
        text = json.dumps({"runs": resolved, "quick": self.quick}, sort_keys=True, default=str)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]

    def to_dict(self) -> dict[str, Any]:
        """Plain data for the shipped result: runs with their presets and overrides."""
        return {"runs": [{"name": r.name, "label": r.label, "preset": r.preset, "overrides": r.overrides}
                         for r in self.runs], "quick": self.quick}


def load_recipe(name: str, directory: Path = EXPERIMENTS_DIR) -> Recipe:
    """Read `presets/experiments/<name>.toml` (a name, never a path: the app passes claim names only)."""
    path = Path(directory) / f"{name}.toml"
    if "/" in name or "\\" in name or not path.is_file():
        raise NotFoundError(f"No experiment {name!r} in presets/experiments/.")
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"Experiment {name!r} is not valid TOML: {exc}.") from exc
    unknown = set(raw) - {"common", "quick", "run", "description"}
    if unknown:
        raise ConfigError(f"Experiment {name!r} has unknown key(s) {sorted(unknown)}; valid: description, [common], [quick], [[run]].")
    common = raw.get("common", {})
    runs = []
    for i, r in enumerate(raw.get("run", [])):
        if "name" not in r:
            raise ConfigError(f"Experiment {name!r}: run {i + 1} needs a name.")
        preset = r.get("preset", common.get("preset"))
        if not preset:
            raise ConfigError(f"Experiment {name!r}: run {r['name']!r} has no preset (set one in [common] or the run).")
        runs.append(RunRecipe(name=str(r["name"]), label=str(r.get("label", r["name"])), preset=str(preset),
                              overrides={**common.get("set", {}), **r.get("set", {})}))
    if not runs:
        raise ConfigError(f"Experiment {name!r} has no [[run]].")
    if len({r.name for r in runs}) != len(runs):
        raise ConfigError(f"Experiment {name!r} has two runs with the same name.")
    return Recipe(name=name, runs=tuple(runs), quick=dict(raw.get("quick", {}).get("set", {})))
