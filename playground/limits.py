"""Size limits checked before anything is allocated: every number a user can type is bounded.

The caps live on :class:`playground.settings.DemoCaps` (FULL_CAPS for the CLI and a full server,
DEMO_CAPS for a public one). Each ``check_*`` function raises :class:`TooBigError` whose message
says the number, the cap, and what to do. Model sizes are estimated from the config alone
(:func:`count_parameters`, :func:`estimate_training_bytes`), so a d_model of a million is refused
without building anything; each family says how its model's size follows from its config
(:class:`ModelSizes`, ``Family.sizes``).

Pure logic: no gradio, no torch at import time.
"""
from __future__ import annotations

import contextlib
import copy
import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from playground.errors import ConfigError, PlaygroundError, TooBigError
from playground.settings import FULL_CAPS, DemoCaps

if TYPE_CHECKING:  # typing only: the registry and the model configs import torch
    from playground.families.base import Family
    from playground.models.base import ModelConfig

# Fields FULL_CAPS leaves None (the UI reads a value there as a demo cap): their finite bounds.
UNCAPPED_BOUNDS: dict[str, int] = {
    "max_corpus_chars": 200_000_000,
    "max_vocab_size": 65_536,
    "max_train_steps": 1_000_000,
    "max_new_tokens": 2000,
    "max_extend_tokens": 4096,  # prompt + new tokens when generation goes past block_size
    "max_analysis_examples": 10_000,
    "max_ig_steps": 800,
}
FLOAT_BYTES = 4  # training runs in fp32 (bf16 autocast only shrinks activations)
GB = 1e9


def cap(caps: DemoCaps | None, field: str) -> float:
    """The limit `field` has on this server: the caps' value, else FULL_CAPS', else UNCAPPED_BOUNDS."""
    for source in (caps, FULL_CAPS):
        value = getattr(source, field, None) if source is not None else None
        if value is not None:
            return value
    if field in UNCAPPED_BOUNDS:
        return UNCAPPED_BOUNDS[field]
    raise KeyError(f"no cap called {field!r}")


def _whole(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (isinstance(value, float) and not value.is_integer()):
        raise ConfigError(f"{what} must be a whole number, got {value!r}.")
    return int(value)


def check_count(value: Any, field: str, caps: DemoCaps | None, what: str, minimum: int = 0, hint: str = "") -> int:
    """`value` as an int in [minimum, cap]; TooBigError (above) or ConfigError (below) otherwise."""
    number = _whole(value, what)
    if number < minimum:
        raise ConfigError(f"{what} must be at least {minimum:,}, got {number:,}.")
    limit = int(cap(caps, field))
    if number > limit:
        raise TooBigError(f"{what} {number:,} is above this server's limit of {limit:,}; "
                          f"{hint or f'use {limit:,} or less'}.")
    return number


def check_seed(value: Any, caps: DemoCaps | None = None, what: str = "seed") -> int:
    """A seed in 0..max_seed (what torch.Generator.manual_seed takes, and every seed mix here)."""
    number = _whole(value, what)
    limit = int(cap(caps, "max_seed"))
    if not 0 <= number <= limit:
        raise ConfigError(f"{what} must be between 0 and {limit:,} (2**63 - 1), got {number:,}; "
                          "pick a smaller whole number such as 0 or 1337.")
    return number


def check_text(text: str | None, field: str, caps: DemoCaps | None, what: str) -> str:
    """`text` unless longer than the cap `field` (in characters); TooBigError saying how to shorten it."""
    text = text or ""
    limit = int(cap(caps, field))
    if len(text) > limit:
        raise TooBigError(f"{what} has {len(text):,} characters; this server takes at most {limit:,}. "
                          "Shorten it (or split it into parts).")
    return text


# -- model sizes, from the config alone ----------------------------------------------------------

class ModelSizes(ABC):
    """How big a family's model is, from its config alone: what the size limits ask a family.

    Each family implements it beside its model (``playground/families/<family>/sizes.py``) and
    holds it as ``Family.sizes``; nothing here builds a module.
    """

    width_field: str  # the config field that sets the model's width ("d_model", "hidden"): what a tip narrows
    seq_fields: tuple[str, ...] = ()  # [model] keys that are sequence lengths (capped by max_seq_len)

    @abstractmethod
    def count_parameters(self, config: ModelConfig) -> int:
        """Parameters of the model `config` builds (tied weights once)."""

    @abstractmethod
    def sequence_length(self, config: ModelConfig, seq_len: int | None = None) -> int:
        """The longest sequence a training batch holds; `seq_len` is the data's where the config does not fix it."""

    @abstractmethod
    def activation_floats(self, config: ModelConfig, batch: int, seq: int) -> int:
        """A rough, generous count of the floats autograd keeps for one micro-batch (forward + backward)."""

    @abstractmethod
    def width_step(self, config: ModelConfig) -> int:
        """The step a suggested width moves in (so that it still divides into heads / directions)."""

    def train_flops_per_unit(self, config: ModelConfig) -> int | None:
        """Floating-point operations of one training step per token / sample (forward and backward),
        for model FLOPs utilisation; None where the family has no estimate."""
        return None

    def train_flops_parts(self, config: ModelConfig) -> dict[str, int] | None:
        """:meth:`train_flops_per_unit` in its named terms; None where the family has no estimate."""
        return None

    def notes(self, config: ModelConfig) -> list[str]:
        """Short facts about the model's size worth a line when training starts (none by default)."""
        return []

    def kv_cache_table(self, config: ModelConfig, length: int, batch: int = 1,
                       element_size: int = 4) -> list[dict[str, Any]] | None:
        """Bytes of a decoder's KV cache after ``length`` tokens, one row per way of keeping it
        (full multi-head, grouped-query, windowed); None where the family decodes no such cache."""
        return None

    def is_estimable(self, config: ModelConfig) -> bool:
        """Whether the sizes can be estimated (False: the config's own check says what is wrong)."""
        return True

    def longest_sequence(self, payload: Any) -> int | None:
        """The longest sequence of the prepared data (an adapter's payload) where the config does not
        fix it; None where it does."""
        return None


def _family(name: str) -> Family:
    # Function-level: the registry's families hold this module's ModelSizes (a cycle at the top),
    # and limits stays free of torch at import time.
    from playground.families import get_family

    return get_family(name)


def family_sizes(family: str) -> ModelSizes:
    """The sizes of the family called `family`."""
    return _family(family).sizes


def count_parameters(family: str, config: ModelConfig) -> int:
    """Parameters of the model `config` builds (tied weights once), computed without building it."""
    return family_sizes(family).count_parameters(config)


# -- training memory -------------------------------------------------------------------------------

def sequence_length(family: str, config: ModelConfig, seq_len: int | None = None) -> int:
    """The longest sequence a training batch holds: block_size, ViT tokens, max_len, or `seq_len`."""
    return family_sizes(family).sequence_length(config, seq_len)


def optimizer_floats_per_param(optimizer: str) -> int:
    """Optimizer state per parameter: Adam(W) keeps two moments, SGD with momentum one."""
    return 1 if optimizer == "sgd" else 2


def estimate_training_bytes(family: str, config: ModelConfig, batch_size: int, seq_len: int | None = None,
                            optimizer: str = "adamw") -> int:
    """Rough training memory: weights, gradients, optimizer state and one micro-batch's activations."""
    sizes = family_sizes(family)
    params = sizes.count_parameters(config)
    per_param = 2 + optimizer_floats_per_param(optimizer)
    seq = sizes.sequence_length(config, seq_len)
    return FLOAT_BYTES * (per_param * params + sizes.activation_floats(config, batch_size, seq))


# Memory of one generated seq2seq pair while a run prepares it (strings, token lists, the
# tokenizer's encodings): measured 3.4 KB (copy) and 4.4 KB (dates) per pair over 100,000 pairs.
PAIR_BYTES = 6_000


def data_bytes(data: Any) -> int:
    """Memory the prepared data takes where it grows with a number the user types: generated
    seq2seq pairs (`data.n`); 0 for the rest (corpora and uploads are capped in characters / bytes)."""
    n = getattr(data, "n", None)
    if hasattr(data, "pairs") and isinstance(n, int) and not isinstance(n, bool) and n > 0:
        return n * PAIR_BYTES
    return 0


def check_data_memory(data: Any, caps: DemoCaps | None = None) -> int:
    """TooBigError when the data alone would take more than this server's training memory; its bytes."""
    need = data_bytes(data)
    max_gb = cap(caps, "max_train_memory_gb")
    if need > max_gb * GB:
        most = int(max_gb * GB // PAIR_BYTES)
        raise TooBigError(f"data.n = {data.n:,} generated pairs need {_size_words(need)} before training starts; this "
                          f"server allows ~{max_gb:,.1f} GB per run; use data.n ≤ {most:,}.")
    return need


def _size_words(n_bytes: float) -> str:
    n_bytes = min(n_bytes, 10**30)  # a typed 10**400 stays a number a float can hold
    return f"~{n_bytes / GB:,.1f} GB" if n_bytes >= 0.1 * GB else f"~{n_bytes / 1e6:,.0f} MB"


def _fits(family: str, config: Any, batch: int, seq_len: int | None, optimizer: str, caps: DemoCaps | None) -> bool:
    return (count_parameters(family, config) <= cap(caps, "max_params")
            and estimate_training_bytes(family, config, batch, seq_len, optimizer) <= cap(caps, "max_train_memory_gb") * GB)


def _largest(fits: Any, step: int, high: int) -> int | None:
    """The largest multiple of `step` in [step, high] for which `fits(value)` holds (monotone), or None."""
    lo, hi = 1, max(1, high // step)
    if not fits(step):
        return None
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid * step):
            lo = mid
        else:
            hi = mid - 1
    return lo * step


def _suggestion(family: str, config: Any, batch: int, seq_len: int | None, optimizer: str,
                caps: DemoCaps | None) -> str:
    sizes = family_sizes(family)
    field = sizes.width_field
    width = getattr(config, field)
    step = sizes.width_step(config)

    def with_width(value: int) -> bool:
        return _fits(family, _replaced(config, field, value), batch, seq_len, optimizer, caps)

    tips = []
    best = _largest(with_width, step, width)
    if best is not None and best < width:
        tips.append(f"model.{field} ≤ {best:,}")
    if count_parameters(family, config) <= cap(caps, "max_params"):
        best_batch = _largest(lambda b: _fits(family, config, b, seq_len, optimizer, caps), 1, batch)
        if best_batch is not None and best_batch < batch:
            tips.append(f"train.batch_size ≤ {best_batch:,}")
    tips.append("fewer layers" + (", a shorter context" if sizes.seq_fields else "")
                + (" or a smaller vocabulary" if hasattr(config, "vocab_size") else ""))
    return "try " + " or ".join(tips)


def _replaced(config: Any, field: str, value: int) -> Any:
    """A shallow copy of `config` with one field changed, without re-running its checks."""
    clone = copy.copy(config)
    object.__setattr__(clone, field, value)
    return clone


def check_model_size(family: str, model_config: ModelConfig, train_config: Any, caps: DemoCaps | None = None,
                     seq_len: int | None = None, extra_bytes: int = 0) -> int:
    """TooBigError unless the model's parameters and estimated training memory fit this server.

    Returns the parameter count. `seq_len` is the data's longest sequence where the config does
    not fix it (seq2seq); `extra_bytes` is memory the run holds besides the model (its data).
    """
    batch = int(getattr(train_config, "batch_size", 1))
    optimizer = getattr(train_config, "optimizer", "adamw")
    params = count_parameters(family, model_config)
    memory = estimate_training_bytes(family, model_config, batch, seq_len, optimizer) + extra_bytes
    max_params, max_gb = int(cap(caps, "max_params")), cap(caps, "max_train_memory_gb")
    field = family_sizes(family).width_field
    described = f"{field} {getattr(model_config, field):,}"
    if params > max_params:
        raise TooBigError(
            f"This model ({described}) has {params:,} parameters and needs {_size_words(memory)} to train; "
            f"this server allows up to {max_params:,} parameters (~{max_params * 16 / GB:,.1f} GB with Adam); "
            f"{_suggestion(family, model_config, batch, seq_len, optimizer, caps)}.")
    if memory > max_gb * GB:
        raise TooBigError(
            f"Training this model ({described}, {params:,} parameters) with batch_size {batch:,} needs "
            f"{_size_words(memory)}" + (f" (its data {_size_words(extra_bytes)}: fewer data.n helps)" if extra_bytes else "")
            + f"; this server allows ~{max_gb:,.1f} GB per run; "
            f"{_suggestion(family, model_config, batch, seq_len, optimizer, caps)}.")
    return params


# -- configs -----------------------------------------------------------------------------------------

def check_train_config(train: Any, caps: DemoCaps | None = None, check_steps: bool = True) -> None:
    """Steps, batch size, accumulation, evaluation sizes and seed of a TrainConfig."""
    if check_steps:
        check_count(train.max_steps, "max_train_steps", caps, "train.max_steps", 1)
    check_count(train.batch_size, "max_batch_size", caps, "train.batch_size", 1)
    check_count(train.grad_accum, "max_grad_accum", caps, "train.grad_accum", 1)
    check_count(train.eval_iters, "max_eval_batches", caps, "train.eval_iters", 1)
    check_count(train.eval_examples, "max_eval_batches", caps, "train.eval_examples", 0)
    check_count(train.warmup_steps, "max_train_steps", caps, "train.warmup_steps", 0)
    check_count(train.decay_steps, "max_train_steps", caps, "train.decay_steps", 0)
    check_seed(train.seed, caps, "train.seed")
    if getattr(train, "compile", False) and caps is not None and not caps.allow_compile:
        raise ConfigError("train.compile = true is not available on this server (compiling takes minutes of "
                          "a shared server's CPU before the first step); set train.compile = false.")


_ZERO_MEANS_DEFAULT = ("d_ff", "attn_dim")  # 0 = 4 d_model / the hidden size
_WIDTH_FIELDS = ("d_model", "hidden", "emb_dim", "d_ff", "attn_dim", "n_layer", "n_layers", "n_encoder_layers",
                 "n_decoder_layers", "n_head", "patch_size", "image_size", "channels", "n_classes", "vocab_size")


def check_model_values(family: str, values: dict[str, Any], caps: DemoCaps | None = None,
                       batch_size: int = 1, optimizer: str = "adamw", extra_bytes: int = 0) -> None:
    """Before the data is loaded: sequence lengths, and the model size with the sizes known so far.

    Fields the data fixes (vocab size, image shape) take the preset's value or the default.
    """
    spec = _family(family)
    sizes = spec.sizes
    for key in sizes.seq_fields:
        if key in values:
            check_count(values[key], "max_seq_len", caps, f"model.{key}", 1)
    config = config_from_values(family, values)
    if config is None:
        return  # a bad value: the family config's own check says what is wrong
    check_model_size(family, config, _Batch(batch_size, optimizer), caps, extra_bytes=extra_bytes)


def config_from_values(family: str, values: dict[str, Any]) -> ModelConfig | None:
    """The `[model]` config as far as it is known before the data (fields the data fixes take the
    preset's value or the default), built without its checks; None when its sizes cannot be
    estimated (a bad value, which the config's own check names)."""
    spec = _family(family)
    config_cls = spec.config_cls
    config = config_cls.__new__(config_cls)
    for f in dataclasses.fields(config_cls):
        default = f.default if f.default is not dataclasses.MISSING else None
        object.__setattr__(config, f.name, values.get(f.name, default))
    for name in _WIDTH_FIELDS:
        value = getattr(config, name, None)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            return None  # a bad value: the family config's own check says what is wrong
        if value == 0 and name in values and name not in _ZERO_MEANS_DEFAULT:
            raise ConfigError(f"model.{name} must be at least 1, got 0.")
    if getattr(config, "n_head", 1) and getattr(config, "d_model", 0) % max(1, getattr(config, "n_head", 1)):
        return None
    return config if spec.sizes.is_estimable(config) else None


@dataclasses.dataclass
class _Batch:
    batch_size: int
    optimizer: str


def check_data_config(data: Any, caps: DemoCaps | None = None) -> None:
    """Examples, image size, sequence lengths, characters and seed of a family's `[data]`."""
    if hasattr(data, "n"):
        check_count(data.n, "max_examples", caps, "data.n", 0)
    if hasattr(data, "image_size"):
        check_count(data.image_size, "max_image_size", caps, "data.image_size", 1)
    for key in ("min_len", "max_len"):
        if hasattr(data, key):
            check_count(getattr(data, key), "max_seq_len", caps, f"data.{key}", 0)
    if hasattr(data, "max_chars"):
        check_count(data.max_chars, "max_corpus_chars", caps, "data.max_chars", 0)
    if hasattr(data, "length_pool"):
        check_count(data.length_pool, "max_eval_batches", caps, "data.length_pool", 0)
    if hasattr(data, "seed"):
        check_seed(data.seed, caps, "data.seed")


def check_experiment_options(options: Any, caps: DemoCaps | None = None) -> None:
    """Examples, permutations, steps, adversaries, retrainings and seeds of ExperimentOptions."""
    o = options
    check_count(o.n, "max_analysis_examples", caps, "Number of examples", 1)
    check_seed(o.seed, caps)
    check_count(o.n_perm, "max_permutations", caps, "Permutations (n_perm)", 1)
    check_count(o.random_draws, "max_permutations", caps, "Random draws", 1)
    check_count(o.k, "max_adversaries", caps, "Adversaries per example (k)", 1)
    check_count(o.steps, "max_adversarial_steps", caps, "Adversarial steps", 1)
    check_count(o.diagnostic_steps, "max_adversarial_steps", caps, "Diagnostic steps", 1)
    seeds: Sequence[int] = tuple(o.seeds or ())
    check_count(len(seeds), "max_extra_seeds", caps, "Number of retraining seeds", 0)
    for s in seeds:
        check_seed(s, caps, "retraining seed")
    if o.retrain_steps is not None:
        check_count(o.retrain_steps, "max_train_steps", caps, "Retraining steps", 1)
    if o.eval_examples is not None:
        check_count(o.eval_examples, "max_eval_batches", caps, "Evaluation examples", 0)


# -- out of memory ---------------------------------------------------------------------------------

def is_out_of_memory(exc: BaseException) -> bool:
    """Whether `exc` is an allocation failure (MemoryError, torch.OutOfMemoryError, or torch's CPU
    "DefaultCPUAllocator: can't allocate memory" RuntimeError)."""
    if isinstance(exc, MemoryError):
        return True
    name = type(exc).__name__
    return name == "OutOfMemoryError" or (isinstance(exc, RuntimeError) and (
        "can't allocate memory" in str(exc) or "out of memory" in str(exc).lower()))


@contextlib.contextmanager
def too_big_on_oom(what: str, hint: str) -> Iterator[None]:
    """Turn an allocation failure inside the block into TooBigError "`what` is too big for this server; `hint`"."""
    try:
        yield
    except PlaygroundError:
        raise
    except (MemoryError, RuntimeError) as exc:
        if not is_out_of_memory(exc):
            raise
        raise TooBigError(f"{what} is too big for this server (it ran out of memory); {hint}.") from None


def describe_caps(caps: DemoCaps | None) -> str:
    """One line with the main limits, for help text."""
    return (f"up to {int(cap(caps, 'max_params')):,} parameters, ~{cap(caps, 'max_train_memory_gb'):g} GB per "
            f"training, batch ≤ {int(cap(caps, 'max_batch_size')):,}, sequences ≤ {int(cap(caps, 'max_seq_len')):,}, "
            f"≤ {int(cap(caps, 'max_train_steps')):,} steps")


__all__ = [
    "UNCAPPED_BOUNDS",
    "ModelSizes",
    "cap",
    "check_count",
    "check_data_config",
    "check_data_memory",
    "check_experiment_options",
    "check_model_size",
    "check_model_values",
    "check_seed",
    "check_text",
    "check_train_config",
    "config_from_values",
    "count_parameters",
    "data_bytes",
    "describe_caps",
    "estimate_training_bytes",
    "family_sizes",
    "is_out_of_memory",
    "sequence_length",
    "too_big_on_oom",
]


# -- what a form shows next to a capped field ----------------------------------------------------

FIELD_CAPS = {  # a preset key -> the cap that bounds it directly
    "train.max_steps": "max_train_steps",
    "train.batch_size": "max_batch_size",
    "model.block_size": "max_seq_len",
    "data.n": "max_examples",
}
MODEL_SIZE_KEYS = ("model.n_layer", "model.n_encoder_layers", "model.n_decoder_layers", "model.n_head",
                   "model.d_model", "model.hidden")


def cap_hint(caps: DemoCaps | None, key: str) -> str | None:
    """A short note for the field `key` of the Train form, e.g. "≤ 1,000 on this server"."""
    if caps is None:
        return None
    if key in FIELD_CAPS:
        return f"≤ {int(cap(caps, FIELD_CAPS[key])):,} on this server"
    if key in MODEL_SIZE_KEYS and caps.max_params:
        return f"model ≤ {caps.max_params / 1e6:g}M parameters here"
    return None
