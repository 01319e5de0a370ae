"""A preset resolved through the family registry into a typed run: :func:`resolve_run` -> :class:`RunSpec`.

Beside the registry, not in :mod:`playground.training.config`: the families' adapters import that
module, and resolving a preset asks the families (their config and data dataclasses, their sizes).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from playground import limits
from playground.config import (
    Preset,
    apply_overrides,
    build_dataclass,
    load_preset,
    parse_overrides,
)
from playground.errors import ConfigError
from playground.families import FAMILIES, get_family
from playground.models.base import ModelConfig
from playground.settings import DemoCaps
from playground.training.config import TrainConfig, check_model_values, preset_sections
from playground.training.trackers import TRACKERS, LogConfig, check_tracker


@dataclass
class RunSpec:
    """A preset resolved into typed sections; `model` stays raw until the data fixes vocab sizes."""

    preset: Preset
    train: TrainConfig
    data: Any  # the family adapter's data config dataclass
    log: LogConfig = dataclasses.field(default_factory=LogConfig)  # where the run also reports

    @property
    def family(self) -> str:
        return self.preset.family

    @property
    def name(self) -> str:
        return self.preset.name

    def sections(self) -> dict[str, Any]:
        """The preset as plain data (what a bundle stores to resume or reproduce the run)."""
        return preset_sections(self.preset)


def resolve_run(preset: Preset | str, overrides: dict[str, Any] | list[str] | None = None,
                caps: DemoCaps | None = None, check_steps: bool = True) -> RunSpec:
    """Apply overrides and type-check the `[data]`, `[train]`, `[model]` and `[log]` sections.

    Every size is checked against `caps` (default FULL_CAPS) before anything is loaded or built;
    `check_steps=False` leaves train.max_steps to the caller (a server that caps it says so).
    """
    if isinstance(preset, str):
        preset = load_preset(preset)
    if isinstance(overrides, list):
        overrides = parse_overrides(overrides)
    if overrides:
        preset = apply_overrides(preset, overrides)
    family = FAMILIES.get(preset.family)
    if family is None:
        raise ConfigError(f"Unknown family {preset.family!r}; choose one of: {', '.join(FAMILIES)}.")
    check_model_values(family.config_cls, preset.model)
    data: Any = build_dataclass(family.adapter.data_config_cls, preset.data, "data")
    train = build_dataclass(TrainConfig, preset.train, "train")
    spec = RunSpec(preset=preset, train=train, data=data, log=build_dataclass(LogConfig, preset.log, "log"))
    check_run_sizes(spec, caps, check_steps)
    return spec


def check_run_sizes(spec: RunSpec, caps: DemoCaps | None = None, check_steps: bool = True) -> None:
    """TooBigError unless `[train]`, `[data]` and the `[model]` known so far fit `caps` (default FULL_CAPS)."""
    limits.check_train_config(spec.train, caps, check_steps=check_steps)
    check_tracker(spec.log, caps.trackers if caps is not None else TRACKERS)
    limits.check_data_config(spec.data, caps)
    data = limits.check_data_memory(spec.data, caps)  # generated pairs count against the run's memory too
    limits.check_model_values(spec.family, check_model_values(get_family_config(spec.family), spec.preset.model),
                              caps, spec.train.batch_size, spec.train.optimizer, extra_bytes=data)


def get_family_config(family: str) -> type[ModelConfig]:
    """The `[model]` config dataclass of `family`."""
    return get_family(family).config_cls


__all__ = ["RunSpec", "check_run_sizes", "get_family_config", "resolve_run"]
