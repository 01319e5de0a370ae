"""From a corpus to a saved tokenizer, and back: the functions the Tokenizer tab and the CLI share.

A tokenizer folder (a workspace entry ``tokenizers/<name>/`` or an unsaved draft) holds:

- ``tokenizer.json``: the standard `tokenizers` format, loadable by ``Tokenizer.from_file`` and
  ``transformers.PreTrainedTokenizerFast(tokenizer_file=...)``;
- ``meta.json``: kind ("bpe" | "char"), options, vocabulary size, special tokens and their
  roles, the corpus it was built on, compression on held-out text, build time;
- ``token_counts.json``: how often each id occurs in the training text (for the vocabulary table).
"""
from __future__ import annotations

import datetime as _dt
import json
import shutil
import time
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tokenizers
from tokenizers import Tokenizer

from playground.data.corpora import Corpus
from playground.errors import DataError, NotFoundError
from playground.settings import DemoCaps
from playground.tokenization.bpe import BuildProgress, TokenizerOptions, iter_build
from playground.tokenization.build_process import iter_build_in_child
from playground.tokenization.stats import Compression, compression, split_held_out, token_counts
from playground.workspace import Workspace, validate_name, write_json

COUNTS_FILE = "token_counts.json"
ROLE_CANDIDATES = {
    "pad": ("<pad>",),
    "eos": ("<|endoftext|>", "<eos>"),
    "bos": ("<bos>", "<|endoftext|>"),
    "unk": ("<unk>",),
}


def special_roles(specials: tuple[str, ...] | list[str]) -> dict[str, str]:
    """Which special token plays which part (pad / bos / eos / unk), for trainers and transformers."""
    roles = {}
    for role, candidates in ROLE_CANDIDATES.items():
        for c in candidates:
            if c in specials:
                roles[role] = c
                break
    return roles


@dataclass
class BuiltTokenizer:
    """A freshly built tokenizer with what we learned about it."""

    tokenizer: Tokenizer
    options: TokenizerOptions
    corpus: dict[str, Any]
    compression: Compression
    held_out: bool
    counts: list[int]
    seconds: float
    meta_extra: dict[str, Any] = field(default_factory=dict)

    def meta(self) -> dict[str, Any]:
        """The meta.json contents."""
        specials = list(self.options.specials if self.options.kind == "bpe" else _char_specials(self.tokenizer))
        return {
            "kind": self.options.kind,
            "model": "BPE" if self.options.kind == "bpe" else "char",
            "vocab_size": self.tokenizer.get_vocab_size(),
            "options": self.options.to_dict(),
            "description": self.options.describe(),
            "special_tokens": specials,
            "roles": special_roles(specials),
            "corpus": self.corpus,
            "compression": {**self.compression.to_dict(),
                            "measured_on": "held-out text" if self.held_out else "training text (corpus too small to hold out)"},
            "build_seconds": round(self.seconds, 3),
            "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
            "tokenizers_version": tokenizers.__version__,
            **self.meta_extra,
        }


def _char_specials(tokenizer: Tokenizer) -> list[str]:
    added = json.loads(tokenizer.to_str()).get("added_tokens") or []
    return [a["content"] for a in sorted(added, key=lambda a: a["id"]) if a.get("special")]


def iter_train(corpus: Corpus, options: TokenizerOptions, caps: DemoCaps | None = None,
               held_out_fraction: float = 0.1, cancel=None,
               in_child: bool = False) -> Generator[BuildProgress, None, BuiltTokenizer]:
    """Build on the corpus minus a held-out tail, then measure compression on the tail and count
    tokens in the training part. Yields progress; returns a BuiltTokenizer.

    `in_child` builds in a child process that closing the generator terminates (the app's Stop)."""
    start = time.perf_counter()
    train_text, held = split_held_out(corpus.text, held_out_fraction)
    build = iter_build_in_child if in_child else iter_build
    tokenizer = yield from build(train_text, options, caps, cancel=cancel)
    yield BuildProgress("measuring", "Measuring compression and counting tokens", None, time.perf_counter() - start)
    comp = compression(tokenizer, held or train_text)
    counts = token_counts(tokenizer, train_text)
    seconds = time.perf_counter() - start
    corpus_meta = {**corpus.to_meta(), "train_chars": len(train_text), "held_out_chars": len(held)}
    built = BuiltTokenizer(tokenizer, options.checked(caps), corpus_meta, comp, bool(held), counts, seconds)
    yield BuildProgress("done", f"Built {built.options.describe()} in {seconds:.1f} s", 1.0, seconds)
    return built


def train(corpus: Corpus, options: TokenizerOptions, caps: DemoCaps | None = None,
          held_out_fraction: float = 0.1, on_progress=None) -> BuiltTokenizer:
    """Blocking `iter_train`; progress events go to `on_progress`."""
    gen = iter_train(corpus, options, caps, held_out_fraction)
    while True:
        try:
            event = next(gen)
        except StopIteration as stop:
            return stop.value
        if on_progress is not None:
            on_progress(event)


# -- folders --------------------------------------------------------------------------------------

def write_folder(folder: Path, built: BuiltTokenizer, name: str | None = None) -> Path:
    """Write tokenizer.json, meta.json and token_counts.json into `folder` (created if needed)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tokenizer.json").write_text(built.tokenizer.to_str(pretty=True), encoding="utf-8")
    meta = built.meta()
    write_json(folder / "meta.json", {"name": name, **meta} if name else meta)
    (folder / COUNTS_FILE).write_text(json.dumps(built.counts), encoding="utf-8")
    return folder


@dataclass
class LoadedTokenizer:
    """A tokenizer read back from a folder, with its metadata and token counts (if any)."""

    name: str | None
    tokenizer: Tokenizer
    meta: dict[str, Any]
    counts: list[int] | None
    folder: Path

    @property
    def kind(self) -> str:
        """ "bpe", "char" or the model type for tokenizers made elsewhere."""
        kind = self.meta.get("kind")
        if kind:
            return kind
        model = json.loads(self.tokenizer.to_str()).get("model", {}).get("type", "?")
        return "bpe" if model == "BPE" else model.lower()


def read_folder(folder: Path, name: str | None = None) -> LoadedTokenizer:
    """Read a tokenizer folder (tokenizer.json required; meta and counts optional)."""
    folder = Path(folder)
    path = folder / "tokenizer.json"
    if not path.is_file():
        raise NotFoundError(f"No tokenizer.json in {name or folder.name!r}.")
    tokenizer = Tokenizer.from_file(str(path))
    meta = _read_json(folder / "meta.json") or {}
    counts = _read_json(folder / COUNTS_FILE)
    if not (isinstance(counts, list) and len(counts) == tokenizer.get_vocab_size()):
        counts = None
    return LoadedTokenizer(name or meta.get("name"), tokenizer, meta if isinstance(meta, dict) else {}, counts, folder)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


# -- workspace -----------------------------------------------------------------------------------

def save(workspace: Workspace, name: str, built: BuiltTokenizer, overwrite: bool = False) -> Path:
    """Save a built tokenizer under `name` (validated; atomic; an existing name needs overwrite)."""
    name = validate_name(name)
    with workspace.writing("tokenizers", name, overwrite=overwrite) as tmp:
        write_folder(tmp, built, name)
    return workspace.path("tokenizers", name)


def save_folder(workspace: Workspace, name: str, folder: Path, overwrite: bool = False) -> Path:
    """Save a tokenizer folder (e.g. an unsaved draft) under `name`, with `name` written into its meta."""
    name = validate_name(name)
    folder = Path(folder)
    if not (folder / "tokenizer.json").is_file():
        raise DataError("There is no tokenizer to save yet: build one first.")
    meta = _read_json(folder / "meta.json") or {}
    with workspace.writing("tokenizers", name, overwrite=overwrite) as tmp:
        shutil.copyfile(folder / "tokenizer.json", tmp / "tokenizer.json")
        if (folder / COUNTS_FILE).is_file():
            shutil.copyfile(folder / COUNTS_FILE, tmp / COUNTS_FILE)
        write_json(tmp / "meta.json", {**meta, "name": name})
    return workspace.path("tokenizers", name)


def load(workspace: Workspace, name: str) -> LoadedTokenizer:
    """A saved tokenizer by name (NotFoundError listing what there is)."""
    entry = workspace.get("tokenizers", name)
    return read_folder(entry.path, entry.name)


def summary_markdown(loaded: LoadedTokenizer) -> str:
    """A few lines describing a tokenizer, for the tab and the CLI."""
    meta = loaded.meta
    comp = meta.get("compression") or {}
    corpus = meta.get("corpus") or {}
    title = f"**{loaded.name}**" if loaded.name else "**unsaved tokenizer**"
    size = loaded.tokenizer.get_vocab_size()
    lines = [f"{title} · {meta.get('description') or loaded.kind} · vocabulary **{size:,}**"]
    asked = (meta.get("options") or {}).get("vocab_size")
    if meta.get("kind") == "bpe" and isinstance(asked, int) and size < asked:
        lines.append(f"Stopped at {size:,} of {asked:,}: no pair left that occurs at least "
                     f"{(meta.get('options') or {}).get('min_frequency', 2)} times in this corpus.")
    if corpus:
        lines.append(f"Corpus: {corpus.get('description') or corpus.get('name')}")
    if comp.get("tokens"):
        lines.append(f"Compression ({comp.get('measured_on', 'held-out text')}, {comp.get('chars', 0):,} characters): "
                     f"**{comp.get('chars_per_token', float('nan')):.2f}** characters/token, "
                     f"{comp.get('bytes_per_token', float('nan')):.2f} bytes/token, "
                     f"{comp.get('tokens_per_word', float('nan')):.2f} tokens/word")
    if meta.get("special_tokens"):
        lines.append("Special tokens: " + ", ".join(f"`{s}`" for s in meta["special_tokens"]))
    if meta.get("build_seconds") is not None:
        lines.append(f"Built in {meta['build_seconds']:.1f} s")
    return "  \n".join(lines)
