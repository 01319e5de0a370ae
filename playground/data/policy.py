"""Which files a data reference may open: the CLI's paths, or only uploads on a shared server.

A corpus, pair file or image zip is named by a string (``data.corpus``, ``data.path``, a form
field). On the command line the user owns the machine, so the string may be any path. In the
served app (``Settings.user_paths`` False) no typed string reaches the file system: data comes
from the built-in sets, or from a file the user uploaded, which is copied into the user's own
``<workspace>/uploads/`` folder and named ``upload:<file name>`` in the preset.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import tempfile
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from playground.errors import DataError, NotFoundError
from playground.workspace import Workspace

UPLOAD_PREFIX = "upload:"
UPLOADS_FOLDER = "uploads"
UPLOAD_SUFFIXES = (".txt", ".tsv", ".csv", ".zip")
MAX_ZIP_MEMBERS = 20_000
MAX_ZIP_UNPACKED_BYTES = 200_000_000
MAX_ZIP_RATIO = 200  # unpacked / packed bytes of one member; more looks like a zip bomb
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


class PathRefused(DataError):
    """A typed path on a server where data comes only from built-in sets and uploads."""


@dataclass(frozen=True)
class DataPolicy:
    """Where data files may come from.

    - ``allow_paths``: a reference may be any file path (the CLI; False in the served app).
    - ``uploads``: the user's own upload folder, where ``upload:<name>`` references resolve.
    - ``max_upload_bytes``: the largest upload accepted into ``uploads`` (None = no limit).
    - ``max_space_bytes`` / ``max_spaces_bytes``: what the user's space (the folder above ``uploads``)
      and every space under ``spaces_root`` may hold with this upload (None = no limit).
    """

    allow_paths: bool = True
    uploads: Path | None = None
    max_upload_bytes: int | None = None
    # A shared server's disk: the user's whole space (uploads, models, tokenizers) and all spaces
    # together (`spaces_root`) are capped, so that no visitor fills the disk with uploads.
    max_space_bytes: int | None = None
    spaces_root: Path | None = None
    max_spaces_bytes: int | None = None

    def is_upload_ref(self, spec: str) -> bool:
        """Whether `spec` names a file in the user's upload folder (``upload:<name>``)."""
        return isinstance(spec, str) and spec.strip().startswith(UPLOAD_PREFIX)

    def resolve(self, spec: str, field: str, choices: Sequence[str] = ()) -> Path:
        """The file `spec` names, or PathRefused / NotFoundError saying what to do instead.

        `field` is what the user typed it into (``data.corpus``); `choices` are the built-in
        alternatives named in the message.
        """
        if not isinstance(spec, str) or not spec.strip():
            raise DataError(f"{field} is empty; {self._how(choices)}")
        spec = spec.strip()
        if self.is_upload_ref(spec):
            return self._upload_file(spec[len(UPLOAD_PREFIX):].strip(), field, choices)
        if not self.allow_paths:
            raise PathRefused(f"Paths are not accepted on a shared server ({field}): {self._how(choices)}")
        return Path(spec)

    def _upload_file(self, name: str, field: str, choices: Sequence[str]) -> Path:
        if self.uploads is None:
            raise PathRefused(f"{field} names an upload, but uploads have no folder here; {self._how(choices)}")
        if not name or name != Path(name).name or name.startswith(".") or "\\" in name or ".." in name:
            raise PathRefused(f"{field}: {UPLOAD_PREFIX}<name> takes a plain file name from the Upload box; "
                              f"{self._how(choices)}")
        folder = Path(self.uploads)
        path = folder / name
        try:
            info = os.lstat(path)
        except OSError:
            raise NotFoundError(f"{field}: no uploaded file {name!r} in your space; upload it again with the "
                                f"Upload box in the Train tab.") from None
        if stat.S_ISLNK(info.st_mode) or not stat.S_ISREG(info.st_mode):
            raise PathRefused(f"{field}: {name!r} is not a plain uploaded file; upload the file itself again.")
        if path.resolve().parent != folder.resolve():
            raise PathRefused(f"{field}: {name!r} is outside your upload folder; upload the file again.")
        return path

    @staticmethod
    def _how(choices: Sequence[str]) -> str:
        how = "upload the file with the Upload box in the Train tab"
        return f"{how}, or choose one of: {', '.join(choices)}." if choices else f"{how}."

    def store_upload(self, source: str | os.PathLike) -> str:
        """Copy an uploaded file (a gradio temp file) into the user's upload folder; return the
        ``upload:<name>`` reference to write into the preset. Symlinks, non-files, oversize
        files and unsafe zips are refused."""
        if self.uploads is None:
            raise DataError("Uploads have no folder on this server; choose a built-in data set instead.")
        src = Path(source)
        check_upload(src, self.max_upload_bytes)
        suffix = src.suffix.lower()
        if suffix not in UPLOAD_SUFFIXES:
            raise DataError(f"{src.name!r} is not a .txt, .tsv, .csv or .zip file; upload one of those.")
        if suffix == ".zip":
            check_zip(src)
        self._check_room(src.stat().st_size)
        digest = _sha256(src)
        stem = _SAFE_NAME.sub("_", src.stem).strip("._-")[:40] or "upload"
        folder = Path(self.uploads)
        folder.mkdir(parents=True, exist_ok=True)
        name = f"{stem}{suffix}"
        dest = folder / name
        if dest.exists() or dest.is_symlink():
            if dest.is_file() and not dest.is_symlink() and _sha256(dest) == digest:
                return UPLOAD_PREFIX + name
            name = f"{stem}-{digest[:8]}{suffix}"
            dest = folder / name
            if dest.is_file() and not dest.is_symlink():
                return UPLOAD_PREFIX + name
        fd, tmp = tempfile.mkstemp(prefix=".upload-", dir=folder)
        try:
            with os.fdopen(fd, "wb") as out, open(src, "rb") as fh:
                shutil.copyfileobj(fh, out)
            os.replace(tmp, dest)
        finally:
            Path(tmp).unlink(missing_ok=True)
        return UPLOAD_PREFIX + name


    def _check_room(self, size: int) -> None:
        """DataError when `size` more bytes would take the user's space, or all spaces, past their cap."""
        own = Path(self.uploads).parent if self.uploads is not None else None
        if self.max_space_bytes is not None and own is not None:
            used = folder_bytes(own)
            if used + size > self.max_space_bytes:
                raise DataError(f"Your space holds {used / 1e6:,.1f} MB (uploads, models and tokenizers); this server "
                                f"keeps up to {self.max_space_bytes / 1e6:,.0f} MB per user. Delete uploads or entries "
                                "in My space first.")
        if (self.max_spaces_bytes is not None and self.spaces_root is not None
                and folder_bytes(self.spaces_root) + size > self.max_spaces_bytes):
            raise DataError("This server's disk for users' files is full; try again later or use a built-in data set.")


def folder_bytes(folder: Path) -> int:
    """Bytes of the plain files under `folder` (symlinks not followed; 0 when it does not exist)."""
    total = 0
    for path in Path(folder).rglob("*"):
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode):
            total += info.st_size
    return total


def data_policy(settings: Any, workspace: Workspace | None = None) -> DataPolicy:
    """The policy for these settings (``user_paths``, upload cap) and this user's workspace."""
    caps = getattr(settings, "caps", None)
    mb = getattr(caps, "max_upload_mb", None)
    space_mb, all_mb = getattr(caps, "max_space_mb", None), getattr(caps, "max_spaces_total_mb", None)
    uploads = uploads_dir(workspace)
    return DataPolicy(allow_paths=bool(getattr(settings, "user_paths", True)),
                      uploads=uploads,
                      max_upload_bytes=int(mb * 1_000_000) if mb else None,
                      max_space_bytes=int(space_mb * 1_000_000) if space_mb else None,
                      spaces_root=uploads.parent.parent if uploads is not None else None,
                      max_spaces_bytes=int(all_mb * 1_000_000) if all_mb else None)


def uploads_dir(workspace: Workspace | None) -> Path | None:
    """The user's upload folder inside `workspace` (None without a workspace)."""
    root = getattr(workspace, "root", None)
    return Path(root) / UPLOADS_FOLDER if root is not None else None


def default_policy(policy: DataPolicy | None, workspace: Workspace | None = None) -> DataPolicy:
    """`policy`, or the rule that goes with `workspace`: a user's space in the app (`names_only`)
    never opens a path (an experiment rebuilding an instructor's bundle trained from a CLI path
    included); the command line's workspace may. Either way `workspace`'s upload folder."""
    if policy is not None:
        return policy
    return DataPolicy(allow_paths=not getattr(workspace, "names_only", False), uploads=uploads_dir(workspace))


def check_upload(path: str | os.PathLike, max_bytes: int | None = None) -> Path:
    """`path` if it is a plain file (not a symlink) within `max_bytes`; DataError otherwise."""
    path = Path(path)
    try:
        info = os.lstat(path)
    except OSError:
        raise NotFoundError(f"The upload {path.name!r} is gone; upload it again.") from None
    if stat.S_ISLNK(info.st_mode):
        raise DataError(f"The upload {path.name!r} is a symbolic link; upload the file itself.")
    if not stat.S_ISREG(info.st_mode):
        raise DataError(f"The upload {path.name!r} is not a plain file; upload a .txt, .tsv or .zip file.")
    if max_bytes is not None and info.st_size > max_bytes:
        raise DataError(f"{path.name} is {info.st_size / 1e6:.1f} MB; this server accepts files up to "
                        f"{max_bytes / 1e6:.1f} MB. Upload a smaller file.")
    return path


def zip_member_parts(info: zipfile.ZipInfo) -> tuple[str, ...]:
    """Path components of a zip member; DataError for symlinks, absolute or ``..`` names."""
    name = info.filename
    if stat.S_ISLNK(info.external_attr >> 16):
        raise DataError(f"the zip holds a symbolic link {name!r}; zip the files themselves "
                        f"(e.g. `zip -r` without -y)")
    clean = name.replace("\\", "/")
    parts = PurePosixPath(clean).parts
    if clean.startswith("/") or ".." in parts or (parts and ":" in parts[0]):
        raise DataError(f"the zip holds an unsafe path {name!r} (absolute or with '..'); "
                        f"re-create the zip from the folder that holds the class folders")
    return tuple(p for p in parts if p not in ("", "."))


def check_zip(path: str | os.PathLike, max_members: int = MAX_ZIP_MEMBERS,
              max_unpacked: int = MAX_ZIP_UNPACKED_BYTES) -> None:
    """Refuse a zip with symlinks, absolute or ``..`` members, too many members, or a declared
    unpacked size or compression ratio that looks like a zip bomb (nothing is extracted)."""
    path = Path(path)
    try:
        with zipfile.ZipFile(path) as zf:
            infos = zf.infolist()
    except (zipfile.BadZipFile, OSError) as exc:
        raise DataError(f"{path.name!r} is not a readable zip ({type(exc).__name__}); create it again.") from None
    if len(infos) > max_members:
        raise DataError(f"the zip holds {len(infos):,} entries; the limit is {max_members:,}")
    total = 0
    for info in infos:
        zip_member_parts(info)
        total += info.file_size
        if info.file_size > 1_000_000 and info.file_size > MAX_ZIP_RATIO * max(info.compress_size, 1):
            raise DataError(f"{info.filename!r} unpacks {info.file_size // max(info.compress_size, 1):,} times "
                            f"its packed size; that looks like a zip bomb: zip the images themselves")
    if total > max_unpacked:
        raise DataError(f"the zip unpacks to {total:,} bytes; the limit is {max_unpacked:,}: "
                        f"use fewer or smaller images")


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
