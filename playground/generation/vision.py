"""Classifying one image with a ViT checkpoint."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image, UnidentifiedImageError
from torch import Tensor, nn

from playground.errors import DataError


@dataclass
class Classification:
    """Class probabilities of one image, most likely first."""

    labels: list[str]  # class names, most likely first
    probs: list[float]
    image: Tensor  # the model's input [C,H,W] in [0,1]

    @property
    def predicted(self) -> str:
        return self.labels[0]

    def rows(self) -> list[dict[str, Any]]:
        return [{"rank": i + 1, "class": c, "probability": p} for i, (c, p) in enumerate(zip(self.labels, self.probs))]


def to_array(image: Any) -> np.ndarray:
    """A PIL image, numpy array, torch tensor or image file path -> float array [H,W,C] in [0,1]."""
    if isinstance(image, (str, os.PathLike)):
        path = Path(image)
        if not path.is_file():
            raise DataError(f"No image file at {path.name!r}; give a PNG or JPEG file.")
        try:
            with Image.open(path) as im:
                image = np.asarray(im.convert("RGBA" if im.mode in ("RGBA", "LA", "P") else "RGB" if im.mode != "L" else "L"))
        except (UnidentifiedImageError, OSError) as exc:
            raise DataError(f"{path.name!r} is not an image we can read ({exc}); give a PNG or JPEG file.") from None
    elif hasattr(image, "convert") and hasattr(image, "mode"):  # PIL image
        mode = "RGBA" if image.mode in ("RGBA", "LA", "P") else "L" if image.mode in ("L", "1", "I", "F") else "RGB"
        image = np.asarray(image.convert(mode))
    if isinstance(image, Tensor):
        t = image.detach().cpu().float()
        if t.dim() == 3 and t.shape[0] in (1, 3, 4) and t.shape[-1] not in (1, 3, 4):
            t = t.permute(1, 2, 0)  # [C,H,W] -> [H,W,C]
        image = t.numpy()
    if not isinstance(image, np.ndarray):
        raise DataError(f"Give an image (a PIL image, an array or a file path), not {type(image).__name__}.")
    arr = image
    if arr.dtype == np.uint8:
        arr = arr.astype(np.float32) / 255.0
    elif arr.dtype == bool:
        arr = arr.astype(np.float32)
    else:
        arr = arr.astype(np.float32)
        if arr.size and arr.max() > 1.0:
            arr = arr / 255.0 if arr.max() <= 255.0 else arr / arr.max()
    if arr.ndim == 2:
        arr = arr[:, :, None]
    if arr.ndim != 3 or arr.shape[2] not in (1, 2, 3, 4) or min(arr.shape[:2]) < 1:
        raise DataError(f"Expected an image of shape [height, width] or [height, width, channels], got {list(image.shape)}.")
    if arr.shape[2] in (2, 4):  # drop alpha: composite onto white
        alpha = arr[:, :, -1:]
        arr = arr[:, :, :-1] * alpha + (1.0 - alpha)
    return np.clip(arr, 0.0, 1.0)


def prepare_image(image: Any, image_size: int, channels: int, invert: bool = False) -> Tensor:
    """The model input [C,H,W] in [0,1]: channels converted (luminance / repeat), resized to
    image_size x image_size (area average when shrinking, bilinear when enlarging), optionally
    inverted (dark ink on light paper)."""
    arr = to_array(image)
    t = torch.from_numpy(np.ascontiguousarray(arr)).permute(2, 0, 1)  # [c,h,w]
    if channels == 1 and t.shape[0] == 3:
        t = (0.299 * t[0] + 0.587 * t[1] + 0.114 * t[2])[None]  # ITU-R 601 luma
    elif channels == 3 and t.shape[0] == 1:
        t = t.expand(3, -1, -1)
    elif t.shape[0] != channels:
        raise DataError(f"This model takes {channels}-channel images; got {t.shape[0]} channels.")
    h, w = t.shape[1:]
    if (h, w) != (image_size, image_size):
        if h >= image_size and w >= image_size:  # shrinking: average the pixels each output covers
            t = F.interpolate(t[None], size=(image_size, image_size), mode="area")[0]
        else:
            t = F.interpolate(t[None], size=(image_size, image_size), mode="bilinear", antialias=True, align_corners=False)[0]
    t = t.clamp(0.0, 1.0)
    return 1.0 - t if invert else t.contiguous()


def classify(model: nn.Module, image: Any, class_names: list[str] | None = None, invert: bool = False) -> Classification:
    """Class probabilities of `image` under a ViT (any input `prepare_image` accepts)."""
    cfg = model.config
    x = prepare_image(image, cfg.image_size, cfg.channels, invert)
    device = next(model.parameters()).device
    with torch.inference_mode():
        probs = model(x[None].to(device)).float().softmax(-1)[0].cpu()  # [n_classes]
    names = list(class_names or [str(i) for i in range(cfg.n_classes)])
    if len(names) != cfg.n_classes:
        names = [str(i) for i in range(cfg.n_classes)]
    order = probs.argsort(descending=True).tolist()
    return Classification([names[i] for i in order], [float(probs[i]) for i in order], x)
