"""Tiny models of every family (random weights) with tokenizers, as bundles in a temp workspace."""
from __future__ import annotations

import pytest
import torch

TEXT = "the quick brown fox jumps over the lazy dog. "


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)


@pytest.fixture(scope="module")
def char_tok():
    from playground.tokenization.simple import build_char_tokenizer

    return build_char_tokenizer([TEXT], [])


@pytest.fixture(scope="module")
def pair_tok():
    from playground.tokenization.simple import build_char_tokenizer

    return build_char_tokenizer(["abcdefghij"])  # <pad> <bos> <eos> <unk> + letters


def tiny_gpt(vocab: int, **kw):
    from playground.models.gpt import GPT, GPTConfig

    torch.manual_seed(0)
    cfg = dict(vocab_size=vocab, block_size=32, n_layer=2, n_head=2, d_model=16)
    cfg.update(kw)
    return GPT(GPTConfig(**cfg)).eval()


def tiny_vit(**kw):
    from playground.models.vit import ViT, ViTConfig

    torch.manual_seed(0)
    cfg = dict(image_size=16, patch_size=4, channels=3, n_classes=4, d_model=16, n_layer=2, n_head=2)
    cfg.update(kw)
    return ViT(ViTConfig(**cfg)).eval()


def tiny_seq2seq(family: str, vocab: int, **kw):
    from playground.families import build_model

    torch.manual_seed(0)
    if family == "rnn_seq2seq":
        cfg = dict(vocab_size=vocab, emb_dim=8, hidden=16, attention="additive")
    else:
        cfg = dict(vocab_size=vocab, d_model=16, n_head=2, max_len=32, n_encoder_layers=2, n_decoder_layers=2)
    cfg.update(kw)
    return build_model(family, cfg).eval()


@pytest.fixture
def gpt_bundle(workspace, char_tok):
    from playground.bundle import load_bundle, save_bundle

    model = tiny_gpt(char_tok.get_vocab_size())
    save_bundle(workspace, "tiny-gpt", model, "gpt", model.config, tokenizer=char_tok)
    return load_bundle("tiny-gpt", workspace)
