"""Pre-training a BERT encoder: the masked-language model on any text corpus (the trainer's adapter).

Data (``[data]`` = :class:`MLMDataConfig`): a corpus GPT can read (the embedded ones, an upload)
or ``reviews`` (generated review texts, labels thrown away), cut head/tail into train and val.
Each example is a window of the token stream (or, with ``per_line``, one line of the corpus, padded)
framed as [CLS] tokens [SEP] (with ``segments``: [CLS] A [SEP] B [SEP], segment 0 up to the first
[SEP], 1 after), corrupted by the 80/10/10 rule
(:mod:`playground.families.bert.masking`) from a generator seeded by (train.seed, step), so a
resumed run sees the same masks. The loss is cross-entropy at the selected positions only.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from tokenizers import Tokenizer
from torch import Tensor, nn

from playground.data.policy import DataPolicy
from playground.data.reviews import check_cue_range, make_reviews
from playground.data.splits import split_text
from playground.errors import ConfigError, DataError, TooBigError
from playground.families.bert.masking import IGNORE, MaskRule, mask_tokens
from playground.families.bert.tokens import (
    BUILT_IN,
    SEP,
    build_tokenizer,
    non_special_ids,
    special_ids,
)
from playground.training.adapters import (
    FamilyAdapter,
    Prepared,
    Preview,
    resolve_tokenizer,
    to_device,
)
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
    negation: float = 0.25  # corpus = reviews: share of cues written as a negated opposite ("not bad")
    intensify: float = 0.25  # corpus = reviews: share of single-word cues with an intensifier
    # corpus = reviews: [lo, hi] = one-sided reviews with lo..hi cues ([] = the labelled sets' mix)
    cues: list[int] = field(default_factory=list)
    max_vocab: int = 20000  # tokenizer = words: the most frequent words kept
    per_line: bool = False  # one example per line (padded) instead of windows of the token stream
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
        check_cue_range(self.cues)
        MaskRule(self.mask_prob, self.mask_token_share, self.random_token_share)  # raises on shares that do not add up

    @property
    def rule(self) -> MaskRule:
        return MaskRule(self.mask_prob, self.mask_token_share, self.random_token_share)


@dataclass
class MLMData:
    """The corpus as a token stream cut into windows, or (``per_line``) one example per line, and
    what framing and masking need. Rows are content ids [L] without specials."""

    text: TextData  # the stream, head/tail split; windows of the content length
    lines: tuple[list[Tensor], list[Tensor]] | None  # per_line: (train, val) lines, each cut to the content length
    pad_id: int
    cls_id: int
    sep_id: int
    mask_id: int
    candidates: Tensor  # [K] non-special ids (random replacements)
    rule: MaskRule
    segments: bool

    def train_rows(self, seed: int, step: int, global_size: int, start: int, count: int) -> list[Tensor]:
        """Rows start .. start+count-1 of update ``step``'s global batch (a pure function of seed and step)."""
        if self.lines is None:
            starts = self.text.train_starts(seed, step, global_size)[start:start + count]
            return list(self.text.windows("train", starts)[0])
        train = self.lines[0]
        idx = torch.randint(len(train), (global_size,), generator=step_generator(seed, step))[start:start + count]
        return [train[i] for i in idx.tolist()]

    def val_rows(self, n_batches: int, batch_size: int) -> list[list[Tensor]]:
        """Fixed validation rows (the same at every evaluation, so curves compare)."""
        if self.lines is None:
            return [list(self.text.windows("val", starts)[0]) for starts in self.text.val_starts(n_batches, batch_size)]
        val = self.lines[1]
        g = torch.Generator().manual_seed(12345)
        return [[val[i] for i in torch.randint(len(val), (batch_size,), generator=g).tolist()] for _ in range(n_batches)]

    def frame(self, rows: list[Tensor]) -> tuple[Tensor, Tensor]:
        """Rows -> ids [B,T]: [CLS] x [SEP] or, with segments, [CLS] A [SEP] B [SEP] (A the first
        half), right-padded with [PAD]; and segment ids [B,T] (0 up to the first [SEP], then 1)."""
        extra = framing(self.segments)
        T = max(len(r) for r in rows) + extra
        ids = torch.full((len(rows), T), self.pad_id, dtype=torch.long)
        seg = torch.zeros(len(rows), T, dtype=torch.long)
        for b, row in enumerate(rows):
            row = row.long()
            if self.segments:
                half = len(row) // 2
                parts = [row.new_tensor([self.cls_id]), row[:half], row.new_tensor([self.sep_id]), row[half:],
                         row.new_tensor([self.sep_id])]
                seg[b, half + 2:len(row) + extra] = 1
            else:
                parts = [row.new_tensor([self.cls_id]), row, row.new_tensor([self.sep_id])]
            framed = torch.cat(parts)
            ids[b, :len(framed)] = framed
        return ids, seg

    def masked(self, rows: list[Tensor], generator: torch.Generator) -> dict[str, Tensor]:
        """A framed, corrupted batch: ids, segments, labels (IGNORE where not selected)."""
        ids, seg = self.frame(rows)
        special = (ids == self.cls_id) | (ids == self.sep_id) | (ids == self.pad_id)
        inputs, labels = mask_tokens(ids, special, self.mask_id, self.candidates, generator, self.rule)
        return {"ids": inputs, "segments": seg, "labels": labels}


def split_lines(tokenizer: Tokenizer, text: str, val_fraction: float, content: int) -> tuple[list[Tensor], list[Tensor]]:
    """Each non-empty line's ids (cut to ``content``), head/tail split like the stream."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    ids = [torch.tensor(e.ids[:content], dtype=torch.long)
           for e in tokenizer.encode_batch(lines, add_special_tokens=False)]
    ids = [x for x in ids if len(x)]
    n_val = max(1, int(len(ids) * val_fraction))
    if len(ids) - n_val < 1:
        raise DataError(f"The corpus has {len(ids)} non-empty lines; data.per_line needs a few for training and "
                        "validation: give a longer text or set data.per_line = false.")
    return ids[:-n_val], ids[-n_val:]


def framing(segments: bool) -> int:
    """Special tokens around each window: [CLS] [SEP] (and a second [SEP] between segments)."""
    return 3 if segments else 2


def corpus_text(data: MLMDataConfig, workspace: Workspace | None, limits: Any | None,
                policy: DataPolicy | None) -> tuple[str, str]:
    """The configured corpus' text and a one-line description."""
    if data.corpus == REVIEWS:
        join = "\n" if data.per_line else f" {SEP}\n"  # a stream marks where one review ends
        reviews = make_reviews(data.n_reviews, data.reviews_seed, data.negation, data.intensify, cues=data.cues)
        text = join.join(r.text for r in reviews)
        text = text[:data.max_chars] if data.max_chars else text
        sided = f", one-sided with {data.cues[0]} to {data.cues[1]} cues" if data.cues else ""
        return text, (f"{data.n_reviews:,} generated review texts (seed {data.reviews_seed}, negation {data.negation}"
                      f"{sided}), labels unused")
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
        lines = split_lines(tokenizer, text, data.val_fraction, content) if data.per_line else None
        payload = MLMData(TextData(train, val, content), lines, config.pad_id, config.cls_id, config.sep_id,
                          config.mask_id, candidates, data.rule, config.segments)
        info = {"corpus": data.corpus, "description": description, "tokenizer": data.tokenizer, "chars": len(text),
                "tokens": len(ids), "train_tokens": len(train), "val_tokens": len(val),
                "val_fraction": data.val_fraction, "per_line": data.per_line,
                "lines": None if lines is None else [len(lines[0]), len(lines[1])], "mask_prob": data.mask_prob,
                "mask_token_share": data.mask_token_share, "random_token_share": data.random_token_share}
        return Prepared(config, payload, tokenizer, None, info)

    def batch(self, prep: Prepared, seed: int, step: int, start: int, count: int, global_size: int) -> dict[str, Tensor]:
        data: MLMData = prep.payload
        rows = data.train_rows(seed, step, global_size, start, count)
        return data.masked(rows, step_generator(seed, step, salt=11 + start))

    def count(self, prep: Prepared, batch: dict[str, Tensor]) -> int:
        return int((batch["ids"] != prep.payload.pad_id).sum())

    def loss(self, model: nn.Module, batch: dict[str, Tensor], label_smoothing: float = 0.0) -> Tensor:
        logits = model(batch["ids"], batch["segments"])  # [B,T,V]
        return F.cross_entropy(logits.flatten(0, 1), batch["labels"].flatten(), ignore_index=IGNORE,
                               label_smoothing=label_smoothing)

    def val_batches(self, prep: Prepared, cfg: TrainConfig) -> list[dict[str, Tensor]]:
        """The fixed validation batches (same windows and masks at every evaluation)."""
        data: MLMData = prep.payload
        g = torch.Generator().manual_seed(VAL_MASK_SEED)
        return [data.masked(rows, g) for rows in data.val_rows(cfg.eval_iters, cfg.batch_size)]

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
