"""Image classification sets: sklearn's bundled digits, procedural shapes, uploaded zips."""

from __future__ import annotations

import inspect
import io
import os
import zipfile
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import numpy as np
import torch
from PIL import Image, UnidentifiedImageError

from playground.data.policy import zip_member_parts
from playground.data.shapes import DEFAULT_SHAPES, make_shapes
from playground.data.types import ImageSet
from playground.errors import ConfigError, DataError, NotFoundError

__all__ = ["ImageSet", "ImageSetSpec", "IMAGE_SETS", "load_digits", "make_shapes", "load_image_zip",
           "load_image_set", "IMAGE_EXTENSIONS"]

IMAGE_EXTENSIONS = {".png", ".jpg", ".jpeg", ".bmp", ".gif", ".webp", ".tif", ".tiff"}
_JUNK_NAMES = {"thumbs.db", "desktop.ini"}
_MAX_PIXELS = 40_000_000  # per image, checked from the header before decoding


def load_digits() -> ImageSet:
    """scikit-learn's bundled 8x8 handwritten digits (1797 images, 1 channel, no download)."""
    from sklearn.datasets import load_digits as _sk_load_digits  # function-level: scikit-learn adds ~1 s to the app's start

    bunch = _sk_load_digits()
    images = torch.from_numpy((bunch.images / 16.0).astype(np.float32)).unsqueeze(1)  # [N, 1, 8, 8]
    labels = torch.from_numpy(bunch.target.astype(np.int64))
    return ImageSet(images=images, labels=labels, class_names=[str(d) for d in range(10)])


def _is_junk(parts: tuple[str, ...]) -> bool:
    return (any(p == "__MACOSX" or p.startswith(".") for p in parts)
            or parts[-1].lower() in _JUNK_NAMES)


def load_image_zip(path: str | os.PathLike, image_size: int = 32, max_files: int = 20_000,
                   max_total_bytes: int = 200_000_000, max_file_bytes: int = 20_000_000) -> ImageSet:
    """Read a zip of one folder per class (``cats/1.png``, ``dogs/a.jpg``) into a 3-channel ImageSet.

    One wrapping folder around the class folders is allowed. Hidden files and ``__MACOSX`` are
    skipped; any other non-image file is an error. Members are read in memory (nothing is
    extracted), converted to RGB and resized to ``image_size`` x ``image_size``; class names are
    the folder names, sorted.
    """
    if image_size < 4 or image_size > 512:
        raise ConfigError(f"image_size must be between 4 and 512, got {image_size}")
    path = Path(path)
    if not path.is_file():
        raise NotFoundError(f"no zip file named {path.name!r}; upload a .zip with one folder per class")
    if not zipfile.is_zipfile(path):
        raise DataError(f"{path.name!r} is not a zip file; upload a .zip with one folder per class")
    try:
        zf = zipfile.ZipFile(path)
    except zipfile.BadZipFile as exc:
        raise DataError(f"{path.name!r} is a damaged zip ({exc}); create it again") from None
    with zf:
        members: list[tuple[tuple[str, ...], zipfile.ZipInfo]] = []
        for info in zf.infolist():
            parts = zip_member_parts(info)  # symlinks, absolute and '..' names refused
            if info.is_dir() or not parts or _is_junk(parts):
                continue
            if PurePosixPath(parts[-1]).suffix.lower() not in IMAGE_EXTENSIONS:
                raise DataError(f"{info.filename!r} in the zip is not an image (accepted: "
                                f"{', '.join(sorted(IMAGE_EXTENSIONS))}); remove it")
            members.append((parts, info))
        if len(members) > max_files:
            raise DataError(f"the zip holds {len(members):,} images; the limit is {max_files:,}")
        total = sum(info.file_size for _, info in members)
        if total > max_total_bytes:
            raise DataError(f"the zip unpacks to {total:,} bytes; the limit is {max_total_bytes:,}: "
                            f"use fewer or smaller images")
        # strip wrapping folders shared by every member (e.g. "mydata/cats/1.png")
        while members and all(len(p) >= 3 for p, _ in members) and len({p[0] for p, _ in members}) == 1:
            members = [(p[1:], info) for p, info in members]
        for parts, info in members:
            if len(parts) < 2:
                raise DataError(f"{info.filename!r} is not inside a class folder; put each image in "
                                f"a folder named after its class")
        class_names = sorted({p[0] for p, _ in members})
        if len(class_names) < 2:
            found = f"only {class_names[0]!r}" if class_names else "no images"
            raise DataError(f"the zip needs at least 2 class folders with images, found {found}")
        index = {name: i for i, name in enumerate(class_names)}
        images = np.empty((len(members), 3, image_size, image_size), dtype=np.float32)
        labels = np.empty(len(members), dtype=np.int64)
        read_total = 0
        for k, (parts, info) in enumerate(sorted(members, key=lambda m: m[0])):
            if info.file_size > max_file_bytes:
                raise DataError(f"{info.filename!r} is {info.file_size:,} bytes; the limit per image "
                                f"is {max_file_bytes:,}")
            try:
                with zf.open(info) as fh:
                    data = fh.read(max_file_bytes + 1)  # declared sizes can lie
            except (RuntimeError, zipfile.BadZipFile, zlib.error, OSError) as exc:
                raise DataError(f"{info.filename!r} cannot be read from the zip ({exc}); "
                                f"re-create the zip without a password") from None
            if len(data) > max_file_bytes:
                raise DataError(f"{info.filename!r} is over {max_file_bytes:,} bytes; use a smaller image")
            read_total += len(data)
            if read_total > max_total_bytes:  # declared sizes can lie: count what was really unpacked
                raise DataError(f"the zip unpacks to over {max_total_bytes:,} bytes; use fewer or smaller images")
            try:
                with Image.open(io.BytesIO(data)) as img:
                    if img.width * img.height > _MAX_PIXELS:
                        raise DataError(f"{info.filename!r} is {img.width}x{img.height} pixels; the limit "
                                        f"is {_MAX_PIXELS:,} pixels per image")
                    rgb = img.convert("RGB").resize((image_size, image_size), Image.Resampling.BILINEAR)
                    array = np.asarray(rgb, dtype=np.float32) / 255.0  # [H, W, 3]
            except DataError:
                raise
            except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError) as exc:
                raise DataError(f"{info.filename!r} in the zip cannot be read as an image "
                                f"({type(exc).__name__}); remove or re-save it") from None
            images[k] = array.transpose(2, 0, 1)
            labels[k] = index[parts[0]]
    return ImageSet(images=torch.from_numpy(images), labels=torch.from_numpy(labels),
                    class_names=class_names)


def _random_subset(data: ImageSet, n: int | None, seed: int, name: str) -> ImageSet:
    if n is None:
        return data
    if n < 1:
        raise ConfigError(f"n must be >= 1, got {n}")
    if n > data.n:
        raise DataError(f"image set {name!r} has {data.n} images; ask for at most {data.n}")
    if n == data.n:
        return data
    idx = np.sort(np.random.default_rng(seed).permutation(data.n)[:n])
    return data.subset(idx.tolist())


def _digits_set(n: int | None, seed: int) -> ImageSet:
    return _random_subset(load_digits(), n, seed, "digits")


def _shapes_set(n: int | None, seed: int, image_size: int = 32,
                classes: Sequence[str] = DEFAULT_SHAPES) -> ImageSet:
    return make_shapes(2000 if n is None else n, seed, image_size=image_size, classes=classes)


def _zip_set(n: int | None, seed: int, path: str | os.PathLike | None = None,
             image_size: int = 32) -> ImageSet:
    if path is None:
        raise ConfigError("image set 'zip' needs path=<zip with one folder per class>")
    return _random_subset(load_image_zip(path, image_size=image_size), n, seed, "zip")


@dataclass(frozen=True)
class ImageSetSpec:
    """A named image set: description, channel count and its maker (n, seed, **opts)."""

    name: str
    description: str
    channels: int
    make: Callable[..., ImageSet]


IMAGE_SETS: dict[str, ImageSetSpec] = {
    s.name: s for s in (
        ImageSetSpec("digits", "scikit-learn 8x8 handwritten digits, 10 classes, grey", 1, _digits_set),
        ImageSetSpec("shapes", "procedural shapes on noisy backgrounds, with object masks "
                     "(opts: image_size, classes)", 3, _shapes_set),
        ImageSetSpec("zip", "your own zip, one folder per class (opts: path, image_size)", 3, _zip_set),
    )
}


def load_image_set(name: str, n: int | None, seed: int, **opts) -> ImageSet:
    """Load the image set ``name``: n images (None: all / 2000 for shapes), seeded."""
    if name not in IMAGE_SETS:
        raise ConfigError(f"unknown image set {name!r}; choose one of: {', '.join(IMAGE_SETS)}")
    make = IMAGE_SETS[name].make
    valid = [p for p in inspect.signature(make).parameters if p not in ("n", "seed")]
    unknown = sorted(set(opts) - set(valid))
    if unknown:
        raise ConfigError(f"image set {name!r} has no option {', '.join(map(repr, unknown))}; "
                          f"valid options: {', '.join(valid) or 'none'}")
    return make(n, seed, **opts)
