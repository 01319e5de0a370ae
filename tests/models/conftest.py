"""Tiny configs and batches for every model family (the contract tests run over all of them)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor, nn

VOCAB = 23
PAD, BOS, EOS = 0, 1, 2

TINY_CONFIGS: dict[str, dict] = {
    "gpt": dict(vocab_size=VOCAB, block_size=16, n_layer=2, n_head=2, d_model=16),
    "imagegpt": dict(vocab_size=12, block_size=16, n_layer=2, n_head=2, d_model=16),  # start, <unk>, 10 grey levels
    "vit": dict(image_size=8, patch_size=4, channels=3, n_classes=5, d_model=16, n_layer=2, n_head=2),
    "rnn_seq2seq": dict(vocab_size=VOCAB, emb_dim=8, hidden=16, attention="additive"),
    "transformer_seq2seq": dict(vocab_size=VOCAB, d_model=16, n_head=2, max_len=16),
    "text_classifier": dict(vocab_size=VOCAB, n_classes=3, emb_dim=8, hidden=16, encoder="bilstm"),
    "bert_mlm": dict(vocab_size=VOCAB, d_model=16, n_layer=2, n_head=2, block_size=16),  # [PAD]=0 [CLS]=2 [SEP]=3 [MASK]=4
    "bert_classifier": dict(vocab_size=VOCAB, n_classes=3, d_model=16, n_layer=2, n_head=2, block_size=16),
}


def make_batch(family: str, batch: int = 3, seed: int = 0) -> tuple[tuple[Tensor, ...], Tensor]:
    """(model inputs, targets) for a tiny config of ``family``; seq2seq sources are right-padded."""
    g = torch.Generator().manual_seed(seed)
    if family == "gpt":
        ids = torch.randint(0, VOCAB, (batch, 11), generator=g)
        return (ids[:, :-1],), ids[:, 1:]
    if family == "imagegpt":  # pixel ids only: the model never predicts the start token or <unk> (ids 0, 1)
        ids = torch.randint(2, 12, (batch, 11), generator=g)
        return (ids[:, :-1],), ids[:, 1:]
    if family == "vit":
        return (torch.randn(batch, 3, 8, 8, generator=g),), torch.randint(0, 5, (batch,), generator=g)
    if family == "bert_mlm":  # token ids past the specials; the targets are the tokens themselves
        ids = torch.randint(5, VOCAB, (batch, 10), generator=g)
        return (ids,), ids
    if family in ("text_classifier", "bert_classifier"):  # row 0 right-padded
        ids = torch.randint(2, VOCAB, (batch, 7), generator=g)
        ids[0, 5:] = PAD
        return (ids,), torch.randint(0, 3, (batch,), generator=g)
    src = torch.randint(3, VOCAB, (batch, 7), generator=g)
    src[0, 5:] = PAD
    tgt = torch.randint(3, VOCAB, (batch, 6), generator=g)
    tgt_in = torch.cat([torch.full((batch, 1), BOS), tgt[:, :-1]], dim=1)
    return (src, tgt_in), tgt


def loss_of(family: str, model: nn.Module, inputs: tuple[Tensor, ...], targets: Tensor) -> Tensor:
    logits = model(*inputs)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=-100)


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)
