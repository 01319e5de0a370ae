"""Where a pretrained checkpoint's files come from: a ``save_pretrained`` folder or the Hub.

A :class:`Source` hands out the files one at a time (config.json first, so the size is known
before the weights are fetched). Hub files come through ``huggingface_hub`` (its own cache; a
download is written to ``*.incomplete`` and renamed, so a cut-off leaves no file that looks
whole; ``report`` receives its byte progress through huggingface_hub's ``tqdm_class`` hook and
``stop`` cuts it off, see :mod:`playground.pretrained.progress`); offline (``HF_HUB_OFFLINE=1``
or ``offline=True``) only its cache is read. Nothing is unpickled: a folder with
``pytorch_model.bin`` only is refused.
"""
from __future__ import annotations

import inspect
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from playground.errors import ConfigError, NotFoundError, OfflineError, PlaygroundError
from playground.pretrained.progress import DownloadProgress, byte_reporter
from playground.stopping import StopFlag

HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$")
PICKLES = ("pytorch_model.bin", "pytorch_model.bin.index.json", "tf_model.h5", "flax_model.msgpack")
WEIGHTS, SHARD_INDEX = "model.safetensors", "model.safetensors.index.json"


def hub_offline(offline: bool | None = None) -> bool:
    """Whether only the Hub's cache may be read (``offline``, else HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE)."""
    if offline is not None:
        return offline
    return any(os.environ.get(v, "").strip().lower() in ("1", "true", "yes", "on")
               for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


@dataclass
class Source:
    """One checkpoint's files. ``label``: what to call it in messages and in the bundle."""

    label: str
    folder: Path | None = None  # a local save_pretrained folder
    repo_id: str | None = None  # a Hub model id
    revision: str | None = None
    cache_dir: Path | None = None
    offline: bool = False
    report: Callable[[DownloadProgress], None] | None = None  # byte progress of each Hub download
    stop: StopFlag = None  # cuts a Hub download off at its next chunk (DownloadStopped)

    @property
    def default_name(self) -> str:
        """A workspace name for the import: the id's or folder's last part."""
        base = (self.repo_id or self.label).rstrip("/").split("/")[-1]
        name = re.sub(r"[^A-Za-z0-9._-]", "-", base).lstrip(".-_")[:64]
        return name or "pretrained"

    def has(self, filename: str) -> bool:
        """Whether the checkpoint has ``filename`` (a Hub repo: in its file list, or the cache offline)."""
        if self.folder is not None:
            return (self.folder / filename).is_file()
        try:
            self.fetch(filename, dry_run=True)
            return True
        except (NotFoundError, OfflineError):  # offline: not in the cache counts as absent
            return False

    def size(self, filename: str) -> int | None:
        """Bytes of ``filename`` before fetching it (None when unknown)."""
        if self.folder is not None:
            path = self.folder / filename
            return path.stat().st_size if path.is_file() else None
        info = self.fetch(filename, dry_run=True)
        return getattr(info, "file_size", None)

    def fetch(self, filename: str, dry_run: bool = False) -> Any:
        """The local path of ``filename`` (downloaded when it has to be); NotFoundError when absent."""
        if self.folder is not None:
            path = self.folder / filename
            if not path.is_file():
                raise NotFoundError(f"{self.label} has no {filename}.")
            return path
        return _hub_file(self, filename, dry_run)

    def read_json(self, filename: str) -> dict[str, Any]:
        """A JSON file of the checkpoint as a dict; ConfigError when it is not JSON."""
        path = self.fetch(filename)
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigError(f"{filename} of {self.label} is not readable JSON ({str(exc)[:120]}).") from exc
        if not isinstance(data, dict):
            raise ConfigError(f"{filename} of {self.label} is not a JSON object.")
        return data


MAX_HUB_ID = 96  # huggingface_hub's validate_repo_id refuses longer ids


def open_source(source: str, *, allow_paths: bool = True, cache_dir: str | Path | None = None,
                offline: bool | None = None, revision: str | None = None) -> Source:
    """A local folder (when ``allow_paths``: the CLI) or a Hub id; PlaygroundError saying which was expected."""
    text = (source or "").strip()
    if not text:
        raise ConfigError("Give a Hugging Face model id (e.g. distilgpt2) or a folder written by save_pretrained.")
    if allow_paths:
        path = Path(text).expanduser()
        if path.is_dir():
            check_folder(path)
            return Source(label=path.name, folder=path.resolve())
        if path.exists() or text.startswith((".", "/", "~")) or os.sep in text and text.count("/") > 1:
            raise NotFoundError(f"{text!r} is not a folder; give a folder written by save_pretrained or a Hub model id.")
    if len(text) > MAX_HUB_ID:
        raise ConfigError(f"{text[:40]!r}… ({len(text):,} characters) is not a Hugging Face model id: "
                          f"ids are at most {MAX_HUB_ID} characters (like gpt2 or google/vit-base-patch16-224).")
    if not HUB_ID.match(text) or ".." in text:
        raise ConfigError(f"{text!r} is not a Hugging Face model id (like gpt2 or google/vit-base-patch16-224)."
                          + ("" if allow_paths else " Here only Hub ids and your uploads are accepted, not server paths."))
    return Source(label=text, repo_id=text, revision=revision, cache_dir=Path(cache_dir) if cache_dir else None,
                  offline=hub_offline(offline))


def check_folder(path: Path) -> None:
    """Refuse a folder that is not a safetensors save_pretrained folder, saying what it lacks."""
    if not (path / "config.json").is_file():
        raise NotFoundError(f"The folder {path.name!r} has no config.json: give a folder written by "
                            "save_pretrained (config.json + model.safetensors).")
    if not (path / WEIGHTS).is_file() and not (path / SHARD_INDEX).is_file():
        pickles = [p for p in PICKLES if (path / p).is_file()]
        if pickles:
            raise ConfigError(f"The folder {path.name!r} has only {pickles[0]}, a pickle, which the playground never "
                              "loads (unpickling can run code). Save it as safetensors: "
                              "model.save_pretrained(folder, safe_serialization=True).")
        raise NotFoundError(f"The folder {path.name!r} has no model.safetensors.")


def _cached_info(source: Source, filename: str) -> SimpleNamespace:
    """A dry run's answer from the cache alone (older huggingface_hub); NotFoundError when not cached offline."""
    from huggingface_hub import (
        try_to_load_from_cache,  # function-level: as in _hub_file
    )

    found = try_to_load_from_cache(source.repo_id or "", filename, cache_dir=source.cache_dir, revision=source.revision)
    if isinstance(found, str):
        return SimpleNamespace(file_size=Path(found).stat().st_size, is_cached=True)
    if source.offline:
        raise NotFoundError(f"{source.label} has no {filename} in the Hugging Face cache.")
    return SimpleNamespace(file_size=None, is_cached=False)


def _hub_file(source: Source, filename: str, dry_run: bool) -> Any:
    """hf_hub_download with one clear line for each way it fails."""
    # function-level: huggingface_hub is only needed for Hub imports and is slow to import
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import (
        EntryNotFoundError,
        GatedRepoError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    try:
        if dry_run and "dry_run" not in inspect.signature(hf_hub_download).parameters:
            return _cached_info(source, filename)  # huggingface_hub before 1.0: the cache is all we can ask
        extra: dict[str, Any] = {"dry_run": True} if dry_run else {}
        if not dry_run and source.report is not None and "tqdm_class" in inspect.signature(hf_hub_download).parameters:
            extra["tqdm_class"] = byte_reporter(filename, source.report, source.stop)
        return hf_hub_download(source.repo_id or "", filename, revision=source.revision, cache_dir=source.cache_dir,
                               local_files_only=source.offline, **extra)
    except GatedRepoError as exc:
        raise PlaygroundError(f"{source.label} is gated on the Hub: accept its terms and log in "
                              "(huggingface-cli login) first.") from exc
    except (RepositoryNotFoundError, RevisionNotFoundError) as exc:
        raise NotFoundError(f"No model {source.label!r} on the Hugging Face Hub (check the id).") from exc
    except LocalEntryNotFoundError as exc:  # before EntryNotFoundError, its base class
        if source.offline:
            raise OfflineError(f"{source.label}'s {filename} is not in the Hugging Face cache and the Hub is offline "
                               "(HF_HUB_OFFLINE): download it once online, or give a save_pretrained folder.") from exc
        raise OfflineError(f"Could not reach the Hugging Face Hub for {source.label} and it is not in the cache: "
                           "check the connection, or give a save_pretrained folder.") from exc
    except EntryNotFoundError as exc:
        raise NotFoundError(f"{source.label} has no {filename}.") from exc
    except OSError as exc:  # a network error mid-download (the .incomplete file is not used)
        raise OfflineError(f"Downloading {source.label}'s {filename} failed ({str(exc)[:120]}); nothing was "
                           "imported. Try again.") from exc
