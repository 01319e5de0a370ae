"""Fine-tuning a BERT encoder on labelled texts (the trainer's adapter for ``bert_classifier``).

Data (``[data]`` = :class:`BertLabelledConfig`): the text classifier's labelled sets (generated
reviews, an uploaded ``text,label`` CSV, SST-2), its seeded split, and ``n_train`` to keep only a
few labelled examples. With ``held_out_cues`` (generated reviews) the training examples are only
reviews whose cue words all come from one half of the cue list (:func:`held_out_cue_words` names the
other half), while validation keeps every review: ``unseen_cue_accuracy`` is measured on the validation
reviews whose cues are all held out, words a from-scratch model never saw labelled. Each text is
[CLS] tokens [SEP], right-padded with [PAD].

``init_from`` names a pre-trained BERT checkpoint in the workspace (never a path; usually an MLM): its tokenizer
is used, the encoder's shape comes from its config, and its ``encoder.*`` tensors replace the
fresh ones before the first step (:meth:`BertClassifierAdapter.init_model`). Without it the
model starts from scratch with a tokenizer built from the training texts.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import torch
from safetensors.torch import load_file
from tokenizers import Tokenizer
from torch import Tensor, nn

from playground.data.policy import DataPolicy
from playground.data.reviews import Review, cue_words, held_out_cue_words
from playground.data.splits import split_indices
from playground.errors import ConfigError, DataError, NotFoundError
from playground.families.bert.tokens import BUILT_IN, build_tokenizer, special_ids
from playground.families.text_classifier.training import (
    LabelledTextConfig,
    TextClassifierAdapter,
    TextSplit,
    load_labelled,
)
from playground.models.bert import BertClassifierConfig, BertConfig, copy_encoder
from playground.training.adapters import Prepared, resolve_tokenizer
from playground.training.config import (
    TrainConfig,
    build_model_config,
    check_model_values,
)
from playground.training.device import DeviceCaps
from playground.workspace import Workspace, validate_name

PRETRAIN_PRESET = "bert-mlm-reviews"


@dataclass
class BertLabelledConfig(LabelledTextConfig):
    """`[data]` for fine-tuning: a labelled set, a small-train option and the pre-trained encoder."""

    n_train: int = 0  # keep only this many training examples (0 = the whole training split)
    tokenizer: str = "words"  # from scratch: words | char | a workspace tokenizer with the BERT specials
    init_from: str = ""  # a pre-trained MLM checkpoint's name in the workspace ("" = from scratch)
    held_out_cues: bool = False  # reviews: train only on reviews without the held-out half of the cue words

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.n_train < 0:
            raise ConfigError(f"data.n_train must be >= 0 (0 = all), got {self.n_train}.")
        if self.held_out_cues and self.texts != "reviews":
            raise ConfigError("data.held_out_cues needs data.texts = reviews (only generated reviews know their cue "
                              "words); set it to false for other texts.")
        if self.init_from:
            validate_name(self.init_from)


@dataclass
class Pretrained:
    """What fine-tuning takes from a pre-trained checkpoint."""

    name: str
    config: dict[str, Any]  # its [model] section
    encoder: dict[str, Tensor]  # encoder.* tensors without the prefix
    tokenizer: Tokenizer


def load_pretrained(name: str, workspace: Workspace | None) -> Pretrained:
    """The encoder, config and tokenizer of the MLM checkpoint ``name`` in the workspace;
    NotFoundError saying which preset to train first when it is not there."""
    hint = (f"train it first (python -m playground train {PRETRAIN_PRESET} --name {name}, or the Train tab), "
            "or set data.init_from = \"\" to train from scratch")
    if workspace is None or not workspace.exists("models", name):
        raise NotFoundError(f"data.init_from = {name!r}: no such checkpoint in the workspace; {hint}.")
    path = workspace.get("models", name).path
    config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    tensors = load_file(path / "model.safetensors")
    if not (path / "tokenizer.json").is_file() or "encoder.tok_emb.weight" not in tensors:
        raise ConfigError(f"data.init_from = {name!r} is not a BERT pre-training checkpoint (no BERT encoder and "
                          f"tokenizer in it); {hint}.")
    encoder = {k[len("encoder."):]: v for k, v in tensors.items() if k.startswith("encoder.")}
    return Pretrained(name, dict(config.get("model") or {}), encoder, Tokenizer.from_file(str(path / "tokenizer.json")))


def encoder_fields(pretrained: Pretrained, model_values: dict[str, Any]) -> dict[str, Any]:
    """The encoder's shape from the pre-trained config; ConfigError when the preset sets it otherwise."""
    own = {k: v for k, v in pretrained.config.items() if k in BertConfig.__dataclass_fields__}
    shape = BertConfig.from_dict(own).encoder_shape()
    for key, value in check_model_values(BertClassifierConfig, model_values).items():
        if key in shape and shape[key] != value:
            raise ConfigError(f"model.{key} = {value!r} differs from the pre-trained checkpoint "
                              f"{pretrained.name!r} ({key} = {shape[key]!r}): fine-tuning keeps its encoder's shape; "
                              f"remove model.{key} or set it to {shape[key]!r}.")
    return shape


def framed(tokenizer: Tokenizer, texts: list[str], block_size: int, cls_id: int, sep_id: int) -> list[list[int]]:
    """[CLS] ids [SEP] of each text, its tokens cut to block_size - 2."""
    out = []
    for enc in tokenizer.encode_batch(texts, add_special_tokens=False):
        out.append([cls_id, *enc.ids[:block_size - 2], sep_id])
    return out


def cue_split(reviews: list[Review], train_idx: list[int], val_idx: list[int]) -> tuple[list[int], Tensor, Tensor]:
    """Held-out cues: the training indices whose reviews use no held-out cue word, and masks [N_val]
    of the validation reviews whose cue words are all held out / all seen."""
    held = held_out_cue_words()
    kept = [i for i in train_idx if not held.intersection(cue_words(reviews[i]))]
    unseen = torch.tensor([held.issuperset(cue_words(reviews[i])) for i in val_idx], dtype=torch.bool)
    seen = torch.tensor([not held.intersection(cue_words(reviews[i])) for i in val_idx], dtype=torch.bool)
    return kept, unseen, seen


@dataclass
class BertSplit(TextSplit):
    """The text classifier's split plus the pre-trained encoder to start from (None: from scratch)
    and, with held-out cues, which validation reviews use only held-out ([N_val] bool) or only seen cue words."""

    pretrained: Pretrained | None = None
    val_unseen: Tensor | None = None
    val_seen: Tensor | None = None


class BertClassifierAdapter(TextClassifierAdapter):
    """The text classifier's loss, accuracy and confusion matrix, on [CLS]-framed texts of a BERT."""

    data_config_cls = BertLabelledConfig

    def prepare(self, data: BertLabelledConfig, model_values: dict[str, Any], workspace: Workspace | None,
                tokenizer: Tokenizer | None = None, limits: Any | None = None,
                policy: DataPolicy | None = None) -> Prepared:
        mb = getattr(limits, "max_upload_mb", None)
        reviews, names = load_labelled(data, policy, workspace, int(mb * 1_000_000) if mb else None)
        train_idx, val_idx = split_indices(len(reviews), data.val_fraction, data.seed)
        unseen = seen = None
        if data.held_out_cues:
            train_idx, unseen, seen = cue_split(reviews, list(train_idx), list(val_idx))
            if not train_idx or not bool(unseen.any()):
                raise DataError("data.held_out_cues left no training review or no validation review with only "
                                "held-out cues; raise data.n.")
        if data.n_train:
            train_idx = train_idx[:data.n_train]
        pretrained = load_pretrained(data.init_from, workspace) if data.init_from else None
        shape: dict[str, Any] = {}
        if pretrained is not None:
            shape = encoder_fields(pretrained, model_values)
            tokenizer = tokenizer or pretrained.tokenizer
        elif tokenizer is None:
            texts = [reviews[i].text for i in train_idx]
            tokenizer = (build_tokenizer(data.tokenizer, texts, data.max_vocab) if data.tokenizer in BUILT_IN
                         else resolve_tokenizer(data.tokenizer, workspace))
        derived = {**shape, "vocab_size": tokenizer.get_vocab_size(), **special_ids(tokenizer), "n_classes": len(names)}
        config = build_model_config(self.config_cls, model_values, derived)
        ids = framed(tokenizer, [r.text for r in reviews], config.block_size, config.cls_id, config.sep_id)
        labels = torch.tensor([r.label for r in reviews], dtype=torch.long)
        payload = BertSplit([ids[i] for i in train_idx], labels[train_idx], [ids[i] for i in val_idx],
                            labels[val_idx], [reviews[i] for i in val_idx], config.pad_id, pretrained=pretrained,
                            val_unseen=unseen, val_seen=seen)
        info = {"texts": data.texts, "n": len(reviews), "n_train": len(train_idx), "n_val": len(val_idx),
                "seed": data.seed, "val_fraction": data.val_fraction, "vocab": tokenizer.get_vocab_size(),
                "longest": max(map(len, ids)), "rationales": data.texts == "reviews",
                "init_from": data.init_from or None, "held_out_cues": data.held_out_cues,
                "n_val_unseen_cues": None if unseen is None else int(unseen.sum())}
        return Prepared(config, payload, tokenizer, list(names), info)

    def init_model(self, model: nn.Module, prep: Prepared) -> None:
        """Copy the pre-trained encoder (data.init_from) into a freshly initialised model."""
        pretrained = prep.payload.pretrained
        if pretrained is not None:
            copy_encoder(model, pretrained.encoder, f"the pre-trained checkpoint {pretrained.name!r}")

    def evaluate(self, model: nn.Module, prep: Prepared, cfg: TrainConfig, caps: DeviceCaps) -> dict[str, float]:
        """Validation loss and accuracy; with held-out cues also the accuracy on validation reviews whose
        cue words are all held out (unseen in training) and on those whose cue words were all seen."""
        pred, labels, loss = self._predict(model, prep, cfg, caps)
        right = pred == labels  # [n]
        out = {"val_loss": loss, "accuracy": right.float().mean().item()}
        split: BertSplit = prep.payload
        for key, mask in (("unseen_cue_accuracy", split.val_unseen), ("seen_cue_accuracy", split.val_seen)):
            if mask is not None and bool(mask[:len(right)].any()):
                out[key] = right[mask[:len(right)]].float().mean().item()
        return out

    def d_model(self, model_config: Any) -> int | None:
        return getattr(model_config, "d_model", None)
