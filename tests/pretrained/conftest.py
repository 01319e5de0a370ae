"""Tiny random checkpoints of every importable architecture, built and saved with `transformers`.

Each is a real ``save_pretrained`` folder (config.json + model.safetensors + tokenizer.json)
with random weights, so an import is checked against the very model that wrote it.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import torch
from tokenizers import (
    Tokenizer,
    decoders,
    models,
    normalizers,
    pre_tokenizers,
    trainers,
)

TEXT = ["the quick brown fox jumps over the lazy dog", "a tiny model reads a tiny text",
        "attention is not explanation, or is it?", "hello world, hello playground"] * 8
BERT_SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
ARCHITECTURES = ("GPT2LMHeadModel", "BertForMaskedLM", "BertForSequenceClassification", "DistilBertForMaskedLM",
                 "DistilBertForSequenceClassification", "ViTForImageClassification")


def byte_bpe(vocab_size: int) -> Tokenizer:
    """GPT-2's kind of tokenizer: byte-level BPE with <|endoftext|>."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(TEXT, trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<|endoftext|>"],
                                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    return tok


def wordpiece(vocab_size: int) -> Tokenizer:
    """BERT's kind of tokenizer: lower-cased WordPiece with [PAD] [UNK] [CLS] [SEP] [MASK] first."""
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    tok.train_from_iterator(TEXT, trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=BERT_SPECIALS))
    return tok


def hf_model(architecture: str) -> tuple[Any, Tokenizer | None]:
    """A random tiny `transformers` model of ``architecture`` (eval mode, eager attention) and its tokenizer."""
    import transformers as tf  # function-level: transformers is a test extra and slow to import

    torch.manual_seed(0)
    bert = {"vocab_size": 120, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
            "intermediate_size": 48, "max_position_embeddings": 40, "pad_token_id": 0}
    distil = {"vocab_size": 120, "dim": 32, "n_layers": 2, "n_heads": 4, "hidden_dim": 48,
              "max_position_embeddings": 40, "pad_token_id": 0}
    labels = {"id2label": {0: "negative", 1: "neutral", 2: "positive"},
              "label2id": {"negative": 0, "neutral": 1, "positive": 2}}
    if architecture == "GPT2LMHeadModel":
        config, tok = tf.GPT2Config(vocab_size=300, n_positions=48, n_embd=32, n_layer=2, n_head=4), byte_bpe(300)
    elif architecture == "BertForMaskedLM":
        config, tok = tf.BertConfig(**bert), wordpiece(120)
    elif architecture == "BertForSequenceClassification":
        config, tok = tf.BertConfig(**bert, **labels), wordpiece(120)
    elif architecture == "DistilBertForMaskedLM":
        config, tok = tf.DistilBertConfig(**distil), wordpiece(120)
    elif architecture == "DistilBertForSequenceClassification":
        config, tok = tf.DistilBertConfig(**distil, **labels), wordpiece(120)
    else:
        config = tf.ViTConfig(image_size=16, patch_size=4, num_channels=3, hidden_size=32, num_hidden_layers=2,
                              num_attention_heads=4, intermediate_size=48, id2label={0: "cat", 1: "dog"},
                              label2id={"cat": 0, "dog": 1})
        tok = None
    config._attn_implementation = "eager"  # attention maps for the comparison
    model = getattr(tf, architecture)(config).eval()
    with torch.no_grad():  # random biases and norms too, so a wrong map cannot hide behind zeros and ones
        for _name, p in model.named_parameters():
            if p.dim() == 1:
                p.add_(torch.randn_like(p) * 0.1)
    return model, tok


@dataclass
class Saved:
    """A saved tiny checkpoint: its folder, the live `transformers` model and its tokenizer."""

    architecture: str
    folder: Path
    model: Any
    tokenizer: Tokenizer | None


def save(architecture: str, folder: Path) -> Saved:
    model, tok = hf_model(architecture)
    model.save_pretrained(folder)
    if tok is not None:
        tok.save(str(folder / "tokenizer.json"))
    return Saved(architecture, folder, model, tok)


@pytest.fixture(scope="session")
def saved(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Saved]:
    """Every architecture, saved once per session."""
    root = tmp_path_factory.mktemp("hf")
    return {a: save(a, root / a) for a in ARCHITECTURES}
