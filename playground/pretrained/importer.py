"""Import a pretrained checkpoint: plan (sizes, before any weights are read), then convert and save.

``plan_import`` reads config.json and the tokenizer only, maps the config into the family's own
config (refusing what does not map), counts the parameters from that config and checks the cap;
``run_import`` then fetches and converts the weights and writes a read-only bundle atomically
(``Workspace.writing``: a failure or a cut-off download leaves no model behind).
"""
from __future__ import annotations

import dataclasses
import json
import queue
import threading
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file
from tokenizers import Tokenizer
from torch import Tensor

from playground.bundle import save_bundle
from playground.errors import ConfigError, PlaygroundError, TooBigError
from playground.families import get_family
from playground.families.hf_weights import HFConverter
from playground.models.base import ModelConfig
from playground.pretrained.architectures import converter_for
from playground.pretrained.progress import DownloadProgress, human_bytes
from playground.pretrained.sources import SHARD_INDEX, WEIGHTS, Source, open_source
from playground.pretrained.tokenizer import check_vocabulary, load_tokenizer
from playground.stopping import StopFlag, is_stopped
from playground.workspace import Workspace, validate_name

FLOAT_BYTES = 4  # weights are held as float32


@dataclass
class ImportPlan:
    """What an import will bring, known before its weights are read or downloaded."""

    source: Source
    hf_config: dict[str, Any]
    converter: HFConverter
    model_config: ModelConfig
    tokenizer: Tokenizer | None
    params: int
    download_bytes: int | None  # the weights' size on disk / to download (None: unknown)
    cached: bool  # whether the weights are on this machine already

    @property
    def memory_bytes(self) -> int:
        """Memory the converted model takes (float32 weights)."""
        return self.params * FLOAT_BYTES

    def summary(self) -> str:
        """One line: what it is, what it becomes, how big."""
        size = "" if self.download_bytes is None else (
            f", {human_bytes(self.download_bytes)} of weights" + (" (on this machine)" if self.cached else " to download"))
        params = f"{self.params / 1e6:,.1f} M" if self.params >= 1e6 else f"{self.params:,}"
        return (f"{self.source.label}: {self.converter.architecture} -> the playground's {self.converter.family} model, "
                f"{params} parameters, {human_bytes(self.memory_bytes)} in memory{size}")


def import_cap(caps: Any) -> int | None:
    """The largest import (parameters) under ``caps``: max_import_params, else max_params."""
    cap = getattr(caps, "max_import_params", None)
    return cap if cap is not None else getattr(caps, "max_params", None)


def plan_import(source: str, *, caps: Any = None, allow_paths: bool = True, cache_dir: str | Path | None = None,
                offline: bool | None = None, revision: str | None = None) -> ImportPlan:
    """Read config.json (+ tokenizer) of ``source`` and check what it would become; no weights are read."""
    src = open_source(source, allow_paths=allow_paths, cache_dir=cache_dir, offline=offline, revision=revision)
    hf = src.read_json("config.json")
    converter = converter_for(hf, src.label)
    tokenizer = load_tokenizer(src) if converter.needs_tokenizer else None
    if not converter.needs_tokenizer and src.has("preprocessor_config.json"):
        hf = {**hf, "_preprocessor": src.read_json("preprocessor_config.json")}
    config = converter.config(hf, converter.specials(tokenizer) if tokenizer is not None else {})
    if tokenizer is not None:
        check_vocabulary(tokenizer, config.vocab_size, src.label)  # type: ignore[attr-defined]
    params = get_family(converter.family).sizes.count_parameters(config)
    cap = import_cap(caps)
    if cap is not None and params > cap:
        raise TooBigError(f"{src.label} has {params / 1e6:,.1f} M parameters; this server imports models of at most "
                          f"{cap / 1e6:,.1f} M (a setting: max_import_params). Pick a smaller model, e.g. distilgpt2.")
    download, cached = _weights_size(src)
    return ImportPlan(src, {k: v for k, v in hf.items() if k != "_preprocessor"}, converter, config, tokenizer, params,
                      download, cached)


def _weights_size(src: Source) -> tuple[int | None, bool]:
    """(bytes of the weights, whether they are local already), before fetching them."""
    if src.folder is not None:
        return src.size(WEIGHTS) if (src.folder / WEIGHTS).is_file() else None, True
    if not src.has(WEIGHTS):
        return None, False
    info = src.fetch(WEIGHTS, dry_run=True)
    return getattr(info, "file_size", None), bool(getattr(info, "is_cached", False))


def read_weights(src: Source) -> dict[str, Tensor]:
    """The checkpoint's tensors (one file or safetensors shards); PlaygroundError when damaged."""
    try:
        if src.has(WEIGHTS):
            return load_file(str(src.fetch(WEIGHTS)))
        if not src.has(SHARD_INDEX):
            raise ConfigError(f"{src.label} has no model.safetensors (a pytorch_model.bin pickle is never loaded: "
                              "ask for the model's safetensors weights).")
        index = json.loads(Path(src.fetch(SHARD_INDEX)).read_text(encoding="utf-8"))
        tensors: dict[str, Tensor] = {}
        for shard in sorted(set(index.get("weight_map", {}).values())):
            tensors |= load_file(str(src.fetch(shard)))
        return tensors
    except (SafetensorError, OSError, ValueError) as exc:
        if isinstance(exc, PlaygroundError):
            raise
        raise PlaygroundError(f"The weights of {src.label} are incomplete or damaged ({str(exc)[:120]}); "
                              "nothing was imported. Download them again.") from exc


_DONE = object()
HEARTBEAT_S = 0.5  # a stalled download still yields this often, so a Stop is taken at once


def iter_weights(src: Source, stop: StopFlag = None,
                 heartbeat_s: float | None = HEARTBEAT_S) -> Generator[DownloadProgress | None, None, dict[str, Tensor]]:
    """:func:`read_weights` with byte progress: yields a DownloadProgress as huggingface_hub writes
    each chunk of a Hub file (nothing for a local folder or a cached file) and returns the tensors.

    The download runs in a worker thread. Closing this generator (a Stop in the app, Ctrl-C in
    the CLI) or ``stop`` cuts it off at its next chunk (DownloadStopped in the worker): nothing is
    returned, so nothing is imported. While no chunk arrives it yields the last progress again
    (None before the first) every ``heartbeat_s`` seconds, so the app can close it even when the
    network stalls (None: wait for the next chunk).
    """
    events: queue.Queue[Any] = queue.Queue()
    closed = threading.Event()
    box: dict[str, Any] = {}
    watched = dataclasses.replace(src, report=events.put, stop=lambda: closed.is_set() or is_stopped(stop))

    def work() -> None:
        try:
            box["tensors"] = read_weights(watched)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread below
            box["error"] = exc
        finally:
            events.put(_DONE)

    worker = threading.Thread(target=work, name=f"download {src.label}", daemon=True)
    worker.start()
    last: DownloadProgress | None = None
    try:
        while True:
            try:
                item = events.get(timeout=heartbeat_s)
            except queue.Empty:
                yield last  # no new bytes: the same progress, a chance to stop
                continue
            if item is _DONE:
                break
            last = item
            yield item
    finally:
        closed.set()  # a closed generator: the worker stops at the next chunk
    worker.join()
    if "error" in box:
        raise box["error"]
    return box["tensors"]


def convert(plan: ImportPlan, tensors: dict[str, Tensor]) -> torch.nn.Module:
    """The family's own model holding the checkpoint's weights (eval mode)."""
    family = get_family(plan.converter.family)
    state = plan.converter.to_ours(tensors, plan.model_config)
    with torch.device("meta"):
        model = family.build(plan.model_config)  # shapes only; load_state_dict(assign=True) gives the tensors
    own = model.state_dict()
    wrong = [f"{k} {tuple(v.shape)} vs {tuple(own[k].shape)}" for k, v in state.items() if k in own and v.shape != own[k].shape]
    missing = sorted(set(own) - set(state))
    if wrong or missing:
        raise ConfigError(f"The weights of {plan.source.label} do not fit the shapes its config.json gives "
                          f"({'; '.join(wrong[:3] + missing[:3])}).")
    model.load_state_dict(state, strict=True, assign=True)
    _retie(model, plan.converter)
    _materialise_buffers(model, family, plan.model_config)
    return model.eval()


def _retie(model: torch.nn.Module, converter: HFConverter) -> None:
    """assign=True replaced tied parameters one by one: point the tied ones at one tensor again."""
    for ours, source in converter.tied.items():
        owner, _, attr = ours.rpartition(".")
        src_owner, _, src_attr = source.rpartition(".")
        setattr(model.get_submodule(owner), attr, getattr(model.get_submodule(src_owner), src_attr))


def _materialise_buffers(model: torch.nn.Module, family: Any, config: ModelConfig) -> None:
    """Non-persistent buffers (ALiBi slopes, sinusoidal tables) built on meta: take them from a real build."""
    metas = [name for name, b in model.named_buffers() if b.is_meta]
    if metas:
        real = dict(family.build(config).named_buffers())
        for name in metas:
            owner, _, attr = name.rpartition(".")
            setattr(model.get_submodule(owner) if owner else model, attr, real[name])


def check_name(plan: ImportPlan, workspace: Workspace, name: str | None, overwrite: bool = False) -> str:
    """The bundle's name (default: the source's); refused when it is taken or read-only."""
    name = validate_name(name or plan.source.default_name)
    workspace.check_writable("models", name)
    if workspace.exists("models", name) and not overwrite:
        raise PlaygroundError(f"A model named {name!r} already exists; choose another name (--name).")
    return name


def run_import(plan: ImportPlan, workspace: Workspace, name: str | None = None, overwrite: bool = False,
               tensors: dict[str, Tensor] | None = None) -> Path:
    """Fetch (unless ``tensors`` were) and convert the weights, then write a read-only bundle ``name``."""
    name = check_name(plan, workspace, name, overwrite)
    model = convert(plan, tensors if tensors is not None else read_weights(plan.source))
    info = {"source": plan.source.repo_id or plan.source.label, "hub": plan.source.repo_id is not None,
            "revision": plan.source.revision, "architecture": plan.converter.architecture, "hf_config": plan.hf_config,
            "params": plan.params}
    path = save_bundle(workspace, name, model, plan.converter.family, plan.model_config, tokenizer=plan.tokenizer,
                       class_names=plan.converter.class_names(plan.hf_config),
                       data={"pretrained": info["source"]}, extra={"pretrained": info, "read_only": True},
                       overwrite=overwrite)
    _save_tokenizer_entry(workspace, name, plan)
    return path


def _save_tokenizer_entry(workspace: Workspace, name: str, plan: ImportPlan) -> None:
    """The tokenizer also as a tokenizer entry of the same name, for the Tokenizer tab's views
    (skipped when that name is taken or the space holds no more tokenizers: the bundle has its own copy)."""
    tok = plan.tokenizer
    if tok is None or workspace.exists("tokenizers", name):
        return
    specials = [t.content for t in tok.get_added_tokens_decoder().values() if t.special]
    meta = {"description": f"the tokenizer of {plan.source.label} ({plan.converter.architecture})",
            "vocab_size": tok.get_vocab_size(), "special_tokens": specials, "from_model": name}
    try:
        workspace.save_tokenizer(name, tok.to_str(), meta)
    except PlaygroundError:  # a full space: the model keeps its own tokenizer.json
        return


def import_pretrained(source: str, workspace: Workspace, name: str | None = None, **options: Any) -> Path:
    """Plan and run an import in one call (the CLI's and the tests' way)."""
    return run_import(plan_import(source, **options), workspace, name)
