"""Training a text classifier: labelled texts -> class (the trainer's adapter for this family).

Data (``[data]`` = :class:`LabelledTextConfig`): the generated review corpus with known
rationales (``texts = "reviews"``), an uploaded ``text,label`` CSV/TSV (``texts = "csv"``), or
SST-2 downloaded on demand (``texts = "sst2"``, online only). The word tokenizer is built from
the training split (<pad> = 0, <unk> = 1); every text is cut to ``model.max_len`` tokens.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import torch
import torch.nn.functional as F
from tokenizers import Tokenizer
from torch import Tensor, nn

from playground.data.label_shuffle import shuffled_labels
from playground.data.policy import DataPolicy, check_upload, default_policy
from playground.data.reviews import (
    PAD,
    REVIEW_CLASSES,
    UNK,
    Review,
    download_sst2,
    make_reviews,
    parse_labelled,
    sst2_reviews,
    subsample,
    text_tokenizer,
)
from playground.data.splits import split_indices
from playground.errors import ConfigError, DataError
from playground.training.adapters import FamilyAdapter, Prepared, Preview, to_device
from playground.training.config import TrainConfig, build_model_config
from playground.training.data import EpochSampler
from playground.training.device import DeviceCaps
from playground.workspace import Workspace

TEXT_SETS = ("reviews", "csv", "sst2")


@dataclass
class LabelledTextConfig:
    """`[data]` for a text classifier: a labelled text set and a seeded train/val split."""

    texts: Literal["reviews", "csv", "sst2"] = "reviews"
    n: int = 4000  # reviews: how many to generate; csv / sst2: keep this many rows (0 = all)
    val_fraction: float = 0.2
    seed: int = 0  # generation, subsampling and split (kept apart from train.seed)
    negation: float = 0.25  # reviews: share of cues written as a negated opposite ("not bad")
    intensify: float = 0.25  # reviews: share of single-word cues with an intensifier ("really good")
    path: str = ""  # csv: an uploaded file of text,label rows (upload:<name>; a path on the CLI)
    max_vocab: int = 20000  # the most frequent training words kept; the rest read as <unk>
    min_count: int = 1  # words seen fewer times in training read as <unk>
    shuffle_labels: bool = False  # permute the training labels (Adebayo's data test); validation labels stay true

    def __post_init__(self) -> None:
        if self.texts not in TEXT_SETS:
            raise ConfigError(f"data.texts = {self.texts!r} is not valid; choose one of: {', '.join(TEXT_SETS)}.")
        if not 0.0 < self.val_fraction < 1.0:
            raise ConfigError(f"data.val_fraction must be in (0, 1), got {self.val_fraction}.")
        if self.n < 0 or self.max_vocab < 1 or self.min_count < 1:
            raise ConfigError("data.n must be >= 0, data.max_vocab and data.min_count >= 1.")
        if self.texts == "reviews" and self.n < 1:
            raise ConfigError("data.texts = reviews generates its texts: give data.n >= 1.")


def load_labelled(data: LabelledTextConfig, policy: DataPolicy | None = None,
                  workspace: Workspace | None = None, max_bytes: int | None = None) -> tuple[list[Review], list[str]]:
    """The configured texts and their class names (an upload goes through ``policy``: only the
    user's own uploads in the app; its bytes are parsed, the path never leaves this function)."""
    if data.texts == "reviews":
        return make_reviews(data.n, data.seed, data.negation, data.intensify), list(REVIEW_CLASSES)
    if data.texts == "sst2":
        reviews, names = sst2_reviews(download_sst2())
    else:
        if not data.path:
            raise ConfigError("data.texts = csv needs data.path = an uploaded file of text,label rows.")
        built_in = ("data.texts = reviews", "data.texts = sst2")
        path = default_policy(policy, workspace).resolve(data.path, "data.path", built_in)
        reviews, names = parse_labelled(check_upload(path, max_bytes).read_bytes())
    return subsample(reviews, data.n or None, data.seed), names


@dataclass
class TextSplit:
    """Token ids and labels of the train and validation texts (ids without padding)."""

    train_ids: list[list[int]]
    train_labels: Tensor  # [N_train] int64
    val_ids: list[list[int]]
    val_labels: Tensor  # [N_val]
    val_reviews: list[Review]  # the validation texts (with rationales for generated reviews)
    pad_id: int
    sampler: EpochSampler | None = None

    def collate(self, ids: list[list[int]]) -> Tensor:
        """Right-padded [B,T] ids (T = the longest, at least 1)."""
        return pad_batch(ids, self.pad_id)


def pad_batch(ids: list[list[int]], pad_id: int) -> Tensor:
    """Token id lists -> [B,T] right-padded with ``pad_id``."""
    T = max(1, max((len(x) for x in ids), default=1))
    out = torch.full((len(ids), T), pad_id, dtype=torch.long)
    for i, x in enumerate(ids):
        out[i, :len(x)] = torch.tensor(x, dtype=torch.long)
    return out


def encode_texts(tokenizer: Tokenizer, texts: list[str], max_len: int) -> list[list[int]]:
    """Token ids of each text, cut to ``max_len`` (an empty text keeps one <unk>)."""
    out = []
    for enc in tokenizer.encode_batch(texts, add_special_tokens=False):
        ids = enc.ids[:max_len]
        out.append(ids or [tokenizer.token_to_id(UNK) or 1])
    return out


class TextClassifierAdapter(FamilyAdapter):
    """Cross-entropy over labelled texts; accuracy and a confusion matrix at evaluation."""

    data_config_cls = LabelledTextConfig
    unit = "samples"

    def prepare(self, data: LabelledTextConfig, model_values: dict[str, Any], workspace: Workspace | None,
                tokenizer: Tokenizer | None = None, limits: Any | None = None,
                policy: DataPolicy | None = None) -> Prepared:
        mb = getattr(limits, "max_upload_mb", None)
        reviews, names = load_labelled(data, policy, workspace, int(mb * 1_000_000) if mb else None)
        train_idx, val_idx = split_indices(len(reviews), data.val_fraction, data.seed)
        if tokenizer is None:
            tokenizer = text_tokenizer([reviews[i].text for i in train_idx], data.max_vocab, data.min_count)
        pad_id, unk_id = tokenizer.token_to_id(PAD), tokenizer.token_to_id(UNK)
        if pad_id is None or unk_id is None:
            raise DataError("The tokenizer lacks <pad> or <unk>; a text classifier needs both (use the built-in one).")
        derived = {"vocab_size": tokenizer.get_vocab_size(), "pad_id": pad_id, "unk_id": unk_id, "n_classes": len(names)}
        config = build_model_config(self.config_cls, model_values, derived)
        ids = encode_texts(tokenizer, [r.text for r in reviews], config.max_len)
        labels = torch.tensor([r.label for r in reviews], dtype=torch.long)
        train_labels = labels[train_idx]  # [N_train]
        if data.shuffle_labels:
            train_labels = shuffled_labels(train_labels, data.seed)
        payload = TextSplit([ids[i] for i in train_idx], train_labels, [ids[i] for i in val_idx],
                            labels[val_idx], [reviews[i] for i in val_idx], pad_id)
        info = {"texts": data.texts, "n": len(reviews), "n_train": len(train_idx), "n_val": len(val_idx),
                "seed": data.seed, "val_fraction": data.val_fraction, "vocab": tokenizer.get_vocab_size(),
                "longest": max(map(len, ids)), "rationales": data.texts == "reviews",
                "shuffled_labels": data.shuffle_labels}
        return Prepared(config, payload, tokenizer, list(names), info)

    def batch(self, prep: Prepared, seed: int, step: int, start: int, count: int, global_size: int) -> dict[str, Tensor]:
        split: TextSplit = prep.payload
        if split.sampler is None or split.sampler.seed != seed:
            split.sampler = EpochSampler(len(split.train_ids), seed)
        idx = split.sampler.indices(step * global_size + start, count).tolist()
        return {"ids": split.collate([split.train_ids[i] for i in idx]), "labels": split.train_labels[idx]}

    def count(self, prep: Prepared, batch: dict[str, Tensor]) -> int:
        return batch["labels"].shape[0]

    def loss(self, model: nn.Module, batch: dict[str, Tensor], label_smoothing: float = 0.0) -> Tensor:
        logits = model(batch["ids"])  # [B,C]
        return F.cross_entropy(logits, batch["labels"], label_smoothing=label_smoothing)

    def _predict(self, model: nn.Module, prep: Prepared, cfg: TrainConfig, caps: DeviceCaps) -> tuple[Tensor, Tensor, float]:
        split: TextSplit = prep.payload
        n = len(split.val_ids) if not cfg.eval_examples else min(len(split.val_ids), cfg.eval_examples)
        if n == 0:
            raise DataError("The validation split is empty; raise data.val_fraction or data.n.")
        preds, total = [], 0.0
        for lo in range(0, n, 256):
            hi = min(n, lo + 256)
            batch = to_device(caps, {"ids": split.collate(split.val_ids[lo:hi]), "labels": split.val_labels[lo:hi]})
            with caps.autocast():
                logits = model(batch["ids"]).float()  # [b,C]
            total += F.cross_entropy(logits, batch["labels"], reduction="sum").item()
            preds.append(logits.argmax(-1).cpu())
        return torch.cat(preds), split.val_labels[:n], total / n

    def evaluate(self, model: nn.Module, prep: Prepared, cfg: TrainConfig, caps: DeviceCaps) -> dict[str, float]:
        pred, labels, loss = self._predict(model, prep, cfg, caps)
        return {"val_loss": loss, "accuracy": (pred == labels).float().mean().item()}

    def preview(self, model: nn.Module, prep: Prepared, cfg: TrainConfig, caps: DeviceCaps) -> Preview:
        from sklearn.metrics import confusion_matrix  # function-level: scikit-learn adds ~1 s to the app's start

        pred, labels, _ = self._predict(model, prep, cfg, caps)
        k = len(prep.class_names or [])
        matrix = confusion_matrix(labels.numpy(), pred.numpy(), labels=list(range(k)))
        return Preview("confusion", matrix=matrix.tolist(), labels=list(prep.class_names or []))

    def d_model(self, model_config: Any) -> int | None:
        return getattr(model_config, "hidden", None)
