"""Tiny presets for every family (a few steps each, seconds on 2 cores) and a small corpus file."""
from __future__ import annotations

from pathlib import Path

import pytest

from playground.config import Preset

FAMILIES = ("gpt", "vit", "rnn_seq2seq", "transformer_seq2seq")

_WORDS = ("the cat sat on the mat . a dog ran to the park . she sells sea shells by the sea shore . "
          "to be or not to be , that is the question .\n")


def corpus_text(n_chars: int = 6000) -> str:
    """A small, repetitive text a tiny GPT learns quickly."""
    return (_WORDS * (n_chars // len(_WORDS) + 1))[:n_chars]


@pytest.fixture
def corpus_file(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.txt"
    path.write_text(corpus_text(), encoding="utf-8")
    return path


def tiny_train(**extra) -> dict:
    base = dict(max_steps=20, batch_size=8, lr=3e-3, min_lr=3e-4, schedule="cosine", warmup_steps=2,
                eval_interval=10, eval_iters=2, eval_examples=32, log_interval=1, weight_decay=0.0, seed=0)
    base.update(extra)
    return base


def tiny_preset(family: str, corpus: Path | None = None, **train) -> Preset:
    """A preset of `family` small enough for a unit test."""
    if family == "gpt":
        assert corpus is not None
        return Preset("tiny-gpt", "gpt", "", model=dict(block_size=16, n_layer=1, n_head=2, d_model=32),
                      data=dict(corpus=str(corpus), tokenizer="char"), train=tiny_train(**train))
    if family == "vit":
        return Preset("tiny-vit", "vit", "", model=dict(patch_size=4, d_model=32, n_layer=1, n_head=2),
                      data=dict(dataset="digits", n=300, val_fraction=0.2), train=tiny_train(**train))
    if family == "rnn_seq2seq":
        return Preset("tiny-rnn", "rnn_seq2seq", "", model=dict(emb_dim=16, hidden=32, attention="additive"),
                      data=dict(pairs="dates", n=300, bucket_width=10), train=tiny_train(**train))
    if family == "transformer_seq2seq":
        return Preset("tiny-tf", "transformer_seq2seq", "",
                      model=dict(d_model=32, n_head=2, n_encoder_layers=1, n_decoder_layers=1, d_ff=64, max_len=48),
                      data=dict(pairs="dates", n=300, bucket_width=10), train=tiny_train(**train))
    raise KeyError(family)
