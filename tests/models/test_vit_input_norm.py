"""ViT input_norm=per_image: background colour and contrast do not reach the patch embedding."""
from __future__ import annotations

import pytest
import torch

from playground.errors import ConfigError
from playground.families import build_model
from playground.models.vit import standardize_per_image


def test_standardized_images_have_zero_channel_means_and_unit_std():
    x = torch.rand(3, 3, 8, 8) * 0.3 + torch.tensor([0.1, 0.5, 0.9])[:, None, None]
    z = standardize_per_image(x)
    torch.testing.assert_close(z.mean(dim=(2, 3)), torch.zeros(3, 3), atol=1e-5, rtol=0)
    torch.testing.assert_close(z.std(dim=(1, 2, 3)), torch.ones(3), atol=1e-3, rtol=0)  # eps in the denominator


def test_per_image_model_ignores_a_colour_shift_and_a_contrast_change():
    torch.manual_seed(0)
    model = build_model("vit", {"image_size": 8, "patch_size": 4, "channels": 3, "n_classes": 4, "d_model": 16,
                                "n_layer": 1, "n_head": 2, "input_norm": "per_image"}).eval()
    x = torch.rand(2, 3, 8, 8)
    shifted = 0.5 * x + torch.tensor([0.2, -0.1, 0.3])[:, None, None]
    torch.testing.assert_close(model(shifted), model(x), atol=1e-4, rtol=1e-4)


def test_unknown_input_norm_is_refused():
    with pytest.raises(ConfigError, match="input_norm"):
        build_model("vit", {"input_norm": "batch"})
