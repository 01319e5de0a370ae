"""Renaming Hugging Face ``transformers`` weights into a family's own modules and back.

A family that imports pretrained checkpoints describes its conversion as a :class:`HFConverter`
(in ``families/<name>/hf_import.py``): the config mapping (refusing, by name, whatever its modules
cannot express) and a weight map, a list of :class:`Tensor map <Map>` entries. Both directions
(import and export) come from the one map, so a round trip gives the same tensors.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor

from playground.errors import ConfigError
from playground.models.base import ModelConfig


@dataclass(frozen=True)
class Map:
    """One of our tensors from one or more of theirs.

    ``how``: "same"; "T" (transposed: GPT-2's Conv1D keeps weights [in, out]); "unbatch" (theirs
    has a leading batch axis of 1: ViT's position table [1,N,D]); several ``theirs`` are
    concatenated along dim 0 (separate query / key / value into our fused ``qkv``).
    """

    ours: str
    theirs: tuple[str, ...]
    how: str = "same"

    def to_ours(self, tensors: Mapping[str, Tensor]) -> Tensor:
        parts = [tensors[t] for t in self.theirs]
        if len(parts) > 1:
            return torch.cat(parts, dim=0)  # [3D, ...]: q, k, v in that order, heads contiguous
        if self.how == "T":
            return parts[0].T.contiguous()
        if self.how == "unbatch":
            return parts[0][0]
        return parts[0]

    def to_theirs(self, tensor: Tensor) -> dict[str, Tensor]:
        if len(self.theirs) > 1:
            return dict(zip(self.theirs, tensor.chunk(len(self.theirs), dim=0)))
        if self.how == "T":
            return {self.theirs[0]: tensor.T}
        if self.how == "unbatch":
            return {self.theirs[0]: tensor[None]}
        return {self.theirs[0]: tensor}


def same(ours: str, theirs: str, params: Sequence[str] = ("weight", "bias"), how: str = "same") -> list[Map]:
    """Maps for a module's ``weight`` / ``bias`` (or ``params``) under both prefixes."""
    return [Map(f"{ours}.{p}", (f"{theirs}.{p}",), how) for p in params]


def fused(ours: str, q: str, k: str, v: str) -> list[Map]:
    """Our fused ``qkv`` Linear from separate query, key and value Linears."""
    return [Map(f"{ours}.{p}", (f"{q}.{p}", f"{k}.{p}", f"{v}.{p}")) for p in ("weight", "bias")]


def renamed_keys(tensors: Mapping[str, Tensor]) -> dict[str, Tensor]:
    """Old TensorFlow-era LayerNorm names (``gamma`` / ``beta``) as ``weight`` / ``bias``."""
    out = {}
    for key, value in tensors.items():
        if key.endswith(".gamma"):
            key = key[: -len("gamma")] + "weight"
        elif key.endswith(".beta"):
            key = key[: -len("beta")] + "bias"
        out[key] = value
    return out


@dataclass(frozen=True)
class HFConverter:
    """How one ``transformers`` architecture becomes one of our families.

    config: the HF config.json dict -> our model config (ConfigError naming what does not map);
        ``specials`` are the tokenizer's special ids (pad_id, ...) where the family needs them.
    weights: our config -> the tensor maps.
    tied: our names whose tensor is another of ours ({"lm_head.weight": "tok_emb.weight"}).
    ignored: substrings of their tensor names that carry nothing we need (buffers, unused heads).
    prefixes: the base-model prefix a checkpoint may lack (GPT-2's hub files have no "transformer.").
    class_names: the HF config -> class names (classifiers), or None.
    needs_tokenizer: whether a tokenizer must come along (text models); specials: its ids the config needs.
    """

    architecture: str
    family: str
    config: Callable[[dict[str, Any], dict[str, int]], ModelConfig]
    weights: Callable[[Any], list[Map]]
    tied: Mapping[str, str] = field(default_factory=dict)
    ignored: tuple[str, ...] = ()
    prefix: str = ""
    class_names: Callable[[dict[str, Any]], list[str] | None] = lambda hf: None
    needs_tokenizer: bool = True
    specials: Callable[[Any], dict[str, int]] = lambda tokenizer: {}  # the tokenizer's ids the config needs

    def normalized(self, tensors: Mapping[str, Tensor]) -> dict[str, Tensor]:
        """Their tensors with old names renamed and the base-model prefix added where missing."""
        tensors = renamed_keys(tensors)
        if self.prefix and not any(k.startswith(self.prefix) for k in tensors):
            tensors = {self.prefix + k: v for k, v in tensors.items()}
        return tensors

    def to_ours(self, tensors: Mapping[str, Tensor], config: ModelConfig) -> dict[str, Tensor]:
        """Our state dict from their tensors; ConfigError naming missing or unexpected tensors."""
        tensors = self.normalized(tensors)
        maps = self.weights(config)
        wanted = {t for m in maps for t in m.theirs}
        missing = sorted(wanted - set(tensors))
        unexpected = sorted(k for k in set(tensors) - wanted if not any(s in k for s in self.ignored))
        if missing or unexpected:
            parts = ([f"missing {', '.join(missing[:4])}"] if missing else []) + \
                    ([f"unexpected {', '.join(unexpected[:4])}"] if unexpected else [])
            raise ConfigError(f"The {self.architecture} weights do not match its config.json ({'; '.join(parts)}); "
                              "this checkpoint has parts the playground's model cannot hold.")
        state = {m.ours: m.to_ours(tensors).float() for m in maps}
        for ours, source in self.tied.items():
            state[ours] = state[source]
        return state

    def to_theirs(self, state: Mapping[str, Tensor], config: ModelConfig) -> dict[str, Tensor]:
        """Their tensors from our state dict (tied copies left out, as save_pretrained does)."""
        out: dict[str, Tensor] = {}
        for m in self.weights(config):
            out |= m.to_theirs(state[m.ours].detach())
        return {k: v.float().contiguous().clone() for k, v in out.items()}


def need(hf: Mapping[str, Any], problems: list[str], key: str, expected: Any, why: str) -> None:
    """Note a config value ``key`` that is not ``expected`` (the default when absent is expected)."""
    value = hf.get(key, expected)
    if value != expected:
        problems.append(f"{key}={value!r} ({why})")


def refuse(architecture: str, problems: list[str]) -> None:
    """ConfigError listing what of ``architecture``'s config the family cannot express."""
    if problems:
        raise ConfigError(f"This {architecture} cannot be converted into the playground's model: "
                          + "; ".join(problems) + ".")
