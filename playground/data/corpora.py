"""Text corpora for tokenizers and language models: built-in, uploaded or pasted.

Built in, on every install, no download:

- ``python-docs``: the English text of Python's built-in help topics (``pydoc_data.topics``).
- ``python-code``: the standard library's own ``.py`` files, read from the running interpreter's
  stdlib folder in sorted path order (tests and site-packages left out), capped in size.
- ``tinyshakespeare``: char-rnn's ``input.txt`` (1,115,394 characters of Shakespeare's plays,
  public domain), shipped gzipped as ``texts/tinyshakespeare.txt.gz`` beside this module
  (package data), so the NanoGPT presets' default corpus works offline from the first Start.
  Made with ``gzip.compress(data, compresslevel=9, mtime=0)`` (byte-for-byte reproducible).

The download stays as a fallback only: an install slimmed of ``texts/`` fetches
``TINYSHAKESPEARE_URL`` once into ``workspace.cache_dir`` (and says how to upload the file when
offline). The shipped copy always wins; there is nothing to re-download, since the text never
changes. ``PLAYGROUND_OFFLINE=1`` in the environment turns every download off (``fetch_url``
raises OfflineError), for workshops on networks without internet access.

Anything else is a path to a UTF-8 ``.txt`` file or pasted text; on a shared server only an
upload (``upload:<name>``, see playground.data.policy) or pasted text.
Every corpus is capped by ``DemoCaps.max_corpus_chars`` (cut at a line end, and the
description says so); files bigger than ``DemoCaps.max_upload_mb`` are refused before they
are read.
"""
from __future__ import annotations

import dataclasses
import gzip
import os
import sysconfig
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from pydoc_data.topics import topics

from playground.data.policy import DataPolicy, default_policy
from playground.errors import DataError, NotFoundError, OfflineError
from playground.settings import FULL_CAPS, DemoCaps

TINYSHAKESPEARE_URL = "https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt"
TINYSHAKESPEARE_SHIPPED = Path(__file__).with_name("texts") / "tinyshakespeare.txt.gz"
OFFLINE_ENV = "PLAYGROUND_OFFLINE"
PYTHON_CODE_MAX_CHARS = 2_000_000
_SKIP_STDLIB_DIRS = {"site-packages", "dist-packages", "test", "tests", "__pycache__", "idlelib",
                     "lib2to3", "turtledemo", "ensurepip", "venv", "config-3"}


@dataclass(frozen=True)
class Corpus:
    """A corpus ready to train on: a short name, its text and a one-line description."""

    name: str
    text: str
    description: str

    @property
    def chars(self) -> int:
        """Length of the text in characters."""
        return len(self.text)

    def to_meta(self) -> dict[str, object]:
        """What a tokenizer or model records about the corpus it was built on."""
        return {"name": self.name, "description": self.description, "chars": len(self.text)}


@dataclass(frozen=True)
class BuiltinCorpus:
    """One entry of the `CORPORA` registry."""

    name: str
    description: str
    needs_download: bool
    loader: Callable[..., str]


# -- fetching (the only network access; tests monkeypatch `fetch_url`) -------------------------

def downloads_off() -> bool:
    """True when ``PLAYGROUND_OFFLINE`` is set to anything but empty, 0, false or no."""
    return os.environ.get(OFFLINE_ENV, "").strip().lower() not in ("", "0", "false", "no")


def fetch_url(url: str, timeout: float = 30.0) -> bytes:
    """The body of `url` (raises OSError / urllib.error.URLError when offline, OfflineError
    when ``PLAYGROUND_OFFLINE`` turns downloads off)."""
    if downloads_off():
        raise OfflineError(
            f"Not downloading {url}: downloads are turned off on this server ({OFFLINE_ENV} is set). "
            "Get the file on a machine with internet access and upload it as a .txt file "
            "(or pass its path with --corpus PATH on the command line)."
        )
    with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 - a fixed https URL
        return response.read()


def download_to_cache(url: str, dest: Path, fetch: Callable[[str], bytes] | None = None) -> Path:
    """Fetch `url` into `dest` (atomically) unless it is already there; return `dest`."""
    if dest.is_file() and dest.stat().st_size > 0:
        return dest
    fetch = fetch or fetch_url
    try:
        data = fetch(url)
    except (urllib.error.URLError, OSError, TimeoutError) as exc:
        raise OfflineError(
            f"Could not download {dest.name} ({type(exc).__name__}): this machine seems to be offline. "
            f"Download {url} on a machine with internet access and upload it as a .txt file "
            "(or pass its path with --corpus PATH on the command line)."
        ) from None
    if not data:
        raise OfflineError(f"The download of {url} came back empty; try again later or upload the file as a .txt file.")
    decode_utf8(data, dest.name)  # refuse to cache something that is not text
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.part")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    return dest


# -- built-in corpora --------------------------------------------------------------------------

def python_docs_text() -> str:
    """Python's built-in help topics (`pydoc_data.topics`), sorted by topic name."""
    return "\n\n".join(topics[key].strip("\n") for key in sorted(topics)) + "\n"


def stdlib_dir() -> Path:
    """The running interpreter's standard library folder."""
    return Path(sysconfig.get_paths()["stdlib"])


def python_code_text(max_chars: int = PYTHON_CODE_MAX_CHARS, root: Path | None = None) -> str:
    """The stdlib's `.py` files in sorted path order, whole files only, up to `max_chars`."""
    root = root or stdlib_dir()
    parts: list[str] = []
    total = 0
    for path in _sorted_py_files(root):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if total + len(text) > max_chars:
            if parts:
                break
            text = text[:max_chars]
        parts.append(text)
        total += len(text)
    if not parts:
        raise NotFoundError(f"No Python source files found in the standard library folder {root.name}/.")
    return "\n".join(parts)


def _sorted_py_files(root: Path) -> Iterable[Path]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_STDLIB_DIRS and not d.startswith("config-"))
        for name in sorted(filenames):
            if name.endswith(".py"):
                yield Path(dirpath) / name


def shipped_text(path: Path) -> str | None:
    """A gzipped UTF-8 text shipped with the package, or None when this install left it out."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        raw = gzip.decompress(data)
    except (OSError, EOFError) as exc:  # gzip.BadGzipFile is an OSError; a cut file is an EOFError
        raise DataError(
            f"The built-in copy of {path.name} is damaged ({type(exc).__name__}); reinstall the playground."
        ) from None
    return decode_utf8(raw, path.name)


def tinyshakespeare_text(workspace=None, fetch: Callable[[str], bytes] | None = None) -> str:
    """tinyshakespeare as shipped with the package; an install without that file downloads it
    once into the workspace cache instead."""
    text = shipped_text(TINYSHAKESPEARE_SHIPPED)
    if text is not None:
        return text
    if workspace is None:
        raise DataError("This install has no built-in copy of tinyshakespeare, and it is downloaded into a "
                        "workspace cache; give a workspace, or upload the text as a .txt file.")
    path = download_to_cache(TINYSHAKESPEARE_URL, Path(workspace.cache_dir) / "tinyshakespeare.txt", fetch=fetch)
    return decode_utf8(path.read_bytes(), path.name)


_SHIPPED = TINYSHAKESPEARE_SHIPPED.is_file()  # False only on an install slimmed of texts/

CORPORA: dict[str, BuiltinCorpus] = {
    "python-docs": BuiltinCorpus("python-docs", "Python's built-in help topics (pydoc_data.topics), English prose",
                                 False, lambda workspace=None, fetch=None: python_docs_text()),
    "python-code": BuiltinCorpus("python-code", "Python standard library source files (sorted, whole files)",
                                 False, lambda workspace=None, fetch=None: python_code_text()),
    "tinyshakespeare": BuiltinCorpus(
        "tinyshakespeare",
        "Tiny Shakespeare (char-rnn's input.txt), " + ("built in, no download" if _SHIPPED else "downloaded once"),
        not _SHIPPED, tinyshakespeare_text),
}


# -- files and pasted text ---------------------------------------------------------------------

def decode_utf8(data: bytes, label: str) -> str:
    """`data` as text, or DataError naming `label` and the first offending byte offset."""
    offset = data.find(b"\x00")
    if offset >= 0:
        raise DataError(f"{label} looks like a binary file (a NUL byte at offset {offset}); upload plain UTF-8 text (.txt).")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(
            f"{label} is not UTF-8 text: byte 0x{data[exc.start]:02x} at offset {exc.start} cannot be decoded. "
            "Save the file as UTF-8 (most editors offer this under 'Save as' / encoding) and upload it again."
        ) from None
    return text.removeprefix("\ufeff")


def read_text_file(path: str | Path, max_bytes: int | None = None) -> str:
    """One UTF-8 text file; its size is checked by stat before it is read."""
    path = Path(path)
    label = path.name
    if not path.is_file():
        raise NotFoundError(
            f"No corpus file {label!r}; give a built-in corpus ({', '.join(CORPORA)}) or the path of a UTF-8 .txt file."
        )
    size = path.stat().st_size
    if max_bytes is not None and size > max_bytes:
        raise DataError(
            f"{label} is {size / 1e6:.1f} MB; this server accepts files up to {max_bytes / 1e6:.1f} MB. "
            "Upload a smaller excerpt."
        )
    if size == 0:
        raise DataError(f"{label} is empty; upload a file with some text in it.")
    text = decode_utf8(path.read_bytes(), label)
    if not text.strip():
        raise DataError(f"{label} holds only whitespace; upload a file with some text in it.")
    return text


def read_text_files(paths: Sequence[str | Path], max_bytes: int | None = None) -> str:
    """Several UTF-8 text files joined by blank lines (each checked as in `read_text_file`)."""
    if not paths:
        raise DataError("No files were given; upload one or more UTF-8 .txt files.")
    return "\n\n".join(read_text_file(p, max_bytes).strip("\n") for p in paths) + "\n"


def _max_bytes(caps: DemoCaps) -> int | None:
    return int(caps.max_upload_mb * 1_000_000) if caps.max_upload_mb else None


def cap_text(text: str, max_chars: int | None) -> tuple[str, bool]:
    """`text` cut to at most `max_chars` at a line end where there is one; (text, was_cut)."""
    if max_chars is None or len(text) <= max_chars:
        return text, False
    cut = text.rfind("\n", 0, max_chars)
    return text[: cut + 1 if cut > max_chars // 2 else max_chars], True


def _finish(name: str, text: str, description: str, caps: DemoCaps) -> Corpus:
    if not text.strip():
        raise DataError(f"The corpus {name!r} is empty; give some text to train on.")
    text, cut = cap_text(text, caps.max_corpus_chars)
    note = f", first {len(text):,} characters (server cap)" if cut else ""
    return Corpus(name, text, f"{description} ({len(text):,} characters{note})")


def corpus_from_text(text: str | None, caps: DemoCaps = FULL_CAPS, name: str = "pasted") -> Corpus:
    """A corpus from pasted text."""
    if text is None or not text.strip():
        raise DataError("The pasted text is empty; paste some text or pick a built-in corpus.")
    return _finish(name, text, "pasted text", caps)


def corpus_from_files(paths: Sequence[str | Path], caps: DemoCaps = FULL_CAPS) -> Corpus:
    """A corpus from uploaded / local UTF-8 text files."""
    paths = [p for p in (paths or []) if p]
    text = read_text_files(paths, _max_bytes(caps))
    names = [Path(p).name for p in paths]
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    name = Path(names[0]).stem if len(names) == 1 else f"{len(names)} files"
    return _finish(name, text, f"uploaded {shown}", caps)


def load_corpus(spec: str, workspace=None, caps: DemoCaps = FULL_CAPS,
                fetch: Callable[[str], bytes] | None = None, policy: DataPolicy | None = None,
                field: str = "data.corpus") -> Corpus:
    """A built-in corpus by name (see `CORPORA`), an ``upload:<name>`` in the user's upload
    folder, or a UTF-8 text file by path where `policy` allows paths (None: the CLI's policy)."""
    if not isinstance(spec, str) or not spec.strip():
        raise DataError(f"Name a corpus: one of {', '.join(CORPORA)}, or the path of a UTF-8 .txt file.")
    spec = spec.strip()
    if spec in CORPORA:
        entry = CORPORA[spec]
        return _finish(entry.name, entry.loader(workspace=workspace, fetch=fetch), entry.description, caps)
    path = default_policy(policy, workspace).resolve(spec, field, tuple(CORPORA))
    return corpus_from_files([path], caps)


def load_corpora(specs: Sequence[str], workspace=None, caps: DemoCaps = FULL_CAPS,
                 fetch: Callable[[str], bytes] | None = None, policy: DataPolicy | None = None) -> Corpus:
    """Several corpora (names or paths) joined into one; one spec is just `load_corpus`."""
    specs = [s for s in specs if s and s.strip()]
    if not specs:
        raise DataError(f"Name a corpus: one of {', '.join(CORPORA)}, or the path of a UTF-8 .txt file.")
    if len(specs) == 1:
        return load_corpus(specs[0], workspace, caps, fetch, policy)
    if all(s not in CORPORA for s in specs):
        rules = default_policy(policy, workspace)
        return corpus_from_files([rules.resolve(s, "corpus", tuple(CORPORA)) for s in specs], caps)
    uncapped = dataclasses.replace(caps, max_corpus_chars=None)
    parts = [load_corpus(s, workspace, uncapped, fetch, policy) for s in specs]
    text = "\n\n".join(p.text.strip("\n") for p in parts) + "\n"
    return _finish("+".join(p.name for p in parts), text, " + ".join(p.name for p in parts), caps)
