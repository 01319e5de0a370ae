"""Training a ViT: image classification (the trainer's adapter for this family)."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import torch
import torch.nn.functional as F
from tokenizers import Tokenizer
from torch import Tensor, nn

from playground.data.images import load_image_set
from playground.data.label_shuffle import shuffled_labels
from playground.data.policy import DataPolicy, default_policy
from playground.data.splits import split_indices
from playground.errors import ConfigError
from playground.training.adapters import FamilyAdapter, Prepared, Preview, to_device
from playground.training.config import TrainConfig, build_model_config
from playground.training.data import (
    EpochSampler,
    ImageDataConfig,
    random_shift,
    step_generator,
)
from playground.training.device import DeviceCaps
from playground.workspace import Workspace


@dataclass
class ImageSplit:
    """Train and validation images."""

    train: Any  # playground.data.images.ImageSet
    val: Any
    augment: str = "none"
    max_shift: int = 1
    sampler: EpochSampler | None = None  # over train, seeded by train.seed (set at the first batch)


class ViTAdapter(FamilyAdapter):
    """Image classification on an image set."""

    family = "vit"
    data_config_cls = ImageDataConfig
    unit = "samples"

    def prepare(self, data: ImageDataConfig, model_values: dict[str, Any], workspace: Workspace | None,
                tokenizer: Tokenizer | None = None, limits: Any | None = None,
                policy: DataPolicy | None = None) -> Prepared:
        opts: dict[str, Any] = {}
        if data.dataset == "shapes":
            opts = {"image_size": data.image_size, "classes": list(data.classes)}
        elif data.dataset == "zip":
            if not data.path:
                raise ConfigError("data.dataset = zip needs data.path = a zip with one folder per class.")
            built_in = ("data.dataset = digits", "data.dataset = shapes")
            path = default_policy(policy, workspace).resolve(data.path, "data.path", built_in)
            opts = {"path": path, "image_size": data.image_size}
        images = load_image_set(data.dataset, data.n or None, data.seed, **opts)
        train_idx, val_idx = split_indices(images.n, data.val_fraction, data.seed)
        train, val = images.subset(train_idx), images.subset(val_idx)
        if data.shuffle_labels:
            train = replace(train, labels=shuffled_labels(train.labels, data.seed))
        derived = {"image_size": images.image_size, "channels": images.channels, "n_classes": len(images.class_names)}
        config = build_model_config(self.config_cls, model_values, derived)
        info = {"dataset": data.dataset, "n": images.n, "n_train": train.n, "n_val": val.n, "seed": data.seed,
                "val_fraction": data.val_fraction, "image_size": images.image_size, "augment": data.augment,
                "shuffled_labels": data.shuffle_labels}
        return Prepared(config, ImageSplit(train, val, data.augment, data.max_shift), None,
                        list(images.class_names), info)

    def batch(self, prep: Prepared, seed: int, step: int, start: int, count: int, global_size: int) -> dict[str, Tensor]:
        split: ImageSplit = prep.payload
        if split.sampler is None or split.sampler.seed != seed:
            split.sampler = EpochSampler(split.train.n, seed)
        idx = split.sampler.indices(step * global_size + start, count)
        images = split.train.images[idx]
        if split.augment == "shift":
            images = random_shift(images, split.max_shift, step_generator(seed, step, salt=2 + start))
        return {"images": images, "labels": split.train.labels[idx]}

    def count(self, prep: Prepared, batch: dict[str, Tensor]) -> int:
        return batch["labels"].shape[0]

    def loss(self, model: nn.Module, batch: dict[str, Tensor], label_smoothing: float = 0.0) -> Tensor:
        logits = model(batch["images"])  # [B,K]
        return F.cross_entropy(logits, batch["labels"], label_smoothing=label_smoothing)

    def _predict(self, model: nn.Module, prep: Prepared, cfg: TrainConfig, caps: DeviceCaps) -> tuple[Tensor, Tensor, float]:
        val = prep.payload.val
        n = val.n if not cfg.eval_examples else min(val.n, cfg.eval_examples)
        preds, total = [], 0.0
        for lo in range(0, n, 256):
            batch = to_device(caps, {"images": val.images[lo:min(n, lo + 256)], "labels": val.labels[lo:min(n, lo + 256)]})
            with caps.autocast():
                logits = model(batch["images"]).float()
            total += F.cross_entropy(logits, batch["labels"], reduction="sum").item()
            preds.append(logits.argmax(-1).cpu())
        return torch.cat(preds), val.labels[:n], total / n

    def evaluate(self, model: nn.Module, prep: Prepared, cfg: TrainConfig, caps: DeviceCaps) -> dict[str, float]:
        pred, labels, loss = self._predict(model, prep, cfg, caps)
        return {"val_loss": loss, "accuracy": (pred == labels).float().mean().item()}

    def preview(self, model: nn.Module, prep: Prepared, cfg: TrainConfig, caps: DeviceCaps) -> Preview:
        from sklearn.metrics import confusion_matrix  # function-level: scikit-learn adds ~1 s to the app's start

        pred, labels, _ = self._predict(model, prep, cfg, caps)
        k = len(prep.class_names)
        matrix = confusion_matrix(labels.numpy(), pred.numpy(), labels=list(range(k)))
        return Preview("confusion", matrix=matrix.tolist(), labels=list(prep.class_names))
