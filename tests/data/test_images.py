"""Image sets: digits, procedural shapes with masks, uploaded zips (and their failure modes)."""

import io
import zipfile

import numpy as np
import pytest
import torch
from PIL import Image

from playground.data.images import (IMAGE_SETS, ImageSet, load_digits, load_image_set,
                                    load_image_zip, make_shapes)
from playground.data.shapes import SHAPE_CLASSES
from playground.errors import ConfigError, DataError, NotFoundError


# ---------------------------------------------------------------- digits

def test_digits():
    d = load_digits()
    assert d.images.shape == (1797, 1, 8, 8) and d.images.dtype == torch.float32
    assert d.images.min() == 0.0 and d.images.max() == 1.0
    assert d.labels.dtype == torch.int64 and set(d.labels.tolist()) == set(range(10))
    assert d.class_names == [str(i) for i in range(10)] and d.masks is None


# ---------------------------------------------------------------- shapes

@pytest.fixture(scope="module")
def shapes():
    return make_shapes(200, seed=0, image_size=32)


def test_shapes_types_and_ranges(shapes):
    assert shapes.images.shape == (200, 3, 32, 32) and shapes.images.dtype == torch.float32
    assert 0.0 <= shapes.images.min() and shapes.images.max() <= 1.0
    assert shapes.masks.shape == (200, 32, 32) and shapes.masks.dtype == torch.bool
    assert shapes.labels.dtype == torch.int64
    assert shapes.class_names == ["circle", "square", "triangle", "cross"]


def test_shapes_labels_balanced(shapes):
    counts = torch.bincount(shapes.labels, minlength=4)
    assert counts.tolist() == [50, 50, 50, 50]
    odd = make_shapes(10, seed=1, classes=("circle", "ring", "diamond"))
    assert sorted(torch.bincount(odd.labels).tolist()) == [3, 3, 4]


def test_shapes_masks_cover_the_drawn_object(shapes):
    for img, mask in zip(shapes.images, shapes.masks):
        area = mask.float().mean().item()
        assert 0.01 < area < 0.6
        inside = img[:, mask].mean(dim=1)     # [3]
        outside = img[:, ~mask].mean(dim=1)   # [3]
        assert (inside - outside).abs().max() > 0.25
        # object pixels are nearly flat, background pixels noisy: the mask is the object
        assert img[:, mask].std(dim=1).max() < 0.06


def test_shape_masks_have_the_right_geometry():
    from playground.data.shapes import shape_mask

    circle = shape_mask("circle", 64, 32, 32, 10)
    assert abs(circle.sum() - np.pi * 100) < 20
    square = shape_mask("square", 64, 32, 32, 10)
    assert square.sum() == 16 * 16
    tri = shape_mask("triangle", 64, 32, 32, 10)
    assert tri[22:30].sum() < tri[34:42].sum()  # apex up: wider at the bottom
    cross = shape_mask("cross", 64, 32, 32, 9)
    assert cross[32, 32] and not cross[24, 24]
    ring = shape_mask("ring", 64, 32, 32, 10)
    assert ring[32, 41] and not ring[32, 32]


def test_shapes_deterministic_and_errors():
    a, b = make_shapes(8, 3, image_size=16), make_shapes(8, 3, image_size=16)
    assert torch.equal(a.images, b.images) and torch.equal(a.masks, b.masks)
    assert not torch.equal(a.images, make_shapes(8, 4, image_size=16).images)
    with pytest.raises(ConfigError, match="circle, square"):
        make_shapes(4, 0, classes=("circle", "hexagon"))
    with pytest.raises(ConfigError, match="2 distinct"):
        make_shapes(4, 0, classes=("circle",))
    assert set(SHAPE_CLASSES) >= {"circle", "square", "triangle", "cross"}


# ---------------------------------------------------------------- registry

def test_image_set_registry():
    assert set(IMAGE_SETS) == {"digits", "shapes", "zip"}
    sub = load_image_set("digits", 100, seed=1)
    assert sub.n == 100 and sub.channels == 1 and sub.image_size == 8
    assert torch.equal(sub.images, load_image_set("digits", 100, seed=1).images)
    assert not torch.equal(sub.labels, load_image_set("digits", 100, seed=2).labels)
    assert load_image_set("digits", None, 0).n == 1797
    s = load_image_set("shapes", 12, 0, image_size=16, classes=("circle", "square"))
    assert s.images.shape == (12, 3, 16, 16) and s.class_names == ["circle", "square"]
    with pytest.raises(DataError, match="at most 1797"):
        load_image_set("digits", 5000, 0)
    with pytest.raises(ConfigError, match="digits, shapes, zip"):
        load_image_set("mnist", 10, 0)
    with pytest.raises(ConfigError, match="image_size, classes"):
        load_image_set("shapes", 10, 0, size=8)


def test_subset_keeps_masks(shapes):
    sub = shapes.subset([3, 1])
    assert torch.equal(sub.images[0], shapes.images[3]) and torch.equal(sub.masks[1], shapes.masks[1])
    assert sub.labels.tolist() == [shapes.labels[3].item(), shapes.labels[1].item()]


# ---------------------------------------------------------------- zip uploads

def _png(color, size=(10, 6)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, format="PNG")
    return buf.getvalue()


def _zip(tmp_path, members: dict[str, bytes], name="set.zip"):
    path = tmp_path / name
    with zipfile.ZipFile(path, "w") as zf:
        for member, data in members.items():
            zf.writestr(member, data)
    return path


def test_zip_two_classes(tmp_path):
    path = _zip(tmp_path, {
        "red/a.png": _png((255, 0, 0)), "red/b.png": _png((250, 0, 0)),
        "blue/a.png": _png((0, 0, 255)), "blue/sub/c.jpg": _png((0, 0, 250)),
        "__MACOSX/red/._a.png": b"junk", "red/.DS_Store": b"junk",
    })
    data = load_image_zip(path, image_size=12)
    assert data.class_names == ["blue", "red"]
    assert data.images.shape == (4, 3, 12, 12) and data.images.dtype == torch.float32
    assert sorted(data.labels.tolist()) == [0, 0, 1, 1]
    for img, label in zip(data.images, data.labels):
        channel = 2 if label == 0 else 0  # blue images are blue, red images red
        assert img[channel].mean() > 0.95 and img[1].mean() < 0.05
    via_registry = load_image_set("zip", 2, 0, path=path, image_size=8)
    assert via_registry.n == 2 and via_registry.image_size == 8


def test_zip_wrapping_folder_is_stripped(tmp_path):
    path = _zip(tmp_path, {"mydata/cats/1.png": _png((1, 2, 3)), "mydata/dogs/1.png": _png((4, 5, 6))})
    assert load_image_zip(path, 8).class_names == ["cats", "dogs"]


@pytest.mark.parametrize("members, message", [
    ({"cats/1.png": _png((0, 0, 0)), "cats/2.png": _png((9, 9, 9))}, "at least 2 class folders"),
    ({"cats/1.png": _png((0, 0, 0)), "dogs/notes.txt": b"hello"}, "not an image"),
    ({"cats/1.png": _png((0, 0, 0)), "../evil.png": _png((0, 0, 0))}, "unsafe path"),
    ({"cats/1.png": _png((0, 0, 0)), "dogs/../../evil.png": _png((0, 0, 0))}, "unsafe path"),
    ({"cats/1.png": _png((0, 0, 0)), "/abs/evil.png": _png((0, 0, 0))}, "unsafe path"),
    ({"cats/1.png": _png((0, 0, 0)), "dogs/broken.png": b"not a png"}, "cannot be read"),
    ({"cats/1.png": _png((0, 0, 0)), "dogs/1.png": _png((0, 0, 0)), "loose.png": _png((0, 0, 0))},
     "not inside a class folder"),
])
def test_zip_errors(tmp_path, members, message):
    path = _zip(tmp_path, members)
    with pytest.raises(DataError, match=message):
        load_image_zip(path, 8)
    assert not (tmp_path.parent / "evil.png").exists()


def test_zip_caps_and_bad_files(tmp_path):
    members = {f"c{i % 2}/{i}.png": _png((i, i, i)) for i in range(6)}
    path = _zip(tmp_path, members)
    with pytest.raises(DataError, match="limit is 5"):
        load_image_zip(path, 8, max_files=5)
    with pytest.raises(DataError, match="limit"):
        load_image_zip(path, 8, max_file_bytes=20)
    with pytest.raises(DataError, match="limit"):
        load_image_zip(path, 8, max_total_bytes=100)
    not_zip = tmp_path / "x.zip"
    not_zip.write_bytes(b"hello")
    with pytest.raises(DataError, match="not a zip"):
        load_image_zip(not_zip, 8)
    with pytest.raises(NotFoundError):
        load_image_zip(tmp_path / "missing.zip", 8)


def test_image_set_checks_shapes():
    with pytest.raises(DataError):
        ImageSet(images=torch.zeros(2, 8, 8), labels=torch.zeros(2, dtype=torch.long), class_names=["a"])
