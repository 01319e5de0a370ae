"""Typed configs from TOML presets, plus `section.key=value` overrides coerced by field type.

A preset is `presets/<name>.toml` with top-level `family` and `description` and the sections
`[model]`, `[data]` and `[train]`. Unknown keys are errors that name the key and the valid ones.
"""
from __future__ import annotations

import dataclasses
import math
import tomllib
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from playground.errors import ConfigError, NotFoundError
from playground.settings import REPO_ROOT

PRESETS_DIR = REPO_ROOT / "presets"
SECTIONS = ("model", "data", "train", "log")  # [log]: where the run also reports (playground.training.trackers)
T = TypeVar("T")


@dataclass
class Preset:
    """A preset as written: its name, family and the raw `[model]`, `[data]`, `[train]` and `[log]` tables."""

    name: str
    family: str
    description: str = ""
    model: dict[str, Any] = field(default_factory=dict)
    data: dict[str, Any] = field(default_factory=dict)
    train: dict[str, Any] = field(default_factory=dict)
    log: dict[str, Any] = field(default_factory=dict)

    def section(self, name: str) -> dict[str, Any]:
        return getattr(self, name)


def list_presets(presets_dir: Path = PRESETS_DIR) -> list[str]:
    """Names of the presets shipped in `presets/`."""
    return sorted(p.stem for p in Path(presets_dir).glob("*.toml"))


def load_preset(name_or_path: str | Path, presets_dir: Path = PRESETS_DIR, allow_paths: bool = True) -> Preset:
    """Read a preset by name (from `presets/`) or, where `allow_paths` (the CLI), from a .toml path."""
    path = Path(name_or_path)
    if not allow_paths and str(name_or_path) not in list_presets(presets_dir):
        raise NotFoundError(f"No preset {str(name_or_path)!r} (a path is not accepted on a shared server); "
                            f"choose one of: {', '.join(list_presets(presets_dir))}.")
    if path.suffix != ".toml":
        path = Path(presets_dir) / f"{name_or_path}.toml"
    if not path.is_file():
        raise NotFoundError(f"No preset {str(name_or_path)!r}; choose one of: {', '.join(list_presets(presets_dir))}.")
    return parse_preset(path.read_text(encoding="utf-8"), name=path.stem)


def parse_preset(text: str, name: str = "custom") -> Preset:
    """Parse preset TOML text (as edited in the Train tab) into a Preset."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"Preset {name!r} is not valid TOML: {exc}.") from exc
    except RecursionError:  # tomllib recurses once per nested array or inline table
        raise ConfigError(f"Preset {name!r} nests arrays or tables too deeply to read; a preset's values are "
                          "numbers, strings, booleans and flat lists.") from None
    unknown = set(raw) - {"family", "description", *SECTIONS}
    if unknown:
        raise ConfigError(
            f"Preset {name!r} has unknown top-level key(s) {sorted(unknown)}; "
            f"valid: family, description, {', '.join(f'[{s}]' for s in SECTIONS)}."
        )
    if "family" not in raw:
        raise ConfigError(f"Preset {name!r} needs a top-level `family = \"gpt\"` (or vit, rnn_seq2seq, transformer_seq2seq).")
    for s in SECTIONS:
        if not isinstance(raw.get(s, {}), dict):
            raise ConfigError(f"Preset {name!r}: `{s}` must be a [{s}] table.")
    return Preset(
        name=name,
        family=str(raw["family"]),
        description=str(raw.get("description", "")),
        **{s: dict(raw.get(s, {})) for s in SECTIONS},
    )


def parse_overrides(items: list[str] | None) -> dict[str, str]:
    """`["model.n_layer=4", "train.lr=3e-4"]` -> `{"model.n_layer": "4", ...}`."""
    out: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"Override {item!r} is not of the form section.key=value (e.g. model.n_layer=4).")
        out[key.strip()] = value.strip()
    return out


def apply_overrides(preset: Preset, overrides: dict[str, Any]) -> Preset:
    """A copy of `preset` with `section.key` values set (strings are parsed later by field type)."""
    new = dataclasses.replace(preset, model=dict(preset.model), data=dict(preset.data), train=dict(preset.train),
                              log=dict(preset.log))
    for dotted, value in overrides.items():
        section, _, key = dotted.partition(".")
        if section not in SECTIONS or not key:
            raise ConfigError(f"Override key {dotted!r} must start with one of {', '.join(s + '.' for s in SECTIONS)}.")
        new.section(section)[key] = value
    return new


def build_dataclass(cls: type[T], values: dict[str, Any], where: str) -> T:
    """Instantiate dataclass `cls` from `values`, coercing each by its field type.

    Unknown keys and values that do not fit the field's type raise ConfigError naming the key,
    the expected type and (for literals) the valid choices.
    """
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = [k for k in values if k not in fields]
    if unknown:
        raise ConfigError(f"Unknown key {where}.{unknown[0]}; valid keys in [{where}]: {', '.join(sorted(fields))}.")
    kwargs = {k: coerce(v, hints[k], f"{where}.{k}") for k, v in values.items()}
    try:
        return cls(**kwargs)
    except ConfigError:
        raise
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"[{where}]: {exc}") from exc


def _shown(value: object) -> str:
    """A value as an error message shows it: its repr, cut to 40 characters."""
    text = repr(value)
    return text if len(text) <= 40 else text[:30] + f"... ({len(text):,} characters)"


def coerce(value: Any, typ: Any, key: str) -> Any:
    """Convert `value` (often a string from the CLI) to `typ`; ConfigError if it does not fit."""
    origin = typing.get_origin(typ)
    args = typing.get_args(typ)
    if typ is Any:
        return value
    if origin is typing.Literal:
        for choice in args:
            try:
                if coerce(value, type(choice), key) == choice:
                    return choice
            except ConfigError:
                continue
        raise ConfigError(f"{key} = {value!r} is not valid; choose one of: {', '.join(map(str, args))}.")
    if origin in (typing.Union, types.UnionType):
        if value is None or (isinstance(value, str) and value.lower() in ("none", "null", "")):
            if type(None) in args:
                return None
        errors = []
        for arg in (a for a in args if a is not type(None)):
            try:
                return coerce(value, arg, key)
            except ConfigError as exc:
                errors.append(str(exc))
        raise ConfigError(errors[0] if errors else f"{key} = {value!r} is not valid.")
    if origin in (list, tuple):
        items = value
        if isinstance(value, str):
            items = [v.strip() for v in value.strip("[]()").split(",") if v.strip()]
        elem = args[0] if args else Any
        out = [coerce(v, elem, key) for v in items]
        return tuple(out) if origin is tuple else out
    if typ is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "1", "yes", "on"):
            return True
        if isinstance(value, str) and value.lower() in ("false", "0", "no", "off"):
            return False
        raise ConfigError(f"{key} = {value!r} is not a boolean; use true or false.")
    if typ is int:
        if isinstance(value, bool):
            raise ConfigError(f"{key} = {value!r} is not an integer.")
        try:
            f = float(value)
        except OverflowError:  # an int past float's range (10**400 from TOML or the API)
            raise ConfigError(f"{key} = {_shown(value)} is far too large for any setting.") from None
        except (TypeError, ValueError):
            raise ConfigError(f"{key} = {_shown(value)} is not an integer.") from None
        if math.isinf(f):
            raise ConfigError(f"{key} = {_shown(value)} is far too large for any setting.")
        if not f.is_integer():
            raise ConfigError(f"{key} = {_shown(value)} is not an integer.")
        return int(f)
    if typ is float:
        try:
            return float(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{key} = {value!r} is not a number.") from None
    if typ is str:
        return str(value)
    if dataclasses.is_dataclass(typ) and isinstance(value, dict):
        return build_dataclass(typ, value, key)
    return value
