"""Training configuration: the typed `[train]` section, `[model]` values checked against a family's
config, presets as plain data and as TOML (run specs: :mod:`playground.training.spec`).

A preset's `[model]` keys go to the family's config dataclass (playground.models), `[data]` to
the family adapter's data config (playground.training.data), `[train]` to :class:`TrainConfig`.
Unknown keys and values of the wrong type raise ConfigError naming the key and the valid choices.
"""
from __future__ import annotations

import dataclasses
import math
import typing
from dataclasses import dataclass
from typing import Any, Literal

from playground.config import Preset, coerce
from playground.errors import ConfigError
from playground.models.base import C, ModelConfig

SCHEDULES = ("constant", "cosine", "inverse_sqrt")
OPTIMIZERS = ("adamw", "adam", "sgd", "muon")
PRECISIONS = ("auto", "fp32", "bf16")


@dataclass
class TrainConfig:
    """The `[train]` section. Steps count optimizer updates (one update = grad_accum micro-batches).

    lr schedules (step s counted from 0; see playground.training.schedules):
    - constant: lr, after a linear warmup of warmup_steps;
    - cosine: linear warmup to lr, cosine decay to min_lr over decay_steps (0 = max_steps), then min_lr;
    - inverse_sqrt: the Transformer paper's lr · d^-0.5 · min(t^-0.5, t · w^-1.5), t = s + 1,
      d = the model's d_model; here `lr` is the paper's scale factor (1.0 in the paper).
    """

    max_steps: int = 2000
    batch_size: int = 12  # sequences / images / pairs per micro-batch, summed over processes
    grad_accum: int = 1  # micro-batches per optimizer step
    optimizer: Literal["adamw", "adam", "sgd", "muon"] = "adamw"  # muon: Muon on hidden matrices + AdamW
    lr: float = 1e-3
    min_lr: float = 1e-4
    schedule: Literal["constant", "cosine", "inverse_sqrt"] = "cosine"
    warmup_steps: int = 100
    decay_steps: int = 0  # cosine: 0 = max_steps
    beta1: float = 0.9
    beta2: float = 0.99
    eps: float = 1e-8
    weight_decay: float = 0.1  # AdamW: on matrices and embeddings only (not biases / norms)
    grad_clip: float = 1.0  # max global grad norm; 0 = off
    muon_lr: float = 0.02  # optimizer = muon: lr of the hidden matrices (the rest use lr), same schedule
    muon_momentum: float = 0.95  # optimizer = muon: Nesterov momentum of the hidden matrices
    muon_weight_decay: float = 0.0  # optimizer = muon: decoupled decay of the hidden matrices
    muon_ns_steps: int = 5  # optimizer = muon: Newton-Schulz iterations per update (fewer: cheaper, rougher)
    label_smoothing: float = 0.0
    eval_interval: int = 250  # evaluate (and checkpoint) every N steps and at the end
    eval_iters: int = 20  # GPT: validation batches per evaluation
    eval_examples: int = 500  # ViT / seq2seq: validation examples per evaluation (0 = all)
    log_interval: int = 10  # a step event every N steps
    seed: int = 1337  # model init, dropout and batch order
    precision: Literal["auto", "fp32", "bf16"] = "auto"  # auto: bf16 autocast on CUDA, fp32 elsewhere
    compile: bool = False  # torch.compile the model (CUDA; slow to start on CPU)
    save_optimizer: bool = True  # keep optimizer state in the bundle so a run can resume exactly
    preview: bool = True  # sample / confusion matrix / translations at each evaluation

    def __post_init__(self) -> None:
        positive = ("max_steps", "batch_size", "grad_accum", "eval_interval", "eval_iters", "log_interval",
                    "muon_ns_steps")
        for key in positive:
            if getattr(self, key) < 1:
                raise ConfigError(f"train.{key} must be >= 1, got {getattr(self, key)}.")
        for key in ("warmup_steps", "decay_steps", "eval_examples"):
            if getattr(self, key) < 0:
                raise ConfigError(f"train.{key} must be >= 0, got {getattr(self, key)}.")
        for key in ("lr", "min_lr", "eps", "weight_decay", "grad_clip", "muon_lr", "muon_weight_decay"):
            value = getattr(self, key)
            if not math.isfinite(value) or value < 0:
                raise ConfigError(f"train.{key} must be a finite number >= 0, got {value}.")
        if self.lr == 0:
            raise ConfigError("train.lr must be > 0.")
        if self.schedule == "inverse_sqrt" and self.warmup_steps < 1:
            raise ConfigError("train.schedule = inverse_sqrt needs train.warmup_steps >= 1.")
        for key in ("beta1", "beta2", "muon_momentum"):
            if not 0.0 <= getattr(self, key) < 1.0:
                raise ConfigError(f"train.{key} must be in [0, 1), got {getattr(self, key)}.")
        if not 0.0 <= self.label_smoothing < 1.0:
            raise ConfigError(f"train.label_smoothing must be in [0, 1), got {self.label_smoothing}.")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def preset_sections(preset: Preset) -> dict[str, Any]:
    """`{"family", "description", "model", "data", "train"}` (and `"log"` when set) of a preset, plain JSON data."""
    out = {"family": preset.family, "description": preset.description,
           "model": dict(preset.model), "data": dict(preset.data), "train": dict(preset.train)}
    if preset.log:
        out["log"] = dict(preset.log)
    return out


def preset_from_sections(sections: dict[str, Any], name: str) -> Preset:
    """Inverse of :func:`preset_sections`."""
    return Preset(name=name, family=sections["family"], description=sections.get("description", ""),
                  model=dict(sections.get("model", {})), data=dict(sections.get("data", {})),
                  train=dict(sections.get("train", {})), log=dict(sections.get("log", {})))


def check_model_values(config_cls: type[ModelConfig], values: dict[str, Any]) -> dict[str, Any]:
    """Coerce `[model]` values by the family config's field types; unknown keys are errors.

    Returns the coerced values. Whole-config checks (d_model % n_head, choices) run when the
    config is built, once the data has fixed vocabulary sizes and image shapes.
    """
    hints = typing.get_type_hints(config_cls)
    fields = [f.name for f in dataclasses.fields(config_cls) if f.init]
    out = {}
    for key, value in values.items():
        if key not in fields:
            raise ConfigError(f"Unknown key model.{key}; valid keys in [model]: {', '.join(sorted(fields))}.")
        out[key] = coerce(value, _value_type(hints[key]), f"model.{key}")
    return out


def _value_type(hint: Any) -> Any:
    """The type a `[model]` value is coerced to: a choice (Literal) as its values' type, since the
    choices themselves are checked with the whole config."""
    if typing.get_origin(hint) is Literal:
        return type(typing.get_args(hint)[0])
    return hint


def build_model_config(config_cls: type[C], values: dict[str, Any], derived: dict[str, Any]) -> C:
    """The family config from preset values plus fields fixed by the data (vocab size, image shape).

    A preset value that contradicts the data is an error naming the key.
    """
    values = check_model_values(config_cls, values)
    for key, value in derived.items():
        if key in values and values[key] != value:
            raise ConfigError(
                f"model.{key} = {values[key]!r} does not match the data ({key} = {value!r}); "
                f"remove model.{key} from the preset: it is set from the data."
            )
    try:
        return config_cls(**{**values, **derived})
    except (TypeError, ValueError) as exc:  # ConfigError is a ValueError
        message = str(exc).replace(f"{config_cls.__name__}.", "model.")
        raise ConfigError(f"[model] {message}") from None


# ---------------------------------------------------------------------------------------------
# TOML out (tomllib only reads): flat tables of scalars and lists, enough for presets.


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
        text = repr(value)
        return text if any(c in text for c in ".en") else text + ".0"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if value is None:
        raise ConfigError("TOML has no null: leave the key out instead.")
    text = str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'"{text}"'


def preset_to_toml(preset: Preset) -> str:
    """TOML text for a preset (round trips through playground.config.parse_preset)."""
    lines = [f"family = {_toml_value(preset.family)}"]
    if preset.description:
        lines.append(f"description = {_toml_value(preset.description)}")
    for section in ("model", "data", "train", "log"):
        if section == "log" and not preset.log:
            continue  # most runs report nowhere else: no empty [log] table in every TOML
        lines.append("")
        lines.append(f"[{section}]")
        for key, value in preset.section(section).items():
            if value is None:
                continue
            lines.append(f"{key} = {_toml_value(value)}")
    return "\n".join(lines) + "\n"
