"""Training ImageGPT: next-pixel prediction over whole digits (the trainer's adapter for this family).

Each training sequence is one image: the start token, then its 64 grey levels in raster order;
the model reads tokens 0..63 and predicts tokens 1..64, so the loss is nats per pixel.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from tokenizers import Tokenizer
from torch import Tensor, nn

from playground.data.policy import DataPolicy
from playground.errors import ConfigError
from playground.families.gpt.training import GPTAdapter
from playground.families.imagegpt.pixels import (
    GIVEN,
    N_PIXELS,
    PixelDataConfig,
    ascii_art,
    from_ids,
    pixel_tokenizer,
    quantise,
    split,
    to_ids,
)
from playground.training.adapters import Prepared, Preview, to_device
from playground.training.config import TrainConfig, build_model_config
from playground.training.data import EpochSampler
from playground.training.device import DeviceCaps
from playground.workspace import Workspace


@dataclass
class PixelData:
    """Train and validation images as token sequences [N,65] (start token, 64 pixels)."""

    train: Tensor
    val: Tensor
    sampler: EpochSampler | None = None  # over train, seeded by train.seed (set at the first batch)


class PixelAdapter(GPTAdapter):
    """Next-pixel prediction on quantised digits (loss and mixture-of-experts term as GPT's)."""

    data_config_cls = PixelDataConfig
    unit = "tokens"

    def prepare(self, data: PixelDataConfig, model_values: dict[str, Any], workspace: Workspace | None,
                tokenizer: Tokenizer | None = None, limits: Any | None = None,
                policy: DataPolicy | None = None) -> Prepared:
        tokenizer = tokenizer or pixel_tokenizer(data.levels)
        if tokenizer.get_vocab_size() != data.levels + 2:
            raise ConfigError(f"The checkpoint's tokenizer has {tokenizer.get_vocab_size() - 2} grey levels, "
                              f"data.levels is {data.levels}.")
        train, val = split(data)
        seqs = {name: to_ids(quantise(s.images, data.levels)) for name, s in (("train", train), ("val", val))}  # [N,65]
        derived = {"vocab_size": tokenizer.get_vocab_size(), "block_size": N_PIXELS}
        config = build_model_config(self.config_cls, model_values, derived)
        info = {"dataset": data.dataset, "levels": data.levels, "n_train": train.n, "n_val": val.n,
                "seed": data.seed, "val_fraction": data.val_fraction, "train_tokens": seqs["train"].numel()}
        return Prepared(config, PixelData(seqs["train"], seqs["val"]), tokenizer, None, info)

    def batch(self, prep: Prepared, seed: int, step: int, start: int, count: int, global_size: int) -> dict[str, Tensor]:
        payload: PixelData = prep.payload
        if payload.sampler is None or payload.sampler.seed != seed:
            payload.sampler = EpochSampler(payload.train.shape[0], seed)
        seqs = payload.train[payload.sampler.indices(step * global_size + start, count)]  # [B,65]
        return {"x": seqs[:, :-1], "y": seqs[:, 1:]}  # [B,64] each

    def evaluate(self, model: nn.Module, prep: Prepared, cfg: TrainConfig, caps: DeviceCaps) -> dict[str, float]:
        """Mean next-pixel cross-entropy over every validation pixel (nats per pixel)."""
        val: Tensor = prep.payload.val
        n = val.shape[0] if not cfg.eval_examples else min(val.shape[0], cfg.eval_examples)
        total = 0.0
        for lo in range(0, n, 256):
            seqs = val[lo:min(n, lo + 256)]
            batch = to_device(caps, {"x": seqs[:, :-1], "y": seqs[:, 1:]})
            with caps.autocast():
                total += self.loss(model, batch).float().item() * seqs.shape[0]
        return {"val_loss": total / n}

    def preview(self, model: nn.Module, prep: Prepared, cfg: TrainConfig, caps: DeviceCaps) -> Preview:
        """The first validation digit and a sampled completion of its lower half, as text art."""
        levels = prep.tokenizer.get_vocab_size() - 2
        seq = prep.payload.val[0]  # [65]
        idx = seq[None, : 1 + GIVEN].to(caps.device)  # [1,33]
        g = torch.Generator(device="cpu").manual_seed(cfg.seed)
        for _ in range(N_PIXELS - GIVEN):
            with caps.autocast():
                logits = model(idx, last_only=True)[:, -1].float()  # [1,V]
            nxt = torch.multinomial(torch.softmax(logits, -1).cpu(), 1, generator=g)  # [1,1]
            idx = torch.cat([idx, nxt.to(idx.device)], dim=1)
        original = ascii_art(from_ids(seq[1:].tolist()), levels)
        completed = ascii_art(from_ids(idx[0, 1:].tolist()), levels)
        lines = [f"{a}   {b}" for a, b in zip(original, completed)]
        return Preview("text", text="original           completed (lower half sampled)\n" + "\n".join(lines))
