"""Byte progress of a Hub download, fed by huggingface_hub's own progress hook.

``hf_hub_download(..., tqdm_class=cls)`` makes one ``cls(total=..., initial=..., desc=...)`` per
file and calls its ``update(n)`` with every chunk it writes. :func:`byte_reporter` builds such a
class that draws nothing and instead reports a :class:`DownloadProgress` (file, bytes so far,
bytes in all) to a callback, and that raises :class:`DownloadStopped` at the next chunk once
``stop`` says so: huggingface_hub deletes its partial ``*.incomplete`` file (2.x; older versions
keep it to resume), nothing that looks whole is left in its cache, and the import saves nothing.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tqdm import tqdm

from playground.errors import PlaygroundError
from playground.stopping import StopFlag, is_stopped


def human_bytes(n: int) -> str:
    """1234567 -> '1.2 MB' (decimal units)."""
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:,.1f} {unit}"
    return f"{n} bytes"


class DownloadStopped(PlaygroundError):
    """The user stopped a download; nothing was imported."""


@dataclass(frozen=True)
class DownloadProgress:
    """One file's download so far."""

    filename: str
    done: int  # bytes written so far
    total: int | None  # bytes of the whole file (None: the server did not say)

    @property
    def fraction(self) -> float | None:
        return None if not self.total else min(1.0, self.done / self.total)

    def line(self) -> str:
        """'Downloading model.safetensors: 12.3 MB of 353.8 MB (3%)'."""
        if not self.total:
            return f"Downloading {self.filename}: {human_bytes(self.done)}"
        return (f"Downloading {self.filename}: {human_bytes(self.done)} of {human_bytes(self.total)} "
                f"({100 * (self.fraction or 0):.0f}%)")


def byte_reporter(filename: str, report: Callable[[DownloadProgress], None], stop: StopFlag = None) -> type[tqdm]:
    """A tqdm class for huggingface_hub's ``tqdm_class`` that reports ``filename``'s bytes to
    ``report`` (once at the start, then after every chunk) and stops the download when ``stop`` is set."""

    class ByteReporter(tqdm):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs.pop("name", None)
            kwargs["disable"] = True  # nothing drawn on a terminal: the caller shows the progress
            super().__init__(*args, **kwargs)
            self.bytes_done = int(kwargs.get("initial") or 0)
            total = kwargs.get("total")
            self.bytes_total = int(total) if total else None
            self._check()
            report(DownloadProgress(filename, self.bytes_done, self.bytes_total))

        def _check(self) -> None:
            if is_stopped(stop):
                raise DownloadStopped(f"Stopped: the download of {filename} was cut off; nothing was imported.")

        def update(self, n: float | None = 1) -> bool | None:
            self._check()
            self.bytes_done += int(n or 0)
            report(DownloadProgress(filename, self.bytes_done, self.bytes_total))
            return None

    return ByteReporter


__all__ = ["DownloadProgress", "DownloadStopped", "byte_reporter", "human_bytes"]
