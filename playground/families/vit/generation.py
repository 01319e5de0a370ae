"""What "generate" means for ViT: classify one image, once."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokenizers import Tokenizer

from playground.errors import DataError, PlaygroundError
from playground.generation.family import Controls, FamilyGenerator
from playground.generation.vision import Classification, classify

if TYPE_CHECKING:  # bundle imports the family registry, which imports this module
    from playground.bundle import Bundle

IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".bmp", ".gif", ".webp", ".tif", ".tiff"}


def _looks_like_path(text: str) -> bool:
    return Path(text).suffix.lower() in IMAGE_SUFFIXES or Path(text).is_file()


class ClassifierGenerator(FamilyGenerator):
    """An image classifier: an image in, class probabilities out (no tokens, nothing streams)."""

    what = "image classifier (ViT)"
    controls = Controls(
        reads_image=True, input_label="Image", placeholder="",
        hint="Upload an image; the model gives class probabilities.", pick_label="Pick a class",
    )

    def check_input(self, bundle: Bundle, image: Any) -> None:
        """Always a DataError: asked to generate, an image classifier says it takes images."""
        raise DataError(
            f"{bundle.name!r} is an image classifier (ViT): it classifies images, it does not read text. "
            "Upload an image instead (CLI: --image PATH)."
        )

    def classify(self, bundle: Bundle, image: Any, invert: bool = False) -> Classification:
        """Class probabilities of `image` (a file path, array or PIL image), most likely first."""
        if image is None:
            raise DataError("Upload an image to classify.")
        if isinstance(image, str) and not _looks_like_path(image):
            raise DataError(f"{bundle.name!r} is an image classifier (ViT): give an image, not text.")
        return classify(bundle.model, image, bundle.class_names, invert=invert)

    def handoff(self, state: dict[str, Any], picked: str | None, tokenizer: Tokenizer | None = None) -> dict[str, Any]:
        """The picked class "c:k" of the tab's last classification (image file, invert, class names)."""
        if not picked or not str(picked).startswith("c:"):
            raise PlaygroundError("Classify an image, then pick a class to explain.")
        k = int(str(picked)[2:])
        names = state.get("class_names")
        return {"input": state["image"], "invert": state["invert"], "target_position": k,
                "target_token": names[k] if names and 0 <= k < len(names) else None}
