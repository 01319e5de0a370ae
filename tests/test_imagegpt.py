"""ImageGPT on the 8x8 digits (#17 item 4): grey levels as tokens in raster order round-trip to
the quantised image, a scaled-down preset lowers its loss, and completing a validation digit
keeps its upper half exactly and gives 64 pixels (API, Generate tab handler and CLI)."""
from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from playground.__main__ import main
from playground.bundle import load_bundle, read_metrics_csv
from playground.config import load_preset
from playground.data.images import load_digits
from playground.families import family_of, get_family
from playground.families.imagegpt.generation import completions, validation_levels
from playground.families.imagegpt.pixels import (
    GIVEN,
    N_PIXELS,
    N_SPECIAL,
    data_config,
    level_text,
    levels_to_image,
    pixel_tokenizer,
    quantise,
    text_levels,
    to_ids,
)
from playground.generation.api import GenerateRequest, stream
from playground.generation.events import Done
from playground.generation.filters import SamplingConfig
from playground.training.engine import run_training
from playground.workspace import Workspace

NAME = "tiny-imagegpt"


@pytest.mark.parametrize("levels", [2, 4, 8])
def test_tokens_round_trip_to_the_quantised_image_in_raster_order(levels: int) -> None:
    images = load_digits().images[:50]  # [50,1,8,8] in [0,1]
    tok = pixel_tokenizer(levels)
    ids = to_ids(quantise(images, levels))  # [50,65]
    assert (ids[:, 0] == tok.token_to_id("<|image|>")).all() and (ids[:, 1:] >= N_SPECIAL).all()
    for k in range(images.shape[0]):
        text = tok.decode(ids[k].tolist(), skip_special_tokens=False)
        assert tok.encode(text).ids == ids[k].tolist()  # the tokenizer reads back the same ids
        image = levels_to_image(text_levels(text), levels)  # tokens -> [8,8]
        x = images[k, 0].numpy()
        expected = np.minimum(np.floor(x * levels), levels - 1) / (levels - 1)  # quantised, pixel (r, c) at r*8+c
        np.testing.assert_allclose(image.numpy(), expected, atol=1e-6)
    flat = quantise(images, levels)[3]
    assert flat[2 * 8 + 5] == min(int(images[3, 0, 2, 5] * levels), levels - 1)  # row 2, column 5


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> tuple[Workspace, list[dict]]:
    """The preset scaled down (1 layer, d 32, 300 digits, 30 steps), trained once for this module."""
    workspace = Workspace(tmp_path_factory.mktemp("ws"))
    preset = load_preset("imagegpt-digits")
    preset.model.update(n_layer=1, n_head=2, d_model=32, dropout=0.0)
    preset.data.update(n=300)
    preset.train.update(max_steps=30, batch_size=16, warmup_steps=2, eval_interval=5, log_interval=5, lr=1e-2)
    result = run_training(preset, workspace, NAME, device="cpu")
    assert result.status == "done"
    return workspace, read_metrics_csv(workspace.path("models", NAME) / "metrics.csv")


def test_a_scaled_down_run_lowers_the_loss(trained) -> None:
    workspace, rows = trained
    losses = [r["val_loss"] for r in rows if r.get("val_loss") not in (None, "")]
    assert losses[-1] < losses[0] - 0.1
    bundle = load_bundle(NAME, workspace)
    assert family_of(bundle.model).name == "imagegpt" and bundle.model_config.block_size == N_PIXELS


def test_completion_keeps_the_upper_half_and_gives_64_pixels(trained) -> None:
    workspace, _ = trained
    bundle = load_bundle(NAME, workspace)
    original = validation_levels(bundle, 5)
    events = list(stream(bundle, GenerateRequest(prompt="5", sampling=SamplingConfig(temperature=1.0), seed=3,
                                                 num_samples=3)))
    done = events[-1]
    assert isinstance(done, Done) and done.info["original"] == original
    levels = data_config(bundle.config["data"]).levels
    for sample, pixels in zip(done.samples, completions(done)):
        assert sample.prompt == "<|image|>" + level_text(original[:GIVEN])
        assert len(sample.ids) == N_PIXELS - GIVEN and len(pixels) == N_PIXELS
        assert pixels[:GIVEN] == original[:GIVEN]  # the given half exactly
        assert all(0 <= p < levels for p in pixels)
    grid = get_family("imagegpt").generator.final_image(done)  # original, given half, 3 completions
    assert grid.dtype == np.uint8 and grid.shape[2] == 3 and grid.shape[1] > 5 * grid.shape[0]


def test_generate_tab_shows_the_completions_as_a_picture(trained) -> None:
    from playground.ui.generate_tab import Env, generate_text, select_model

    workspace, _ = trained
    env = Env(workspace, "cpu", None)
    view = select_model(env, NAME)
    assert view.result_image["visible"] is True and view.sample["choices"]
    assert view.max_new["visible"] is False  # an image is always 64 pixels
    *_, last = generate_text(env, NAME, "0", 1.0, 0, 1.0, 0.0, 1.0, 0.0, 0.0, 200, 1, 2, "", 1, 0.0)
    assert isinstance(last.result_image, np.ndarray) and last.result_image.shape[2] == 3
    assert len(last.result["done"].samples[0].ids) == N_PIXELS - GIVEN


def test_cli_completes_a_digit_and_saves_the_picture(trained, tmp_path, capsys) -> None:
    workspace, _ = trained
    png = tmp_path / "grid.png"
    code = main(["--workspace", str(workspace.root), "generate", NAME, "--prompt", "2", "--num-samples", "2",
                 "--seed", "1", "--save-image", str(png)])
    out, err = capsys.readouterr()
    assert code == 0 and "sample 2" in out and "64 tokens" in err  # 2 samples x 32 pixels
    assert len(out.splitlines()) == 1 + 8 + 1  # header, 8 rows of text art, the line between the halves
    with Image.open(png) as im:
        assert im.mode == "RGB" and im.size[0] > 4 * im.size[1]  # original, given half, two completions side by side
