"""ViT classification: inputs of every kind, resizing and channels, and clear errors."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image

from playground.errors import DataError
from playground.generation import GenerateRequest, classify_image, generate, prepare_image


def _direct_probs(bundle, x: torch.Tensor) -> list[float]:
    with torch.no_grad():
        return bundle.model(x[None]).softmax(-1)[0].tolist()


def test_classify_numpy_pil_and_path_agree(vit_bundle, tmp_path):
    rng = np.random.default_rng(0)
    arr = (rng.random((8, 8)) * 255).astype(np.uint8)
    path = tmp_path / "digit.png"
    Image.fromarray(arr).save(path)
    results = [classify_image(vit_bundle, x) for x in (arr, Image.fromarray(arr), str(path), path)]
    for r in results[1:]:
        assert r.labels == results[0].labels
        assert r.probs == pytest.approx(results[0].probs, abs=1e-6)
    r = results[0]
    assert sorted(r.labels) == ["one", "two", "zero"]
    assert sum(r.probs) == pytest.approx(1.0, abs=1e-5)
    assert r.probs == sorted(r.probs, reverse=True)
    # the same as calling the model on the image scaled to [0, 1]
    direct = _direct_probs(vit_bundle, torch.from_numpy(arr.astype(np.float32) / 255.0)[None])
    names = ["zero", "one", "two"]
    assert [direct[names.index(c)] for c in r.labels] == pytest.approx(r.probs, abs=1e-6)


def test_prepare_resizes_and_converts_channels():
    rgb = np.zeros((32, 48, 3), dtype=np.uint8)
    rgb[..., 0] = 255  # pure red
    x = prepare_image(rgb, 8, 1)
    assert x.shape == (1, 8, 8)
    assert torch.allclose(x, torch.full((1, 8, 8), 0.299), atol=1e-3)  # ITU-R 601 luma of red
    gray = np.full((5, 5), 0.5, dtype=np.float32)
    y = prepare_image(gray, 8, 3)
    assert y.shape == (3, 8, 8) and torch.allclose(y, torch.full((3, 8, 8), 0.5), atol=1e-5)
    rgba = np.zeros((8, 8, 4), dtype=np.uint8)  # fully transparent -> white
    assert torch.allclose(prepare_image(rgba, 8, 1), torch.ones(1, 8, 8), atol=1e-5)
    assert torch.allclose(prepare_image(gray, 5, 1, invert=True), torch.full((1, 5, 5), 0.5))
    with pytest.raises(DataError, match="shape"):
        prepare_image(np.zeros((2, 3, 4, 5)), 8, 1)


def test_vit_given_text_gets_a_clear_error(vit_bundle):
    with pytest.raises(DataError, match="image classifier"):
        generate(vit_bundle, GenerateRequest(prompt="a cat"))
    with pytest.raises(DataError, match="not text"):
        classify_image(vit_bundle, "a cat")
    with pytest.raises(DataError, match="Upload an image"):
        classify_image(vit_bundle, None)
    with pytest.raises(DataError, match="No image file"):
        classify_image(vit_bundle, "missing.png")
