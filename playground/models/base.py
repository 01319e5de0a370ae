"""Shared bits of every model family: the config base class and the model base class."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, TypeVar

import torch
from torch import nn

from playground.errors import ConfigError

C = TypeVar("C", bound="ModelConfig")
V = TypeVar("V")


def lookup(table: Mapping[str, V], name: str, what: str) -> V:
    """``table[name]``, or a ValueError naming the valid choices (every by-name option of a model:
    norm, ffn, positional encoding, attention score, cell)."""
    try:
        return table[name]
    except KeyError:
        raise ValueError(f"unknown {what} {name!r}; choose one of {tuple(table)}") from None


@dataclasses.dataclass
class ModelConfig:
    """Base of the family configs: a flat dataclass of JSON scalars with a JSON round trip."""

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls: type[C], d: dict[str, Any]) -> C:
        names = [f.name for f in dataclasses.fields(cls)]
        unknown = sorted(set(d) - set(names))
        if unknown:
            raise ConfigError(f"Unknown {cls.__name__} key(s) {unknown}; valid keys: {names}.")
        values = dict(d)
        for f in dataclasses.fields(cls):
            if f.name in values:
                values[f.name] = _checked(cls.__name__, f.name, str(f.type), values[f.name])
        return cls(**values)

    def _check_choice(self, field: str, choices: Iterable[str]) -> None:
        value, choices = getattr(self, field), tuple(choices)
        if value not in choices:
            raise ConfigError(f"{type(self).__name__}.{field} = {value!r} is not one of {list(choices)}.")

    def _check_positive(self, *fields: str) -> None:
        for field in fields:
            if getattr(self, field) <= 0:
                raise ConfigError(f"{type(self).__name__}.{field} must be positive, got {getattr(self, field)}.")

    def _check_heads(self, d_model: int, n_head: int) -> None:
        if d_model % n_head:
            raise ConfigError(f"{type(self).__name__}: d_model {d_model} must be divisible by n_head {n_head}.")

    def _check_dropouts(self, *fields: str) -> None:
        for field in fields:
            if not 0.0 <= getattr(self, field) < 1.0:
                raise ConfigError(f"{type(self).__name__}.{field} must be in [0, 1), got {getattr(self, field)}.")


_SCALARS = {"int": int, "float": float, "bool": bool, "str": str}


def _checked(owner: str, name: str, type_name: str, value: Any) -> Any:
    """``value`` if it has the field's JSON scalar type (an int is accepted for a float)."""
    expected = _SCALARS.get("str" if type_name.startswith("Literal[") else type_name)  # a choice: checked by the config
    if expected is None:
        return value
    if expected is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, expected) and (expected is bool or not isinstance(value, bool)):
        return value
    raise ConfigError(f"{owner}.{name} must be {type_name}, got {value!r} ({type(value).__name__}).")


class ModelBase(nn.Module):
    """nn.Module with a parameter count (tied weights counted once) and the family's own init.

    A family's ``__init__`` builds its modules (torch's default init) and then calls
    :meth:`init_family_weights`; :func:`playground.models.init.init_weights` redoes both from a
    run's own ``torch.Generator``.
    """

    # the Linear layers that map to the output space (logits, classes), by module name: Muon leaves
    # them to AdamW (playground.training.optim.muon_param_groups)
    output_layers: ClassVar[tuple[str, ...]] = ()

    def num_parameters(self, trainable_only: bool = False) -> int:
        return sum(p.numel() for p in self.parameters() if p.requires_grad or not trainable_only)

    def init_family_weights(self, generator: torch.Generator | None = None) -> None:
        """The family's init on top of torch's per-module defaults (none here); draws from
        ``generator``, or torch's global RNG when None."""


def init_transformer_weights(model: nn.Module, n_residual_layers: int, std: float = 0.02,
                             generator: torch.Generator | None = None) -> None:
    """GPT-2 init: N(0, 0.02) for Linear/Embedding, zero biases, residual output projections
    (``out_proj``, ``mlp.proj``) scaled by 1/sqrt(n_residual_layers); norm weights stay 1.
    Draws from ``generator`` (torch's global RNG when None)."""
    for name, p in model.named_parameters():
        if p.dim() >= 2:
            scaled = (name.endswith("out_proj.weight") or name.endswith("mlp.proj.weight")
                      or ".mlp.experts." in name and name.endswith(".proj.weight"))  # a mixture's experts
            nn.init.normal_(p, 0.0, std / (n_residual_layers**0.5) if scaled else std, generator=generator)
        elif name.endswith(".bias"):
            nn.init.zeros_(p)

