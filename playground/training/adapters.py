"""One small adapter per model family: data, batches, loss, evaluation and preview.

The engine never branches on the family; it calls the adapter registered in :data:`ADAPTERS`.
A new family is one adapter class plus one entry there.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from playground.data.policy import DataPolicy, default_policy
from playground.errors import ConfigError, DataError, NotFoundError
from playground.models.registry import get_family
from playground.training.config import TrainConfig, build_model_config
from playground.training.data import (
    EpochSampler,
    ImageDataConfig,
    PairData,
    PairDataConfig,
    TextData,
    TextDataConfig,
    encode_text,
    length_bucket,
    load_pairs,
    load_text,
    random_shift,
    step_generator,
)
from playground.training.device import DeviceCaps
from playground.workspace import Workspace


@dataclass
class Prepared:
    """A family's data, ready to batch, and the model config it fixes."""

    model_config: Any
    payload: Any  # TextData | ImageSplit | PairData
    tokenizer: Any | None = None
    class_names: list[str] | None = None
    info: dict[str, Any] = field(default_factory=dict)  # what the bundle records about the data


@dataclass
class Preview:
    """What to show at an evaluation: a sample, a confusion matrix or a few translations."""

    kind: str  # "text" | "confusion" | "translations"
    text: str = ""
    matrix: list[list[int]] | None = None  # [true class][predicted class]
    labels: list[str] | None = None
    rows: list[dict[str, Any]] | None = None  # {"source", "reference", "prediction", "correct"}


class FamilyAdapter:
    """The per-family part of training. Subclasses fill in every method."""

    family: str = ""
    data_config_cls: type = object
    unit: str = "tokens"  # what throughput counts: tokens or samples

    def prepare(self, data: Any, model_values: dict[str, Any], workspace: Workspace | None,
                tokenizer: Any | None = None, limits: Any | None = None,
                policy: DataPolicy | None = None) -> Prepared:
        """Load and split the data; build the model config (vocab size etc. from the data).
        `tokenizer` is given when resuming (the bundle's own), so ids never shift; `limits`
        (playground.settings.DemoCaps) limits corpus and upload sizes on shared servers; `policy`
        says which files data references may open (None: the CLI's, any path)."""
        raise NotImplementedError

    def batch(self, prep: Prepared, seed: int, step: int, start: int, count: int, global_size: int) -> dict[str, Tensor]:
        """Host tensors of positions start .. start+count-1 of update `step`'s global batch."""
        raise NotImplementedError

    def count(self, prep: Prepared, batch: dict[str, Tensor]) -> int:
        """Tokens or samples in a batch (throughput)."""
        raise NotImplementedError

    def loss(self, model: nn.Module, batch: dict[str, Tensor], label_smoothing: float = 0.0) -> Tensor:
        """Mean training loss of a batch already on the device (scalar)."""
        raise NotImplementedError

    def evaluate(self, model: nn.Module, prep: Prepared, cfg: TrainConfig, caps: DeviceCaps) -> dict[str, float]:
        """Validation metrics (always `val_loss`); the model is in eval mode under no_grad."""
        raise NotImplementedError

    def preview(self, model: nn.Module, prep: Prepared, cfg: TrainConfig, caps: DeviceCaps) -> Preview | None:
        """A preview of what the model does now."""
        return None

    def d_model(self, model_config: Any) -> int | None:
        """Model width (for the inverse-sqrt schedule)."""
        return getattr(model_config, "d_model", None) or getattr(model_config, "hidden", None)


def _to(caps: DeviceCaps, batch: dict[str, Tensor]) -> dict[str, Tensor]:
    return {k: caps.to_device(v) for k, v in batch.items()}


def _resolve_tokenizer(name: str, workspace: Workspace | None) -> Any:
    if workspace is None:
        raise NotFoundError(f"data.tokenizer = {name!r} names a workspace tokenizer, but no workspace was given.")
    if not workspace.exists("tokenizers", name):
        have = ", ".join(workspace.names("tokenizers")) or "none yet: build one in the Tokenizer tab"
        raise NotFoundError(f"data.tokenizer = {name!r}: no such tokenizer in the workspace (have: {have}); "
                            "use data.tokenizer=char for characters.")
    return workspace.load_tokenizer(name)


# ---------------------------------------------------------------------------------------------
# GPT


class GPTAdapter(FamilyAdapter):
    """Next-token prediction on a text corpus."""

    family = "gpt"
    data_config_cls = TextDataConfig
    unit = "tokens"

    def prepare(self, data: TextDataConfig, model_values: dict[str, Any], workspace: Workspace | None,
                tokenizer: Any | None = None, limits: Any | None = None,
                policy: DataPolicy | None = None) -> Prepared:
        from playground.data.splits import split_text
        from playground.tokenization.simple import build_char_tokenizer

        text, description = load_text(data.corpus, workspace, data.max_chars, limits, policy)
        if tokenizer is None:
            if data.tokenizer == "char":
                tokenizer = build_char_tokenizer([text], [])
            else:
                tokenizer = _resolve_tokenizer(data.tokenizer, workspace)
        ids = encode_text(tokenizer, text)
        spec = get_family(self.family)
        block_size = int(model_values.get("block_size", spec.config_cls().block_size))
        train, val = split_text(ids, data.val_fraction, block_size=block_size)
        config = build_model_config(spec.config_cls, model_values, {"vocab_size": tokenizer.get_vocab_size()})
        info = {"corpus": data.corpus, "description": description, "tokenizer": data.tokenizer,
                "chars": len(text), "tokens": len(ids), "train_tokens": len(train), "val_tokens": len(val),
                "val_fraction": data.val_fraction}
        return Prepared(config, TextData(train, val, config.block_size), tokenizer, None, info)

    def batch(self, prep: Prepared, seed: int, step: int, start: int, count: int, global_size: int) -> dict[str, Tensor]:
        starts = prep.payload.train_starts(seed, step, global_size)[start:start + count]
        x, y = prep.payload.windows("train", starts)
        return {"x": x, "y": y}

    def count(self, prep: Prepared, batch: dict[str, Tensor]) -> int:
        return batch["x"].numel()

    def loss(self, model: nn.Module, batch: dict[str, Tensor], label_smoothing: float = 0.0) -> Tensor:
        logits = model(batch["x"])  # [B,T,V]
        return F.cross_entropy(logits.flatten(0, 1), batch["y"].flatten(), label_smoothing=label_smoothing)

    def evaluate(self, model: nn.Module, prep: Prepared, cfg: TrainConfig, caps: DeviceCaps) -> dict[str, float]:
        losses = []
        for starts in prep.payload.val_starts(cfg.eval_iters, cfg.batch_size):
            x, y = prep.payload.windows("val", starts)
            batch = _to(caps, {"x": x, "y": y})
            with caps.autocast():
                losses.append(self.loss(model, batch).float().item())
        return {"val_loss": sum(losses) / len(losses)}

    def preview(self, model: nn.Module, prep: Prepared, cfg: TrainConfig, caps: DeviceCaps,
                n_tokens: int = 120, temperature: float = 0.8) -> Preview:
        """A short sample continuing the first tokens of the validation text."""
        block = prep.model_config.block_size
        idx = prep.payload.val[: min(8, block)][None].to(caps.device)  # [1,P]
        g = torch.Generator(device="cpu").manual_seed(cfg.seed)
        out = []
        for _ in range(n_tokens):
            with caps.autocast():
                logits = model(idx[:, -block:], last_only=True)[:, -1].float()  # [1,V]
            probs = torch.softmax(logits / temperature, dim=-1).cpu()
            nxt = torch.multinomial(probs, 1, generator=g)  # [1,1]
            out.append(int(nxt))
            idx = torch.cat([idx, nxt.to(idx.device)], dim=1)
        prompt = prep.tokenizer.decode(prep.payload.val[: min(8, block)].tolist(), skip_special_tokens=False)
        return Preview("text", text=prompt + prep.tokenizer.decode(out, skip_special_tokens=False))


# ---------------------------------------------------------------------------------------------
# ViT


@dataclass
class ImageSplit:
    """Train and validation images."""

    train: Any  # playground.data.images.ImageSet
    val: Any
    augment: str = "none"
    max_shift: int = 1
    sampler: EpochSampler | None = None  # over train, seeded by train.seed (set at the first batch)


class ViTAdapter(FamilyAdapter):
    """Image classification on an image set."""

    family = "vit"
    data_config_cls = ImageDataConfig
    unit = "samples"

    def prepare(self, data: ImageDataConfig, model_values: dict[str, Any], workspace: Workspace | None,
                tokenizer: Any | None = None, limits: Any | None = None,
                policy: DataPolicy | None = None) -> Prepared:
        from playground.data.images import load_image_set
        from playground.data.splits import split_indices

        opts: dict[str, Any] = {}
        if data.dataset == "shapes":
            opts = {"image_size": data.image_size, "classes": list(data.classes)}
        elif data.dataset == "zip":
            if not data.path:
                raise ConfigError("data.dataset = zip needs data.path = a zip with one folder per class.")
            built_in = ("data.dataset = digits", "data.dataset = shapes")
            path = default_policy(policy, workspace).resolve(data.path, "data.path", built_in)
            opts = {"path": path, "image_size": data.image_size}
        images = load_image_set(data.dataset, data.n or None, data.seed, **opts)
        train_idx, val_idx = split_indices(images.n, data.val_fraction, data.seed)
        train, val = images.subset(train_idx), images.subset(val_idx)
        derived = {"image_size": images.image_size, "channels": images.channels, "n_classes": len(images.class_names)}
        config = build_model_config(get_family(self.family).config_cls, model_values, derived)
        info = {"dataset": data.dataset, "n": images.n, "n_train": train.n, "n_val": val.n, "seed": data.seed,
                "val_fraction": data.val_fraction, "image_size": images.image_size, "augment": data.augment}
        return Prepared(config, ImageSplit(train, val, data.augment, data.max_shift), None,
                        list(images.class_names), info)

    def batch(self, prep: Prepared, seed: int, step: int, start: int, count: int, global_size: int) -> dict[str, Tensor]:
        split: ImageSplit = prep.payload
        if split.sampler is None or split.sampler.seed != seed:
            split.sampler = EpochSampler(split.train.n, seed)
        idx = split.sampler.indices(step * global_size + start, count)
        images = split.train.images[idx]
        if split.augment == "shift":
            images = random_shift(images, split.max_shift, step_generator(seed, step, salt=2 + start))
        return {"images": images, "labels": split.train.labels[idx]}

    def count(self, prep: Prepared, batch: dict[str, Tensor]) -> int:
        return batch["labels"].shape[0]

    def loss(self, model: nn.Module, batch: dict[str, Tensor], label_smoothing: float = 0.0) -> Tensor:
        logits = model(batch["images"])  # [B,K]
        return F.cross_entropy(logits, batch["labels"], label_smoothing=label_smoothing)

    def _predict(self, model: nn.Module, prep: Prepared, cfg: TrainConfig, caps: DeviceCaps) -> tuple[Tensor, Tensor, float]:
        val = prep.payload.val
        n = val.n if not cfg.eval_examples else min(val.n, cfg.eval_examples)
        preds, total = [], 0.0
        for lo in range(0, n, 256):
            batch = _to(caps, {"images": val.images[lo:min(n, lo + 256)], "labels": val.labels[lo:min(n, lo + 256)]})
            with caps.autocast():
                logits = model(batch["images"]).float()
            total += F.cross_entropy(logits, batch["labels"], reduction="sum").item()
            preds.append(logits.argmax(-1).cpu())
        return torch.cat(preds), val.labels[:n], total / n

    def evaluate(self, model: nn.Module, prep: Prepared, cfg: TrainConfig, caps: DeviceCaps) -> dict[str, float]:
        pred, labels, loss = self._predict(model, prep, cfg, caps)
        return {"val_loss": loss, "accuracy": (pred == labels).float().mean().item()}

    def preview(self, model: nn.Module, prep: Prepared, cfg: TrainConfig, caps: DeviceCaps) -> Preview:
        from sklearn.metrics import confusion_matrix

        pred, labels, _ = self._predict(model, prep, cfg, caps)
        k = len(prep.class_names)
        matrix = confusion_matrix(labels.numpy(), pred.numpy(), labels=list(range(k)))
        return Preview("confusion", matrix=matrix.tolist(), labels=list(prep.class_names))


# ---------------------------------------------------------------------------------------------
# seq2seq (RNN and Transformer share the model contract, so they share the adapter)


@torch.no_grad()
def greedy_decode(model: nn.Module, src: Tensor, bos_id: int, eos_id: int, max_len: int) -> list[list[int]]:
    """Greedy decoding with model.start / model.step: src [B,S] -> token ids per row (no specials)."""
    state = model.start(src)
    B = src.shape[0]
    y = torch.full((B,), bos_id, dtype=torch.long, device=src.device)
    done = torch.zeros(B, dtype=torch.bool, device=src.device)
    out = []
    for _ in range(max_len):
        logits, _, state = model.step(state, y)  # [B,V]
        y = logits.argmax(-1)  # [B]
        out.append(torch.where(done, torch.full_like(y, eos_id), y))
        done |= y == eos_id
        if bool(done.all()):
            break
    rows = torch.stack(out, 1).tolist() if out else [[] for _ in range(B)]
    result = []
    for row in rows:
        result.append(row[: row.index(eos_id)] if eos_id in row else row)
    return result


class Seq2SeqAdapter(FamilyAdapter):
    """Source -> target with teacher forcing; greedy decoding for exact match."""

    data_config_cls = PairDataConfig
    unit = "tokens"

    def __init__(self, family: str) -> None:
        self.family = family

    def prepare(self, data: PairDataConfig, model_values: dict[str, Any], workspace: Workspace | None,
                tokenizer: Any | None = None, limits: Any | None = None,
                policy: DataPolicy | None = None) -> Prepared:
        from playground.data.pairs import pair_set_unit, pair_tokenizer
        from playground.data.splits import split_indices
        from playground.tokenization.simple import special_ids

        examples = load_pairs(data, policy, workspace)
        train_idx, val_idx = split_indices(len(examples), data.val_fraction, data.seed)
        unit = pair_set_unit(data.pairs)
        if tokenizer is None:
            if data.tokenizer == "auto":
                tokenizer = pair_tokenizer(examples, unit)
            else:
                tokenizer = _resolve_tokenizer(data.tokenizer, workspace)
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
        config = build_model_config(get_family(self.family).config_cls, model_values, derived)
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
        logits = model(batch["src"], batch["tgt_in"])  # [B,T,V]
        pad = getattr(_plain(model).config, "pad_id", 0)
        return F.cross_entropy(logits.flatten(0, 1), batch["tgt_out"].flatten(), ignore_index=pad,
                               label_smoothing=label_smoothing)

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
        total_loss = total_tokens = 0.0
        token_hits: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])  # bucket -> [correct, tokens]
        for lo in range(rows.start, rows.stop, 256):
            idx = list(range(lo, min(rows.stop, lo + 256)))
            batch = _to(caps, data.collate([data.val_src[i] for i in idx], [data.val_tgt[i] for i in idx]))
            with caps.autocast():
                logits = model(batch["src"], batch["tgt_in"]).float()  # [B,T,V]
            mask = batch["tgt_out"] != pad  # [B,T]
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


def _plain(model: nn.Module) -> nn.Module:
    from playground.bundle import unwrap_model

    return unwrap_model(model)


ADAPTERS: dict[str, FamilyAdapter] = {
    "gpt": GPTAdapter(),
    "vit": ViTAdapter(),
    "rnn_seq2seq": Seq2SeqAdapter("rnn_seq2seq"),
    "transformer_seq2seq": Seq2SeqAdapter("transformer_seq2seq"),
}


def get_adapter(family: str) -> FamilyAdapter:
    """The training adapter of a family; ConfigError naming the valid families otherwise."""
    try:
        return ADAPTERS[family]
    except KeyError:
        raise ConfigError(f"Unknown family {family!r}; choose one of: {', '.join(ADAPTERS)}.") from None
