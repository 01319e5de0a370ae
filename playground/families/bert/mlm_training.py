"""Pre-training a BERT encoder: the masked-language model on any text corpus (the trainer's adapter).

Data (``[data]`` = :class:`MLMDataConfig`): a corpus GPT can read (the embedded ones, an upload)
or ``reviews`` (generated review texts, labels thrown away), cut head/tail into train and val.
Each example is a window of the token stream framed as [CLS] tokens [SEP] (with ``segments``:
[CLS] A [SEP] B [SEP], segment 0 up to the first [SEP], 1 after), corrupted by the 80/10/10 rule
(:mod:`playground.families.bert.masking`) from a generator seeded by (train.seed, step), so a
resumed run sees the same masks. The loss is cross-entropy at the selected positions only.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from tokenizers import Tokenizer
from torch import Tensor, nn

from playground.data.policy import DataPolicy
from playground.data.reviews import make_reviews
from playground.data.splits import split_text
from playground.errors import ConfigError, DataError, TooBigError
from playground.families.bert.masking import IGNORE, MaskRule, mask_tokens
from playground.families.bert.tokens import BUILT_IN, SEP, build_tokenizer, non_special_ids, special_ids
from playground.training.adapters import FamilyAdapter, Prepared, Preview, resolve_tokenizer, to_device
from playground.training.config import TrainConfig, build_model_config
from playground.training.data import TextData, encode_text, load_text, step_generator
from playground.training.device import DeviceCaps
from playground.workspace import Workspace

REVIEWS = "reviews"
MAX_REVIEWS = 200_000
VAL_MASK_SEED = 4321


@dataclass
class MLMDataConfig:
    """`[data]` for MLM pre-training: a corpus, its tokenizer and the masking rule."""

    corpus: str = "tinyshakespeare"  # python-docs | python-code | tinyshakespeare | reviews | upload:<name>
    tokenizer: str = "char"  # char | words | a workspace tokenizer holding [PAD] [UNK] [CLS] [SEP] [MASK]
    val_fraction: float = 0.1  # the tail of the corpus
    max_chars: int = 0  # keep only the first N characters (0 = all)
    n_reviews: int = 20000  # corpus = reviews: how many review texts to generate
    reviews_seed: int = 1  # corpus = reviews (the labelled sets use seed 0)
    max_vocab: int = 20000  # tokenizer = words: the most frequent words kept
    mask_prob: float = 0.15  # share of non-special positions selected for the loss
    mask_token_share: float = 0.8  # of the selected: replaced by [MASK]
    random_token_share: float = 0.1  # of the selected: replaced by a random token (the rest stays)

    def __post_init__(self) -> None:
        if not 0.0 < self.val_fraction < 1.0:
            raise ConfigError(f"data.val_fraction must be in (0, 1), got {self.val_fraction}.")
        if self.max_chars < 0 or self.max_vocab < 1:
            raise ConfigError("data.max_chars must be >= 0 (0 = all) and data.max_vocab >= 1.")
        if not 1 <= self.n_reviews <= MAX_REVIEWS:
            raise TooBigError(f"data.n_reviews must be between 1 and {MAX_REVIEWS:,}, got {self.n_reviews}.")
        self.rule  # validates the shares

    @property
    def rule(self) -> MaskRule:
        return MaskRule(self.mask_prob, self.mask_token_share, self.random_token_share)


@dataclass
class MLMData:
    """The corpus' token stream (train / val) and what framing and masking need."""

    text: TextData  # windows of the content length (block_size minus the specials)
    cls_id: int
    sep_id: int
    mask_id: int
    candidates: Tensor  # [K] non-special ids (random replacements)
    rule: MaskRule
    segments: bool

    def frame(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """Content windows x [B,L] -> ids [B,L+2] ([CLS] x [SEP]) or, with segments, [B,L+3]
        ([CLS] A [SEP] B [SEP]) and segment ids of the same shape."""
        B, L = x.shape
        cls = torch.full((B, 1), self.cls_id, dtype=x.dtype)
        sep = torch.full((B, 1), self.sep_id, dtype=x.dtype)
        if not self.segments:
            return torch.cat([cls, x, sep], 1), torch.zeros(B, L + 2, dtype=torch.long)
        half = L // 2
        ids = torch.cat([cls, x[:, :half], sep, x[:, half:], sep], 1)  # [B,L+3]
        seg = torch.cat([torch.zeros(B, half + 2, dtype=torch.long), torch.ones(B, L - half + 1, dtype=torch.long)], 1)
        return ids, seg

    def masked(self, x: Tensor, generator: torch.Generator) -> dict[str, Tensor]:
        """A framed, corrupted batch: ids, segments, labels (IGNORE where not selected)."""
        ids, seg = self.frame(x)
        special = (ids == self.cls_id) | (ids == self.sep_id)
        inputs, labels = mask_tokens(ids, special, self.mask_id, self.candidates, generator, self.rule)
        return {"ids": inputs, "segments": seg, "labels": labels}


def framing(segments: bool) -> int:
    """Special tokens around each window: [CLS] [SEP] (and a second [SEP] between segments)."""
    return 3 if segments else 2


def corpus_text(data: MLMDataConfig, workspace: Workspace | None, limits: Any | None,
                policy: DataPolicy | None) -> tuple[str, str]:
    """The configured corpus' text and a one-line description."""
    if data.corpus == REVIEWS:
        text = f" {SEP}\n".join(r.text for r in make_reviews(data.n_reviews, data.reviews_seed))  # [SEP] between reviews
        text = text[:data.max_chars] if data.max_chars else text
        return text, f"{data.n_reviews:,} generated review texts (seed {data.reviews_seed}), labels unused"
    return load_text(data.corpus, workspace, data.max_chars, limits, policy)


class MLMAdapter(FamilyAdapter):
    """Masked-token cross-entropy on a corpus; validation loss and masked-token accuracy."""

    data_config_cls = MLMDataConfig
    unit = "tokens"

    def prepare(self, data: MLMDataConfig, model_values: dict[str, Any], workspace: Workspace | None,
                tokenizer: Tokenizer | None = None, limits: Any | None = None,
                policy: DataPolicy | None = None) -> Prepared:
        text, description = corpus_text(data, workspace, limits, policy)
        if tokenizer is None:
            if data.tokenizer in BUILT_IN:
                tokenizer = build_tokenizer(data.tokenizer, [text.replace(SEP, " ")], data.max_vocab)
            else:
                tokenizer = resolve_tokenizer(data.tokenizer, workspace)
        derived = {"vocab_size": tokenizer.get_vocab_size(), **special_ids(tokenizer)}
        config = build_model_config(self.config_cls, model_values, derived)
        content = config.block_size - framing(config.segments)
        if content < 1:
            raise ConfigError(f"model.block_size = {config.block_size} leaves no room for text between the special tokens.")
        ids = encode_text(tokenizer, text)
        if len(ids) < 4 * (content + 1):
            raise DataError(f"The corpus has {len(ids)} tokens; MLM pre-training needs a few windows of "
                            f"{content + 1}: give a longer text or lower model.block_size.")
        train, val = split_text(ids, data.val_fraction, block_size=content)
        candidates = torch.tensor(non_special_ids(tokenizer), dtype=torch.long)
        payload = MLMData(TextData(train, val, content), config.cls_id, config.sep_id, config.mask_id, candidates,
                          data.rule, config.segments)
        info = {"corpus": data.corpus, "description": description, "tokenizer": data.tokenizer, "chars": len(text),
                "tokens": len(ids), "train_tokens": len(train), "val_tokens": len(val),
                "val_fraction": data.val_fraction, "mask_prob": data.mask_prob,
                "mask_token_share": data.mask_token_share, "random_token_share": data.random_token_share}
        return Prepared(config, payload, tokenizer, None, info)

    def batch(self, prep: Prepared, seed: int, step: int, start: int, count: int, global_size: int) -> dict[str, Tensor]:
        data: MLMData = prep.payload
        starts = data.text.train_starts(seed, step, global_size)[start:start + count]
        x, _ = data.text.windows("train", starts)  # [b,L]
        return data.masked(x, step_generator(seed, step, salt=11 + start))

    def count(self, prep: Prepared, batch: dict[str, Tensor]) -> int:
        return batch["ids"].numel()

    def loss(self, model: nn.Module, batch: dict[str, Tensor], label_smoothing: float = 0.0) -> Tensor:
        logits = model(batch["ids"], batch["segments"])  # [B,T,V]
        return F.cross_entropy(logits.flatten(0, 1), batch["labels"].flatten(), ignore_index=IGNORE,
                               label_smoothing=label_smoothing)

    def val_batches(self, prep: Prepared, cfg: TrainConfig) -> list[dict[str, Tensor]]:
        """The fixed validation batches (same windows and masks at every evaluation)."""
        data: MLMData = prep.payload
        g = torch.Generator().manual_seed(VAL_MASK_SEED)
        return [data.masked(data.text.windows("val", starts)[0], g)
                for starts in data.text.val_starts(cfg.eval_iters, cfg.batch_size)]

    def evaluate(self, model: nn.Module, prep: Prepared, cfg: TrainConfig, caps: DeviceCaps) -> dict[str, float]:
        total, right, n = 0.0, 0, 0
        for batch in self.val_batches(prep, cfg):
            batch = to_device(caps, batch)
            with caps.autocast():
                logits = model(batch["ids"], batch["segments"]).float()  # [B,T,V]
            picked = batch["labels"] != IGNORE  # [B,T]
            rows, labels = logits[picked], batch["labels"][picked]  # [N,V], [N]
            total += F.cross_entropy(rows, labels, reduction="sum").item()
            right += int((rows.argmax(-1) == labels).sum())
            n += int(labels.numel())
        return {"val_loss": total / max(n, 1), "masked_accuracy": right / max(n, 1)}

    def preview(self, model: nn.Module, prep: Prepared, cfg: TrainConfig, caps: DeviceCaps) -> Preview:
        """One validation window with its masks, and what the model puts at each selected position."""
        batch = self.val_batches(prep, cfg)[0]
        ids, labels = batch["ids"][:1], batch["labels"][:1]  # [1,T]
        with caps.autocast():
            pred = model(caps.to_device(ids), caps.to_device(batch["segments"][:1])).float().argmax(-1).cpu()
        tok = prep.tokenizer
        picked = labels[0] != IGNORE
        shown = tok.decode(ids[0].tolist(), skip_special_tokens=False)
        filled = torch.where(picked, pred[0], ids[0])
        right = int((pred[0][picked] == labels[0][picked]).sum())
        return Preview("text", text=f"input:  {shown}\nfilled: {tok.decode(filled.tolist(), skip_special_tokens=False)}\n"
                                    f"({right} of {int(picked.sum())} selected tokens right)")
