"""Export a GPT to Hugging Face ``transformers`` GPT-2 format (GPT2LMHeadModel).

GPT-2 is pre-LN, LayerNorm, learned absolute positions, tied embeddings, a 4-Linear attention
with fused qkv and a 2-Linear MLP. What maps exactly: learned positions (and sinusoidal /
none, written as fixed position vectors), ffn gelu (tanh approx., GPT-2's ``gelu_new``),
gelu_exact and relu, bias=False (written as zero biases), attn_scale on or off (off: the
queries are written times sqrt(head_dim), which GPT-2's scaling divides out). RoPE, ALiBi,
RMSNorm, post-LN, SwiGLU, grouped-query attention, a sliding window shorter than the context
and a mixture of experts have no GPT-2 equivalent and are refused.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from tokenizers import Tokenizer
from torch import Tensor, nn

from playground.errors import ConfigError, PlaygroundError
from playground.models.gpt import GPT, GPTConfig

HF_ACTIVATION = {"gelu": "gelu_new", "gelu_exact": "gelu", "relu": "relu"}
EOS_CANDIDATES = ("<|endoftext|>", "<eos>", "</s>", "[EOS]")


def check_gpt2_compatible(config: GPTConfig) -> None:
    """Raise ConfigError naming every choice GPT-2 cannot express."""
    problems = []
    if config.pos_encoding in ("rope", "alibi"):
        problems.append(f"pos_encoding={config.pos_encoding!r} (GPT-2 has learned absolute positions)")
    if config.norm != "layernorm":
        problems.append(f"norm={config.norm!r} (GPT-2 uses LayerNorm)")
    if config.norm_placement != "pre":
        problems.append(f"norm_placement={config.norm_placement!r} (GPT-2 is pre-LN)")
    if config.ffn not in HF_ACTIVATION:
        problems.append(f"ffn={config.ffn!r} (GPT-2's MLP has one activation, no gate)")
    if getattr(config, "qk_norm", False):
        problems.append("qk_norm=true (GPT-2 does not normalise queries and keys)")
    if getattr(config, "scale_embeddings", False):
        problems.append("scale_embeddings=true (GPT-2 does not scale its token embeddings)")
    if not getattr(config, "residual", True):
        problems.append("residual=false (GPT-2's blocks add their input back)")
    if not getattr(config, "tie_embeddings", True):
        problems.append("tie_embeddings=false (GPT-2's output layer is its token embedding)")
    if getattr(config, "uniform_attention", False):
        problems.append("uniform_attention=true (GPT-2's attention is learned)")
    if getattr(config, "n_kv_heads", 0) not in (0, config.n_head):
        problems.append(f"n_kv_heads={config.n_kv_heads} (GPT-2 gives every query head its own keys and values)")
    if getattr(config, "attn_window", 0) and config.attn_window < config.block_size:
        problems.append(f"attn_window={config.attn_window} (GPT-2 attends to the whole context)")
    if getattr(config, "ffn_experts", 0) > 1:
        problems.append(f"ffn_experts={config.ffn_experts} (GPT-2 has one dense MLP per block, no router)")
    if problems:
        raise ConfigError(
            "This model cannot be exported to GPT-2 format: " + "; ".join(problems)
            + ". Train with pos_encoding=learned, norm=layernorm, norm_placement=pre, ffn=gelu to export."
        )


def _hf_config(config: GPTConfig, ids: dict[str, int | None]) -> Any:
    from transformers import (
        GPT2Config,  # function-level: transformers is optional (an extra) and takes ~3 s to import
    )

    return GPT2Config(
        vocab_size=config.vocab_size, n_positions=config.block_size, n_embd=config.d_model,
        n_layer=config.n_layer, n_head=config.n_head, n_inner=config.d_ff or 4 * config.d_model,
        activation_function=HF_ACTIVATION[config.ffn], resid_pdrop=config.dropout,
        embd_pdrop=config.emb_dropout, attn_pdrop=config.attn_dropout, layer_norm_epsilon=1e-5,
        scale_attn_weights=True, tie_word_embeddings=True,  # attn_scale off: folded into the queries
        bos_token_id=ids.get("bos_token"), eos_token_id=ids.get("eos_token"), pad_token_id=ids.get("pad_token"),
    )


def gpt2_state_dict(model: GPT) -> dict[str, Tensor]:
    """Our GPT's weights under GPT-2's names (Conv1D weights are [in, out]: transposed)."""
    c = model.config
    D = c.d_model

    def linear(prefix: str, layer: nn.Linear) -> dict[str, Tensor]:
        bias = layer.bias if layer.bias is not None else torch.zeros(layer.out_features)
        return {f"{prefix}.weight": layer.weight.T.contiguous(), f"{prefix}.bias": bias}

    def norm(prefix: str, layer: nn.Module) -> dict[str, Tensor]:
        bias = layer.bias if getattr(layer, "bias", None) is not None else torch.zeros(D)
        return {f"{prefix}.weight": layer.weight, f"{prefix}.bias": bias}

    if model.pos_emb is not None:
        wpe = model.pos_emb.weight
    else:  # no positional encoding: zero position vectors
        wpe = torch.zeros(c.block_size, D)
    sd: dict[str, Tensor] = {
        "transformer.wte.weight": model.tok_emb.weight,
        "transformer.wpe.weight": wpe,
        "lm_head.weight": model.tok_emb.weight,
    }
    # Without attn_scale our scores are q·k; GPT-2 always divides by sqrt(head_dim) in practice
    # (transformers before 5.x ignores scale_attn_weights=False on its default SDPA path), so
    # the queries are exported times sqrt(head_dim): q'·k / sqrt(hd) = q·k in every version.
    q_gain = 1.0 if c.attn_scale else (D // c.n_head) ** 0.5
    for i, block in enumerate(model.blocks):
        p = f"transformer.h.{i}"
        sd |= norm(f"{p}.ln_1", block.ln1) | norm(f"{p}.ln_2", block.ln2)
        qkv = linear(f"{p}.attn.c_attn", block.attn.qkv)  # weight [D, 3D] (q, k, v columns), bias [3D]
        gain = torch.ones(3 * D)
        gain[:D] = q_gain
        sd |= {k: v * gain for k, v in qkv.items()} | linear(f"{p}.attn.c_proj", block.attn.out_proj)
        sd |= linear(f"{p}.mlp.c_fc", block.mlp.fc) | linear(f"{p}.mlp.c_proj", block.mlp.proj)
    sd |= norm("transformer.ln_f", model.ln_f)
    return {k: v.detach().float().cpu().contiguous() for k, v in sd.items()}


def special_tokens(tokenizer: Tokenizer | None) -> dict[str, str]:
    """The special tokens a loader (transformers, inseq) reads from tokenizer_config.json: the
    end-of-text token as eos and bos (GPT-2's convention), the unknown token, a padding token.
    A tokenizer without an end-of-text token (a character tokenizer has only <unk>) gets its
    unknown token in those roles: a declared token that is in the vocabulary, never a new id."""
    if tokenizer is None:
        return {}
    spec = json.loads(tokenizer.to_str())
    unk = (spec.get("model") or {}).get("unk_token")
    unk = unk if unk is not None and tokenizer.token_to_id(unk) is not None else None
    eos = next((t for t in EOS_CANDIDATES if tokenizer.token_to_id(t) is not None), None)
    pad = "<pad>" if tokenizer.token_to_id("<pad>") is not None else None
    first = eos or unk
    out = {"unk_token": unk or first, "eos_token": first, "bos_token": first, "pad_token": pad or first}
    return {k: v for k, v in out.items() if v is not None}


def export_hf_gpt2(model: nn.Module, config: GPTConfig, out_dir: str | Path, tokenizer: Tokenizer | None = None) -> Path:
    """Write ``model`` as a transformers GPT2LMHeadModel into ``out_dir`` (config.json +
    model.safetensors; tokenizer.json + tokenizer_config.json when a tokenizers.Tokenizer is
    given). Returns out_dir. Load with ``GPT2LMHeadModel.from_pretrained(out_dir)``."""
    if not isinstance(model, GPT) or not isinstance(config, GPTConfig):
        raise ConfigError("Only GPT models can be exported to GPT-2 format.")
    check_gpt2_compatible(config)
    try:  # function-level: transformers is optional (an extra) and takes ~3 s to import
        from transformers import GPT2LMHeadModel
    except ImportError as exc:  # pragma: no cover - transformers comes with the test and bench extras
        raise PlaygroundError("Exporting needs the `transformers` package: pip install transformers.") from exc

    specials = special_tokens(tokenizer)
    ids = {role: tokenizer.token_to_id(token) for role, token in specials.items()} if tokenizer is not None else {}
    hf = GPT2LMHeadModel(_hf_config(config, ids))
    missing, unexpected = hf.load_state_dict(gpt2_state_dict(model), strict=False)
    missing = [k for k in missing if not k.endswith((".attn.bias", ".attn.masked_bias"))]
    if missing or unexpected:  # a transformers version with other names
        raise PlaygroundError(f"GPT-2 export does not match this transformers version (missing {missing[:3]}, "
                              f"unexpected {unexpected[:3]}); report this with the transformers version.")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    hf.save_pretrained(out)
    if tokenizer is not None:
        (out / "tokenizer.json").write_text(tokenizer.to_str(), encoding="utf-8")
        tok_config: dict[str, Any] = {"tokenizer_class": "PreTrainedTokenizerFast",
                                      "model_max_length": config.block_size}
        tok_config |= specials
        (out / "tokenizer_config.json").write_text(json.dumps(tok_config, indent=2), encoding="utf-8")
    return out
