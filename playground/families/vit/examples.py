"""ViT's validation examples: images of the validation split, rebuilt from the data's seed."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from tokenizers import Tokenizer
from torch import Generator

from playground.data.examples import AnalysisExample, Example, FamilyExamples
from playground.data.images import load_image_set
from playground.data.policy import DataPolicy
from playground.data.splits import split_indices
from playground.errors import DataError
from playground.training.data import ImageDataConfig
from playground.workspace import Workspace

if TYPE_CHECKING:  # bundle imports the family registry, which imports this module
    from playground.bundle import Bundle


def display_image(chw: np.ndarray, min_size: int = 128) -> np.ndarray:
    """[C,H,W] floats in [0,1] -> [H',W',C] uint8, upscaled by an integer factor (nearest) so a
    small image is visible; resizing it back (antialiased) gives the original pixels."""
    arr = np.transpose(chw, (1, 2, 0))
    factor = max(1, min_size // max(arr.shape[0], 1))
    arr = np.repeat(np.repeat(arr, factor, axis=0), factor, axis=1)
    if arr.shape[2] == 1:
        arr = np.repeat(arr, 3, axis=2)
    return (np.clip(arr, 0, 1) * 255).round().astype(np.uint8)


class ImageExamples(FamilyExamples):
    """Examples from a built-in image set (digits, shapes) or the user's uploaded zip."""

    def for_generate(self, data: dict[str, Any], n: int, model: dict[str, Any], workspace: Workspace | None,
                     policy: DataPolicy) -> list[Example]:
        """Validation images, upscaled for display, labelled with their class."""
        name = data.get("dataset")
        if not name:
            return []
        opts: dict[str, Any] = {}
        if name == "shapes":
            opts = {"image_size": data.get("image_size", 32), "classes": list(data.get("classes") or [])} \
                if data.get("classes") else {"image_size": data.get("image_size", 32)}
        elif name == "zip":
            if not data.get("path"):
                return []
            opts = {"path": policy.resolve(data["path"], "data.path"), "image_size": data.get("image_size", 32)}  # uploads only
        seed = int(data.get("seed", 0))
        images = load_image_set(name, data.get("n") or None, seed, **opts)
        _, val = split_indices(images.n, float(data.get("val_fraction", 0.2)), seed)
        out = []
        for i in val[:n]:
            img = images.images[i]  # [C,H,W] in [0,1]
            label = images.class_names[int(images.labels[i])]
            out.append(Example(f"#{i} ({label})", display_image(img.numpy()), label))
        return out

    def for_analysis(self, data: dict[str, Any], n: int) -> list[AnalysisExample]:
        """Validation images with their label (and object mask for shapes); none for zip uploads."""
        dc = ImageDataConfig(**data)
        if dc.dataset == "zip":
            return []
        opts: dict[str, Any] = {"image_size": dc.image_size, "classes": list(dc.classes)} if dc.dataset == "shapes" else {}
        images = load_image_set(dc.dataset, dc.n or None, dc.seed, **opts)
        _, val = split_indices(images.n, dc.val_fraction, dc.seed)
        out = []
        for i in val[:n]:
            lab = int(images.labels[i])
            out.append(AnalysisExample(f"val #{i}: {images.class_names[lab]}", images.images[i],
                                       None if images.masks is None else images.masks[i], lab))
        return out

    def held_out(self, bundle: Bundle, prepared: Any, tokenizer: Tokenizer | None, n: int, gen: Generator) -> Any:
        """Validation images in a seeded random order; each explains its predicted class."""
        # Function-level: the analysis package is loaded only when an experiment runs (start-up
        # time), and it asks playground.families, which imports this module (a cycle at the top).
        from playground.analysis.experiments.data import HeldOut, classifier_queries

        model = bundle.model
        val = prepared.payload.val
        if val.n == 0:
            raise DataError("The validation split has no images.")
        idx = torch.randperm(val.n, generator=gen)[: min(n, val.n)].tolist()
        images = val.images[idx]  # [N,C,H,W]
        queries = classifier_queries(model, images)
        names = prepared.class_names or bundle.class_names or []
        gold = [int(val.labels[i]) for i in idx]
        masks = [None if val.masks is None else val.masks[i] for i in idx]
        rows, cols = model.grid
        units = [[f"r{r}c{c}" for r in range(rows) for c in range(cols)] for _ in idx]
        labels = [f"val #{i}: {names[g] if g < len(names) else g}" for i, g in zip(idx, gold)]
        return HeldOut(bundle.family, "classifier", queries, labels, units, gold, masks, list(names),
                       description=f"{len(idx)} validation images")
