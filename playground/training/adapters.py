"""What the trainer asks of a model family: data, batches, loss, evaluation and preview.

The engine never branches on the family; it calls ``get_family(name).adapter``, an instance
of a :class:`FamilyAdapter` subclass that lives with its family (``playground/families/``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tokenizers import Tokenizer
from torch import Tensor, nn

from playground.data.policy import DataPolicy
from playground.errors import NotFoundError
from playground.models.base import ModelConfig
from playground.training.config import TrainConfig
from playground.training.device import DeviceCaps
from playground.workspace import Workspace


@dataclass
class Prepared:
    """A family's data, ready to batch, and the model config it fixes."""

    model_config: Any
    payload: Any  # TextData | ImageSplit | PairData
    tokenizer: Tokenizer | None = None
    class_names: list[str] | None = None
    info: dict[str, Any] = field(default_factory=dict)  # what the bundle records about the data


@dataclass
class Preview:
    """What to show at an evaluation: a sample, a confusion matrix or a few translations."""

    kind: str  # "text" | "confusion" | "translations"
    text: str = ""
    matrix: list[list[int]] | None = None  # [true class][predicted class]
    labels: list[str] | None = None
    rows: list[dict[str, Any]] | None = None  # {"source", "reference", "prediction", "correct"}


class FamilyAdapter:
    """The per-family part of training. Subclasses fill in every method."""

    data_config_cls: type = object
    unit: str = "tokens"  # what throughput counts: tokens or samples

    def __init__(self, family: str, config_cls: type[ModelConfig]) -> None:
        self.family = family  # the family's name, for messages
        self.config_cls = config_cls  # the model config the data fixes (vocab size, classes, ...)

    def prepare(self, data: Any, model_values: dict[str, Any], workspace: Workspace | None,
                tokenizer: Tokenizer | None = None, limits: Any | None = None,
                policy: DataPolicy | None = None) -> Prepared:
        """Load and split the data; build the model config (vocab size etc. from the data).
        `tokenizer` is given when resuming (the bundle's own), so ids never shift; `limits`
        (playground.settings.DemoCaps) limits corpus and upload sizes on shared servers; `policy`
        says which files data references may open (None: the CLI's, any path)."""
        raise NotImplementedError

    def batch(self, prep: Prepared, seed: int, step: int, start: int, count: int, global_size: int) -> dict[str, Tensor]:
        """Host tensors of positions start .. start+count-1 of update `step`'s global batch."""
        raise NotImplementedError

    def count(self, prep: Prepared, batch: dict[str, Tensor]) -> int:
        """Tokens or samples in a batch (throughput)."""
        raise NotImplementedError

    def loss(self, model: nn.Module, batch: dict[str, Tensor], label_smoothing: float = 0.0) -> Tensor:
        """Mean training loss of a batch already on the device (scalar)."""
        raise NotImplementedError

    def evaluate(self, model: nn.Module, prep: Prepared, cfg: TrainConfig, caps: DeviceCaps) -> dict[str, float]:
        """Validation metrics (always `val_loss`); the model is in eval mode under no_grad."""
        raise NotImplementedError

    def preview(self, model: nn.Module, prep: Prepared, cfg: TrainConfig, caps: DeviceCaps) -> Preview | None:
        """A preview of what the model does now."""
        return None

    def init_model(self, model: nn.Module, prep: Prepared) -> None:
        """Change a freshly initialised model before its first step (e.g. copy pre-trained
        weights the data config names); by default nothing. Not called when resuming."""

    def d_model(self, model_config: Any) -> int | None:
        """Model width (for the inverse-sqrt schedule)."""
        return getattr(model_config, "d_model", None) or getattr(model_config, "hidden", None)


def to_device(caps: DeviceCaps, batch: dict[str, Tensor]) -> dict[str, Tensor]:
    """The batch's tensors on the run's device."""
    return {k: caps.to_device(v) for k, v in batch.items()}


def resolve_tokenizer(name: str, workspace: Workspace | None) -> Tokenizer:
    """The workspace tokenizer ``data.tokenizer`` names; NotFoundError saying what there is otherwise."""
    if workspace is None:
        raise NotFoundError(f"data.tokenizer = {name!r} names a workspace tokenizer, but no workspace was given.")
    if not workspace.exists("tokenizers", name):
        have = ", ".join(workspace.names("tokenizers")) or "none yet: build one in the Tokenizer tab"
        raise NotFoundError(f"data.tokenizer = {name!r}: no such tokenizer in the workspace (have: {have}); "
                            "use data.tokenizer=char for characters.")
    return workspace.load_tokenizer(name)
