"""Training a GPT: next-token prediction on a text corpus (the trainer's adapter for this family)."""
from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from tokenizers import Tokenizer
from torch import Tensor, nn

from playground.data.policy import DataPolicy
from playground.data.splits import split_text
from playground.models.unwrap import unwrap_model
from playground.tokenization.simple import build_char_tokenizer
from playground.training.adapters import FamilyAdapter, Prepared, Preview, resolve_tokenizer, to_device
from playground.training.config import TrainConfig, build_model_config
from playground.training.data import (
    TextData,
    TextDataConfig,
    encode_text,
    load_text,
)
from playground.training.device import DeviceCaps
from playground.workspace import Workspace


class GPTAdapter(FamilyAdapter):
    """Next-token prediction on a text corpus."""

    data_config_cls = TextDataConfig
    unit = "tokens"

    def prepare(self, data: TextDataConfig, model_values: dict[str, Any], workspace: Workspace | None,
                tokenizer: Tokenizer | None = None, limits: Any | None = None,
                policy: DataPolicy | None = None) -> Prepared:
        text, description = load_text(data.corpus, workspace, data.max_chars, limits, policy)
        if tokenizer is None:
            if data.tokenizer == "char":
                tokenizer = build_char_tokenizer([text], [])
            else:
                tokenizer = resolve_tokenizer(data.tokenizer, workspace)
        ids = encode_text(tokenizer, text)
        block_size = int(model_values.get("block_size", self.config_cls().block_size))
        train, val = split_text(ids, data.val_fraction, block_size=block_size)
        config = build_model_config(self.config_cls, model_values, {"vocab_size": tokenizer.get_vocab_size()})
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
        """Next-token cross-entropy; in training, plus a mixture of experts' load-balancing loss
        (moe_aux_weight x its sum over layers), so the router learns to spread the tokens."""
        logits = model(batch["x"])  # [B,T,V]
        loss = F.cross_entropy(logits.flatten(0, 1), batch["y"].flatten(), label_smoothing=label_smoothing)
        aux_loss = getattr(unwrap_model(model), "aux_loss", None)  # GPT's; a model without experts gives None
        aux = aux_loss() if aux_loss is not None else None
        return loss if aux is None else loss + aux

    def evaluate(self, model: nn.Module, prep: Prepared, cfg: TrainConfig, caps: DeviceCaps) -> dict[str, float]:
        losses = []
        for starts in prep.payload.val_starts(cfg.eval_iters, cfg.batch_size):
            x, y = prep.payload.windows("val", starts)
            batch = to_device(caps, {"x": x, "y": y})
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
