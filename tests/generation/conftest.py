"""Tiny checkpoints (saved and loaded through playground.bundle) for the generation tests."""
from __future__ import annotations

import functools

import pytest
import torch

TEXT = "the quick brown fox jumps over the lazy dog.\nTHE END!\n"


def sharpen(model: torch.nn.Module, factor: float = 6.0) -> torch.nn.Module:
    """Scale the weight matrices (not the embeddings) so a random model's predictions depend
    on the context instead of repeating one token, which makes token-equality tests meaningful."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() >= 2 and "emb" not in name:
                p.mul_(factor)
    return model


@pytest.fixture
def char_tokenizer():
    from playground.tokenization.simple import build_char_tokenizer

    return build_char_tokenizer([TEXT], special_tokens=[])


@pytest.fixture
def gpt_bundle(workspace, char_tokenizer):
    """A 2-layer GPT with block size 16 over the characters of TEXT."""
    from playground.bundle import load_bundle, save_bundle
    from playground.models.gpt import GPT, GPTConfig

    torch.manual_seed(0)
    cfg = GPTConfig(vocab_size=char_tokenizer.get_vocab_size(), block_size=16, n_layer=2, n_head=2, d_model=32)
    model = sharpen(GPT(cfg))
    save_bundle(workspace, "tiny-gpt", model, "gpt", cfg, tokenizer=char_tokenizer)
    return load_bundle("tiny-gpt", workspace)


PAIR_ALPHABET = "abcdefghij0123456789-"


@functools.cache
def _trained_seq2seq(family: str) -> tuple[dict, dict]:
    """(state_dict, config dict) of a tiny seq2seq trained 60 steps on string reversal, so its
    outputs depend on the source and end in <eos> (random weights rarely do). Once per session."""
    import random

    import torch.nn.functional as F

    from playground.families import build_model, get_family
    from playground.tokenization.simple import build_char_tokenizer, special_ids

    tok = build_char_tokenizer([PAIR_ALPHABET])
    ids = special_ids(tok)
    spec = get_family(family)
    common = dict(vocab_size=tok.get_vocab_size(), pad_id=ids["pad_id"], bos_id=ids["bos_id"], eos_id=ids["eos_id"])
    if family == "rnn_seq2seq":
        cfg = spec.config_cls(**common, emb_dim=16, hidden=32, attention="additive")
    else:
        cfg = spec.config_cls(**common, d_model=32, n_head=2, n_encoder_layers=1, n_decoder_layers=2, max_len=24)
    torch.manual_seed(0)
    model = build_model(family, cfg)
    opt = torch.optim.Adam(model.parameters(), 3e-3)
    rng = random.Random(0)
    pad = ids["pad_id"]
    for _ in range(60):
        srcs = ["".join(rng.choice("abcdefghij") for _ in range(rng.randint(2, 6))) for _ in range(16)]
        S, T = max(map(len, srcs)), max(map(len, srcs)) + 1
        src = torch.full((16, S), pad)
        tgt_in = torch.full((16, T), pad)
        tgt_out = torch.full((16, T), pad)
        for i, s in enumerate(srcs):
            a, b = tok.encode(s).ids, tok.encode(s[::-1]).ids
            src[i, : len(a)] = torch.tensor(a)
            tgt_in[i, : len(b) + 1] = torch.tensor([ids["bos_id"], *b])
            tgt_out[i, : len(b) + 1] = torch.tensor([*b, ids["eos_id"]])
        loss = F.cross_entropy(model(src, tgt_in).flatten(0, 1), tgt_out.flatten(), ignore_index=pad)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {k: v.detach().clone() for k, v in model.state_dict().items()}, cfg.to_dict()


def _seq2seq_bundle(workspace, family: str, name: str):
    from playground.bundle import load_bundle, save_bundle
    from playground.families import build_model, get_family
    from playground.tokenization.simple import build_char_tokenizer

    state, cfg_dict = _trained_seq2seq(family)
    cfg = get_family(family).config_cls.from_dict(cfg_dict)
    model = build_model(family, cfg)
    model.load_state_dict(state)
    save_bundle(workspace, name, model, family, cfg, tokenizer=build_char_tokenizer([PAIR_ALPHABET]))
    return load_bundle(name, workspace)


@pytest.fixture(params=["rnn_seq2seq", "transformer_seq2seq"])
def seq2seq_bundle(request, workspace):
    return _seq2seq_bundle(workspace, request.param, f"tiny-{request.param.replace('_', '-')}")


@pytest.fixture
def vit_bundle(workspace):
    from playground.bundle import load_bundle, save_bundle
    from playground.models.vit import ViT, ViTConfig

    torch.manual_seed(2)
    cfg = ViTConfig(image_size=8, patch_size=4, channels=1, n_classes=3, d_model=16, n_layer=1, n_head=2)
    save_bundle(workspace, "tiny-vit", ViT(cfg), "vit", cfg, class_names=["zero", "one", "two"])
    return load_bundle("tiny-vit", workspace)
