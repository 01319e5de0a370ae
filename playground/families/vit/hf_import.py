"""ViTForImageClassification -> our ViT.

HF's ViT is ours with a CLS token, a learned position table ([1, N+1, D] there, [N+1, D] here),
pre-LN LayerNorm (eps 1e-12), exact GELU and a head on the final CLS state; query / key / value
are fused into ``qkv``. Its image processor's mean 0.5 / std 0.5 is ``input_norm="center"``
(images in [0, 1]); other processors' statistics are refused rather than silently ignored.
"""
from __future__ import annotations

from typing import Any, Literal

from playground.families.hf_weights import HFConverter, Map, fused, need, refuse, same
from playground.models.vit import ViTConfig

FFN = Literal["gelu", "gelu_exact", "relu", "relu2", "swiglu"]
ACTIVATIONS: dict[str, FFN] = {"gelu": "gelu_exact", "gelu_new": "gelu", "gelu_pytorch_tanh": "gelu", "relu": "relu"}


def vit_config(hf: dict[str, Any], specials: dict[str, int]) -> ViTConfig:
    """Our ViTConfig from a ViT config.json; ConfigError naming what does not map."""
    problems: list[str] = []
    act = hf.get("hidden_act", "gelu")
    if act not in ACTIVATIONS:
        problems.append(f"hidden_act={act!r} (the playground's ViT has {sorted(ACTIVATIONS)})")
    need(hf, problems, "qkv_bias", True, "query, key and value have biases like every other Linear")
    input_norm = _input_norm(hf.get("_preprocessor") or {}, problems)
    labels = _labels(hf)
    if labels is None or len(labels) < 2:
        problems.append("id2label has fewer than 2 classes (an image classifier needs its class names)")
    refuse("ViT", problems)
    return ViTConfig(image_size=hf.get("image_size", 224), patch_size=hf.get("patch_size", 16),
                     channels=hf.get("num_channels", 3), n_classes=len(labels or []) or 2,
                     d_model=hf.get("hidden_size", 768), n_layer=hf.get("num_hidden_layers", 12),
                     n_head=hf.get("num_attention_heads", 12), d_ff=hf.get("intermediate_size", 3072),
                     ffn=ACTIVATIONS.get(act, "gelu_exact"), pool="cls", norm_eps=float(hf.get("layer_norm_eps", 1e-12)),
                     input_norm=input_norm)


def _input_norm(pre: dict[str, Any], problems: list[str]) -> Literal["none", "center"]:
    """Our input_norm from preprocessor_config.json (passed in as ``_preprocessor``; absent: ViT's 0.5 / 0.5)."""
    if pre.get("do_normalize", True) is False:
        return "none"
    mean, std = pre.get("image_mean", [0.5] * 3), pre.get("image_std", [0.5] * 3)
    if list(mean) != [0.5] * len(mean) or list(std) != [0.5] * len(std):
        problems.append(f"image_mean={mean}, image_std={std} (the playground's ViT centres pixels with mean 0.5, std 0.5)")
    return "center"


def _labels(hf: dict[str, Any]) -> list[str] | None:
    id2label = hf.get("id2label") or {}
    return [str(id2label.get(str(i), id2label.get(i, f"LABEL_{i}"))) for i in range(len(id2label))] or None


def vit_weights(c: ViTConfig) -> list[Map]:
    """Our ViT's tensors from ViTForImageClassification's."""
    e = "vit.embeddings"
    maps = [Map("cls_token", (f"{e}.cls_token",)), Map("pos_emb.weight", (f"{e}.position_embeddings",), "unbatch")]
    maps += same("patch_emb.proj", f"{e}.patch_embeddings.projection")
    for i in range(c.n_layer):
        o, t = f"blocks.{i}", f"vit.encoder.layer.{i}"
        a = f"{t}.attention.attention"
        maps += same(f"{o}.ln1", f"{t}.layernorm_before") + fused(f"{o}.attn.qkv", f"{a}.query", f"{a}.key", f"{a}.value")
        maps += same(f"{o}.attn.out_proj", f"{t}.attention.output.dense") + same(f"{o}.ln2", f"{t}.layernorm_after")
        maps += same(f"{o}.mlp.fc", f"{t}.intermediate.dense") + same(f"{o}.mlp.proj", f"{t}.output.dense")
    return maps + same("ln_f", "vit.layernorm") + same("head", "classifier")


VIT_CLASSIFIER = HFConverter("ViTForImageClassification", "vit", vit_config, vit_weights, prefix="vit.",
                             class_names=_labels, needs_tokenizer=False, ignored=("vit.pooler",))
