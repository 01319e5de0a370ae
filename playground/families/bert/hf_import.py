"""BERT and DistilBERT checkpoints (masked LM, sequence classification) -> our BERT families.

Real BERT is post-LN with a norm on the embeddings, exact GELU, LayerNorm eps 1e-12 and
token-type (segment) embeddings; its classifier reads [CLS] through a pooler (dense + tanh).
DistilBERT is the same without token types, with a pre-classifier (dense + ReLU) instead. Our
:class:`~playground.models.bert.BertConfig` expresses all of it (``norm_placement="post"``,
``emb_norm``, ``norm_eps``, ``segments``, ``pooler``); query / key / value are fused into ``qkv``.
The special ids ([PAD] [CLS] [SEP] [MASK]) come from the tokenizer.
"""
from __future__ import annotations

from typing import Any

from playground.families.bert.tokens import special_ids
from playground.families.hf_weights import HFConverter, Map, fused, need, refuse, same
from playground.models.bert import BertClassifierConfig, BertConfig

ACTIVATIONS = {"gelu": "gelu_exact", "gelu_new": "gelu", "gelu_pytorch_tanh": "gelu", "relu": "relu"}
IGNORED = ("position_ids", "token_type_ids", "cls.seq_relationship", "decoder.weight", "vocab_projector.weight")


def _labels(hf: dict[str, Any]) -> list[str] | None:
    id2label = hf.get("id2label") or {}
    return [str(id2label.get(str(i), id2label.get(i, f"LABEL_{i}"))) for i in range(len(id2label))] or None


def _common(hf: dict[str, Any], problems: list[str], act_key: str, mlm: bool) -> str:
    act = hf.get(act_key, "gelu")
    if act not in ACTIVATIONS:
        problems.append(f"{act_key}={act!r} (the playground's BERT has {sorted(ACTIVATIONS)})")
    elif mlm and act != "gelu":
        problems.append(f"{act_key}={act!r} (the masked-LM head's transform is exact GELU)")
    return ACTIVATIONS.get(act, "gelu_exact")


def _classes(hf: dict[str, Any], problems: list[str]) -> int:
    n = int(hf.get("num_labels") or len(hf.get("id2label") or {}) or 2)
    if n < 2:
        problems.append(f"num_labels={n} (a classifier needs two classes or more; regression is not supported)")
    if hf.get("problem_type") == "regression":
        problems.append("problem_type='regression' (a regression head has no classes)")
    return n


def bert_config(hf: dict[str, Any], specials: dict[str, int], classifier: bool = False) -> BertConfig:
    """Our BertConfig (or BertClassifierConfig) from a BERT config.json."""
    problems: list[str] = []
    ffn = _common(hf, problems, "hidden_act", mlm=not classifier)
    need(hf, problems, "position_embedding_type", "absolute", "positions are a learned table")
    need(hf, problems, "type_vocab_size", 2, "two segments, sentence A and B")
    need(hf, problems, "is_decoder", False, "an encoder, not a decoder")
    need(hf, problems, "add_cross_attention", False, "no cross-attention")
    n_classes = _classes(hf, problems) if classifier else 0
    refuse("BERT", problems)
    shape = dict(vocab_size=hf.get("vocab_size", 30522), d_model=hf.get("hidden_size", 768),
                 n_layer=hf.get("num_hidden_layers", 12), n_head=hf.get("num_attention_heads", 12),
                 d_ff=hf.get("intermediate_size", 3072), block_size=hf.get("max_position_embeddings", 512),
                 segments=True, ffn=ffn, dropout=0.0, norm_placement="post", norm_eps=float(hf.get("layer_norm_eps", 1e-12)),
                 emb_norm=True, **specials)
    return BertClassifierConfig(**shape, n_classes=n_classes, pooler="tanh") if classifier else BertConfig(**shape)


def distilbert_config(hf: dict[str, Any], specials: dict[str, int], classifier: bool = False) -> BertConfig:
    """Our BertConfig (or BertClassifierConfig) from a DistilBERT config.json."""
    problems: list[str] = []
    ffn = _common(hf, problems, "activation", mlm=not classifier)
    n_classes = _classes(hf, problems) if classifier else 0
    refuse("DistilBERT", problems)
    shape = dict(vocab_size=hf.get("vocab_size", 30522), d_model=hf.get("dim", 768), n_layer=hf.get("n_layers", 6),
                 n_head=hf.get("n_heads", 12), d_ff=hf.get("hidden_dim", 3072),
                 block_size=hf.get("max_position_embeddings", 512), segments=False, ffn=ffn, dropout=0.0,
                 norm_placement="post", norm_eps=1e-12, emb_norm=True, **specials)
    return BertClassifierConfig(**shape, n_classes=n_classes, pooler="relu") if classifier else BertConfig(**shape)


def bert_encoder(c: BertConfig) -> list[Map]:
    e = "bert.embeddings"
    maps = (same("encoder.tok_emb", f"{e}.word_embeddings", ("weight",))
            + same("encoder.pos_emb", f"{e}.position_embeddings", ("weight",))
            + same("encoder.seg_emb", f"{e}.token_type_embeddings", ("weight",)) + same("encoder.emb_norm", f"{e}.LayerNorm"))
    for i in range(c.n_layer):
        o, t = f"encoder.blocks.{i}", f"bert.encoder.layer.{i}"
        a = f"{t}.attention.self"
        maps += fused(f"{o}.attn.qkv", f"{a}.query", f"{a}.key", f"{a}.value")
        maps += same(f"{o}.attn.out_proj", f"{t}.attention.output.dense") + same(f"{o}.ln1", f"{t}.attention.output.LayerNorm")
        maps += same(f"{o}.mlp.fc", f"{t}.intermediate.dense") + same(f"{o}.mlp.proj", f"{t}.output.dense")
        maps += same(f"{o}.ln2", f"{t}.output.LayerNorm")
    return maps


def distilbert_encoder(c: BertConfig) -> list[Map]:
    e = "distilbert.embeddings"
    maps = (same("encoder.tok_emb", f"{e}.word_embeddings", ("weight",))
            + same("encoder.pos_emb", f"{e}.position_embeddings", ("weight",)) + same("encoder.emb_norm", f"{e}.LayerNorm"))
    for i in range(c.n_layer):
        o, t = f"encoder.blocks.{i}", f"distilbert.transformer.layer.{i}"
        a = f"{t}.attention"
        maps += fused(f"{o}.attn.qkv", f"{a}.q_lin", f"{a}.k_lin", f"{a}.v_lin") + same(f"{o}.attn.out_proj", f"{a}.out_lin")
        maps += same(f"{o}.ln1", f"{t}.sa_layer_norm") + same(f"{o}.mlp.fc", f"{t}.ffn.lin1")
        maps += same(f"{o}.mlp.proj", f"{t}.ffn.lin2") + same(f"{o}.ln2", f"{t}.output_layer_norm")
    return maps


def bert_mlm(c: BertConfig) -> list[Map]:
    p = "cls.predictions"
    return (bert_encoder(c) + same("mlm_head.dense", f"{p}.transform.dense") + same("mlm_head.norm", f"{p}.transform.LayerNorm")
            + [Map("mlm_head.decoder.bias", (f"{p}.bias",))])


def bert_classifier(c: BertConfig) -> list[Map]:
    return bert_encoder(c) + same("pooler", "bert.pooler.dense") + same("head", "classifier")


def distilbert_mlm(c: BertConfig) -> list[Map]:
    return (distilbert_encoder(c) + same("mlm_head.dense", "vocab_transform") + same("mlm_head.norm", "vocab_layer_norm")
            + [Map("mlm_head.decoder.bias", ("vocab_projector.bias",))])


def distilbert_classifier(c: BertConfig) -> list[Map]:
    return distilbert_encoder(c) + same("pooler", "pre_classifier") + same("head", "classifier")


TIED = {"mlm_head.decoder.weight": "encoder.tok_emb.weight"}

BERT_MLM = HFConverter("BertForMaskedLM", "bert_mlm", bert_config, bert_mlm, tied=TIED,
                       ignored=(*IGNORED, "bert.pooler", "cls.predictions.decoder.bias"), prefix="bert.",
                       specials=special_ids)
BERT_CLASSIFIER = HFConverter("BertForSequenceClassification", "bert_classifier",
                              lambda hf, sp: bert_config(hf, sp, classifier=True), bert_classifier,
                              ignored=IGNORED, prefix="bert.", class_names=_labels, specials=special_ids)
DISTILBERT_MLM = HFConverter("DistilBertForMaskedLM", "bert_mlm", distilbert_config, distilbert_mlm, tied=TIED,
                             ignored=IGNORED, prefix="distilbert.", specials=special_ids)
DISTILBERT_CLASSIFIER = HFConverter("DistilBertForSequenceClassification", "bert_classifier",
                                    lambda hf, sp: distilbert_config(hf, sp, classifier=True), distilbert_classifier,
                                    ignored=IGNORED, prefix="distilbert.", class_names=_labels, specials=special_ids)
CONVERTERS = (BERT_MLM, BERT_CLASSIFIER, DISTILBERT_MLM, DISTILBERT_CLASSIFIER)
