"""GPT2LMHeadModel -> our GPT: the inverse of :mod:`playground.models.export_hf`.

GPT-2 is exactly our GPT with its defaults: learned positions, pre-LN LayerNorm (eps 1e-5),
GELU (tanh approximation, ``gelu_new``), a fused qkv and a 2-Linear MLP with biases, tied
embeddings. Its Conv1D layers keep weights as [in, out]: transposed here. What GPT-2 configs can
set and our GPT cannot (cross-attention, per-layer attention scaling, another epsilon) is refused.
"""
from __future__ import annotations

from typing import Any, Literal

from playground.families.hf_weights import HFConverter, Map, need, refuse, same
from playground.models.gpt import GPTConfig

FFN = Literal["gelu", "gelu_exact", "relu", "relu2", "swiglu"]
ACTIVATIONS: dict[str, FFN] = {"gelu_new": "gelu", "gelu_pytorch_tanh": "gelu", "gelu_fast": "gelu", "gelu": "gelu_exact",
               "relu": "relu"}


def gpt_config(hf: dict[str, Any], specials: dict[str, int]) -> GPTConfig:
    """Our GPTConfig from a GPT-2 config.json; ConfigError naming what does not map."""
    problems: list[str] = []
    act = hf.get("activation_function", "gelu_new")
    if act not in ACTIVATIONS:
        problems.append(f"activation_function={act!r} (the playground's GPT has {sorted(ACTIVATIONS)})")
    need(hf, problems, "layer_norm_epsilon", 1e-5, "the GPT's LayerNorm uses 1e-5")
    need(hf, problems, "scale_attn_weights", True, "scores are divided by sqrt(head size)")
    need(hf, problems, "scale_attn_by_inverse_layer_idx", False, "no per-layer attention scaling")
    need(hf, problems, "add_cross_attention", False, "a decoder-only GPT has no cross-attention")
    need(hf, problems, "tie_word_embeddings", True, "the output layer is the token embedding")
    refuse("GPT-2", problems)
    d_model = hf.get("n_embd", 768)
    return GPTConfig(
        vocab_size=hf.get("vocab_size", 50257), block_size=hf.get("n_positions", 1024), n_layer=hf.get("n_layer", 12),
        n_head=hf.get("n_head", 12), d_model=d_model, d_ff=hf.get("n_inner") or 4 * d_model,
        ffn=ACTIVATIONS[act], dropout=0.0, attn_dropout=0.0, emb_dropout=0.0,
    )


def gpt_weights(c: GPTConfig) -> list[Map]:
    """Our GPT's tensors from GPT-2's (Conv1D weights [in, out] transposed)."""
    maps = same("tok_emb", "transformer.wte", ("weight",)) + same("pos_emb", "transformer.wpe", ("weight",))
    for i in range(c.n_layer):
        ours, theirs = f"blocks.{i}", f"transformer.h.{i}"
        maps += same(f"{ours}.ln1", f"{theirs}.ln_1") + same(f"{ours}.ln2", f"{theirs}.ln_2")
        for o, t in (("attn.qkv", "attn.c_attn"), ("attn.out_proj", "attn.c_proj"), ("mlp.fc", "mlp.c_fc"),
                     ("mlp.proj", "mlp.c_proj")):
            maps += [Map(f"{ours}.{o}.weight", (f"{theirs}.{t}.weight",), "T"),
                     Map(f"{ours}.{o}.bias", (f"{theirs}.{t}.bias",))]
    return maps + same("ln_f", "transformer.ln_f")


GPT2_LM = HFConverter(
    architecture="GPT2LMHeadModel", family="gpt", config=gpt_config, weights=gpt_weights,
    tied={"lm_head.weight": "tok_emb.weight"}, prefix="transformer.",
    ignored=("lm_head.weight", ".attn.bias", ".attn.masked_bias"),
)
