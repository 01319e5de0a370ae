"""RNN vs Transformer throughput as sequences grow, measured live on small untrained seq2seq models
of about the same size (the toy-translation GRU with attention, and a Transformer sized to match).

Three ways of running each: encoding a source, a teacher-forced pass (source and whole target at
once, what training does) and greedy decoding one token at a time (what generation does).
"""
from __future__ import annotations

import pandas as pd
import torch
from torch import nn

from playground.config import load_preset
from playground.families import build_model, get_family
from playground.lessons.timing import best_seconds, one_thread
from playground.models.base import ModelConfig
from playground.training.config import build_model_config

RNN_PRESET = "seq2seq-toytranslation-bahdanau"
BATCH = 8
REPEATS = 2  # best of, per measurement
WIDTHS = range(32, 257, 8)  # Transformer widths tried when matching the RNN's size
MODES = ("encode", "teacher-forced", "greedy decode")


def matched_configs(vocab: int, max_len: int) -> dict[str, ModelConfig]:
    """The RNN preset's config and a 2+2-layer Transformer (4 heads, d_ff 4d) whose parameter count,
    by the family's own sizes, is closest to it."""
    rnn = get_family("rnn_seq2seq")
    transformer = get_family("transformer_seq2seq")
    rnn_config = build_model_config(rnn.config_cls, dict(load_preset(RNN_PRESET).model), {"vocab_size": vocab})
    target = rnn.sizes.count_parameters(rnn_config)

    def transformer_config(d: int) -> ModelConfig:
        return transformer.config_cls(vocab_size=vocab, d_model=d, n_head=4, n_encoder_layers=2, n_decoder_layers=2,
                                      max_len=max_len, d_ff=4 * d, dropout=0.0)

    best = min(WIDTHS, key=lambda d: abs(transformer.sizes.count_parameters(transformer_config(d)) - target))
    return {"rnn_seq2seq": rnn_config, "transformer_seq2seq": transformer_config(best)}


def _greedy(model: nn.Module, src: torch.Tensor, steps: int, bos: int) -> None:
    """`steps` decoder steps from <bos>, never stopping early (every row decodes `steps` tokens)."""
    state = model.start(src)  # src [B,S]
    y = torch.full((src.shape[0],), bos, dtype=torch.long)  # [B]
    for _ in range(steps):
        logits, _, state = model.step(state, y)  # [B,V]
        y = logits.argmax(-1)  # [B]


def _timings(model: nn.Module, src: torch.Tensor, tgt: torch.Tensor, bos: int) -> dict[str, float]:
    """Best-of seconds of each mode on src [B,S] and tgt [B,T]."""
    return {"encode": best_seconds(lambda: model.start(src), REPEATS),
            "teacher-forced": best_seconds(lambda: model(src, tgt), REPEATS),
            "greedy decode": best_seconds(lambda: _greedy(model, src, tgt.shape[1], bos), REPEATS)}


def throughput(lengths: list[int], vocab: int = 319, seed: int = 0) -> tuple[pd.DataFrame, dict[str, int]]:
    """Tokens per second for each model, mode and length (batch BATCH, source and target of the same
    length, one CPU thread); and each model's parameter count. Columns: model, mode, length, tokens_per_s, seconds."""
    configs = matched_configs(vocab, max(lengths) + 1)
    rows, sizes = [], {}
    gen = torch.Generator().manual_seed(seed)
    for family, config in configs.items():
        torch.manual_seed(seed)
        model = build_model(family, config).eval()
        sizes[family] = sum(p.numel() for p in model.parameters())
        with torch.inference_mode(), one_thread():
            warm = torch.randint(3, vocab, (BATCH, lengths[0]), generator=gen)  # [B,S]
            model(warm, warm)  # first calls pay one-off set-up costs
            _greedy(model, warm, 2, config.bos_id)
            for length in lengths:
                src = torch.randint(3, vocab, (BATCH, length), generator=gen)  # [B,S]
                tgt = torch.randint(3, vocab, (BATCH, length), generator=gen)  # [B,T]
                for mode, seconds in _timings(model, src, tgt, config.bos_id).items():
                    rows.append({"model": family, "mode": mode, "length": length,
                                 "tokens_per_s": BATCH * length / seconds, "seconds": seconds})
    return pd.DataFrame(rows), sizes
