"""Training a seq2seq model, RNN or Transformer: teacher-forced source -> target, greedy decoding
for exact match (both share the model contract start/step/forward, so they share this adapter)."""
from __future__ import annotations

from collections import defaultdict
from typing import Any

import torch.nn.functional as F
from tokenizers import Tokenizer
from torch import Tensor, nn

from playground.data.pairs import pair_set_unit, pair_tokenizer
from playground.data.policy import DataPolicy
from playground.data.splits import split_indices
from playground.models.unwrap import unwrap_model
from playground.errors import DataError
from playground.generation.seq2seq import greedy_decode
from playground.tokenization.simple import special_ids
from playground.training.adapters import (
    FamilyAdapter,
    Prepared,
    Preview,
    resolve_tokenizer,
    to_device,
)
from playground.training.config import TrainConfig, build_model_config
from playground.training.data import (
    PairData,
    PairDataConfig,
    length_bucket,
    load_pairs,
)
from playground.training.device import DeviceCaps
from playground.workspace import Workspace


def masked_mean(values: Tensor, mask: Tensor) -> Tensor:
    """Mean of ``values`` [B,T] over the positions where ``mask`` [B,T] is True (0 when none)."""
    return (values * mask).sum() / mask.sum().clamp_min(1)


class Seq2SeqAdapter(FamilyAdapter):
    """Source -> target with teacher forcing; greedy decoding for exact match."""

    data_config_cls = PairDataConfig
    unit = "tokens"

    def prepare(self, data: PairDataConfig, model_values: dict[str, Any], workspace: Workspace | None,
                tokenizer: Tokenizer | None = None, limits: Any | None = None,
                policy: DataPolicy | None = None) -> Prepared:
        examples = load_pairs(data, policy, workspace)
        train_idx, val_idx = split_indices(len(examples), data.val_fraction, data.seed)
        unit = pair_set_unit(data.pairs)
        if tokenizer is None:
            if data.tokenizer == "auto":
                tokenizer = pair_tokenizer(examples, unit)
            else:
                tokenizer = resolve_tokenizer(data.tokenizer, workspace)
        ids = special_ids(tokenizer)
        missing = [k for k in ("pad_id", "bos_id", "eos_id") if k not in ids]
        if missing:
            raise DataError(f"Tokenizer {data.tokenizer!r} lacks {', '.join('<' + m[:3] + '>' for m in missing)}; "
                            "seq2seq needs <pad>, <bos> and <eos> special tokens (or use data.tokenizer=auto).")

        def enc(texts: list[str]) -> list[list[int]]:
            return [e.ids for e in tokenizer.encode_batch(texts, add_special_tokens=False)]

        src = enc([e.src for e in examples])
        tgt = enc([e.tgt for e in examples])
        derived = {"vocab_size": tokenizer.get_vocab_size(), "pad_id": ids["pad_id"], "bos_id": ids["bos_id"],
                   "eos_id": ids["eos_id"]}
        config = build_model_config(self.config_cls, model_values, derived)
        max_len = getattr(config, "max_len", None)
        longest_src, longest_tgt = max(map(len, src)), max(map(len, tgt)) + 1
        if max_len is not None and max(longest_src, longest_tgt) > max_len:
            raise DataError(f"The longest source has {longest_src} tokens and the longest target {longest_tgt}, "
                            f"over model.max_len = {max_len}; raise model.max_len or lower data.max_len.")
        payload = PairData(
            train_src=[src[i] for i in train_idx], train_tgt=[tgt[i] for i in train_idx],
            val_src=[src[i] for i in val_idx], val_tgt=[tgt[i] for i in val_idx],
            val_text=[(examples[i].src, examples[i].tgt) for i in val_idx],
            pad_id=ids["pad_id"], bos_id=ids["bos_id"], eos_id=ids["eos_id"],
            bucket_width=data.bucket_width, length_pool=data.length_pool,
        )
        info = {"pairs": data.pairs, "unit": unit, "n": len(examples), "n_train": len(train_idx), "n_val": len(val_idx),
                "seed": data.seed, "val_fraction": data.val_fraction, "tokenizer": data.tokenizer,
                "source_format": "tokens (no specials)", "target_format": "<bos> tokens <eos>",
                "bucket_width": data.bucket_width, "longest_source": longest_src}
        return Prepared(config, payload, tokenizer, None, info)

    def batch(self, prep: Prepared, seed: int, step: int, start: int, count: int, global_size: int) -> dict[str, Tensor]:
        data: PairData = prep.payload
        idx = data.train_indices(seed, step, start, count, global_size)
        return data.collate([data.train_src[i] for i in idx], [data.train_tgt[i] for i in idx])

    def count(self, prep: Prepared, batch: dict[str, Tensor]) -> int:
        return int((batch["tgt_out"] != prep.payload.pad_id).sum())

    def loss(self, model: nn.Module, batch: dict[str, Tensor], label_smoothing: float = 0.0) -> Tensor:
        """Token cross-entropy; a model with coverage (RNN, See et al.) adds coverage_weight x its
        coverage loss, averaged over the real target tokens."""
        config = unwrap_model(model).config
        pad = getattr(config, "pad_id", 0)
        if getattr(config, "coverage", False):
            logits, per_step = model(batch["src"], batch["tgt_in"], return_coverage=True)  # [B,T,V], [B,T]
        else:
            logits, per_step = model(batch["src"], batch["tgt_in"]), None  # [B,T,V]
        loss = F.cross_entropy(logits.flatten(0, 1), batch["tgt_out"].flatten(), ignore_index=pad,
                               label_smoothing=label_smoothing)
        if per_step is None:
            return loss
        return loss + config.coverage_weight * masked_mean(per_step, batch["tgt_out"] != pad)

    def _val_rows(self, prep: Prepared, cfg: TrainConfig) -> range:
        n = len(prep.payload.val_src)
        return range(n if not cfg.eval_examples else min(n, cfg.eval_examples))

    def _decode_all(self, model: nn.Module, prep: Prepared, rows: range, caps: DeviceCaps,
                    batch_size: int = 256) -> list[list[int]]:
        data: PairData = prep.payload
        preds: list[list[int]] = []
        for lo in range(rows.start, rows.stop, batch_size):
            idx = list(range(lo, min(rows.stop, lo + batch_size)))
            batch = data.collate([data.val_src[i] for i in idx], [data.val_tgt[i] for i in idx])
            max_len = max(len(data.val_tgt[i]) for i in idx) + 5
            src = caps.to_device(batch["src"])
            with caps.autocast():
                preds.extend(greedy_decode(model, src, data.bos_id, data.eos_id, max_len))
        return preds

    def evaluate(self, model: nn.Module, prep: Prepared, cfg: TrainConfig, caps: DeviceCaps) -> dict[str, float]:
        data: PairData = prep.payload
        rows = self._val_rows(prep, cfg)
        pad = data.pad_id
        coverage = bool(getattr(unwrap_model(model).config, "coverage", False))
        total_loss = total_tokens = total_coverage = 0.0
        token_hits: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])  # bucket -> [correct, tokens]
        for lo in range(rows.start, rows.stop, 256):
            idx = list(range(lo, min(rows.stop, lo + 256)))
            batch = to_device(caps, data.collate([data.val_src[i] for i in idx], [data.val_tgt[i] for i in idx]))
            mask = batch["tgt_out"] != pad  # [B,T]
            with caps.autocast():
                if coverage:
                    logits, per_step = model(batch["src"], batch["tgt_in"], return_coverage=True)  # [B,T,V], [B,T]
                    total_coverage += float((per_step.float() * mask).sum())
                else:
                    logits = model(batch["src"], batch["tgt_in"])
            logits = logits.float()  # [B,T,V]
            total_loss += F.cross_entropy(logits.flatten(0, 1), batch["tgt_out"].flatten(), ignore_index=pad,
                                          reduction="sum").item()
            total_tokens += mask.sum().item()
            correct = ((logits.argmax(-1) == batch["tgt_out"]) & mask).sum(1).cpu()  # [B]
            counts = mask.sum(1).cpu()
            for j, i in enumerate(idx):
                b = token_hits[length_bucket(len(data.val_src[i]), data.bucket_width)]
                b[0] += float(correct[j])
                b[1] += float(counts[j])
        preds = self._decode_all(model, prep, rows, caps)
        exact: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for pred, i in zip(preds, rows):
            e = exact[length_bucket(len(data.val_src[i]), data.bucket_width)]
            e[0] += int(pred == data.val_tgt[i])
            e[1] += 1
        n = len(rows)
        metrics = {
            "val_loss": total_loss / max(1.0, total_tokens),
            "token_accuracy": sum(v[0] for v in token_hits.values()) / max(1.0, sum(v[1] for v in token_hits.values())),
            "exact_match": sum(v[0] for v in exact.values()) / max(1, n),
        }
        if coverage:  # per target token, before the weight: how much attention went back to covered words
            metrics["coverage_loss"] = total_coverage / max(1.0, total_tokens)
        for bucket in sorted(exact, key=lambda b: int(b.split("-")[0])):
            metrics[f"exact_match@{bucket}"] = exact[bucket][0] / exact[bucket][1]
            metrics[f"token_accuracy@{bucket}"] = token_hits[bucket][0] / max(1.0, token_hits[bucket][1])
            metrics[f"n@{bucket}"] = exact[bucket][1]
        return metrics

    def preview(self, model: nn.Module, prep: Prepared, cfg: TrainConfig, caps: DeviceCaps, n: int = 5) -> Preview:
        data: PairData = prep.payload
        rows = range(min(n, len(data.val_src)))
        preds = self._decode_all(model, prep, rows, caps)
        out = []
        for i, pred in zip(rows, preds):
            src, ref = data.val_text[i]
            out.append({"source": src, "reference": ref,
                        "prediction": prep.tokenizer.decode(pred, skip_special_tokens=True),
                        "correct": pred == data.val_tgt[i]})
        return Preview("translations", rows=out)

    def d_model(self, model_config: Any) -> int | None:
        return getattr(model_config, "d_model", None) or getattr(model_config, "hidden", None)
