"""The block-parts lesson: every count pinned to a real torch module or a hand-checked value."""
from __future__ import annotations

import json
from collections import Counter

import pytest
import torch
from safetensors.torch import load_file

from playground.families import build_model, get_family
from playground.lessons import LessonInputError
from playground.lessons.block_parts import (
    CHECKPOINT,
    CUSTOM,
    LESSON,
    SOURCES,
    block_table,
    resolve,
)
from playground.lessons.block_probes import attention_cost, norm_placement_probe
from playground.models.layers import EncoderBlock
from playground.settings import SHIPPED_LIBRARY

FAST = {"max_length": "256", "depth": 4}


def _numel(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())  # tied weights once


def _resolve(source: str, vocab: int = 100):
    return resolve(source, vocab=vocab, d_model=64, n_head=4, n_layer=2, d_ff_=0, block_size=32, bias=True,
                   ffn_kind="gelu", placement="pre")


def test_the_notes_encoder_block_is_3150336_parameters_as_a_torch_module():
    block = EncoderBlock(512, 8, 2048, ffn="relu", norm_placement="post", bias=True, attn_bias=False)
    assert _numel(block) == 3_150_336
    view = LESSON.run(FAST, preset="The notes' encoder block (Vaswani base)")
    assert view.numbers["block_parameters_without_attention_biases"] == 3_150_336
    assert view.numbers["block_parameters"] == _numel(EncoderBlock(512, 8, 2048, ffn="relu", bias=True))
    assert round(view.numbers["block_ffn_share"], 4) == round(2_099_712 / 3_152_384, 4)
    assert any("18,902,016" in note for note in view.notes)  # six blocks, the notes' ≈18.9M


def test_block_table_rows_match_the_module_tensors():
    _, config, _ = resolve(CUSTOM, vocab=10, d_model=512, n_head=8, n_layer=1, d_ff_=2048, block_size=8, bias=True,
                           ffn_kind="relu", placement="post")
    rows = dict(zip(block_table(config)["piece"], block_table(config)["parameters"]))
    block = EncoderBlock(512, 8, 2048, ffn="relu", bias=True)
    assert rows["W_Q, W_K, W_V"] == block.attn.qkv.weight.numel() == 786_432
    assert rows["W_O"] == block.attn.out_proj.weight.numel() == 262_144
    assert rows["attention biases"] == block.attn.qkv.bias.numel() + block.attn.out_proj.bias.numel() == 2048
    assert rows["FFN weights"] == block.mlp.fc.weight.numel() + block.mlp.proj.weight.numel()
    assert rows["FFN biases"] == block.mlp.fc.bias.numel() + block.mlp.proj.bias.numel() == 2560
    assert rows["two norms"] == _numel(block.ln1) + _numel(block.ln2) == 2048


@pytest.mark.parametrize("source", [s for s in SOURCES if s != CUSTOM])
def test_every_preset_and_checkpoint_part_split_sums_to_the_built_model(source):
    family, config, _ = _resolve(source)
    parts = get_family(family).sizes.parameter_parts(config)
    assert sum(parts.values()) == get_family(family).sizes.count_parameters(config) == _numel(build_model(family, config))


def _groups(model: torch.nn.Module) -> Counter:
    """Parameters per part, grouped by the module names the families use."""
    names = {"tok_emb": "token embedding", "src_emb": "token embedding", "tgt_emb": "token embedding",
             "lm_head": "output head", "pos_emb": "positions", "attn": "attention", "self_attn": "attention",
             "cross_attn": "attention", "mlp": "feed-forward", "ln1": "norms", "ln2": "norms", "ln3": "norms",
             "ln_f": "norms", "norm": "norms"}
    out: Counter = Counter()
    for name, p in model.named_parameters():  # tied weights appear once
        part = next((names[piece] for piece in name.split(".") if piece in names), "other")
        out[part] += p.numel()
    return out


@pytest.mark.parametrize("bias,tie", [(True, True), (False, False)])
def test_gpt_parts_match_the_module_names(bias, tie):
    family = get_family("gpt")
    config = family.config_cls(vocab_size=50, block_size=16, n_layer=3, n_head=2, d_model=32, bias=bias,
                               tie_embeddings=tie)
    parts = {k: v for k, v in family.sizes.parameter_parts(config).items() if v}
    assert parts == dict(_groups(family.build(config)))


def test_seq2seq_transformer_parts_count_cross_attention():
    _, config, _ = _resolve("seq2seq-toytranslation-transformer")
    parts = {k: v for k, v in get_family("transformer_seq2seq").sizes.parameter_parts(config).items() if v}
    assert parts == dict(_groups(build_model("transformer_seq2seq", config)))
    assert parts["attention"] == (2 + 2 * 2) * (4 * 128 * 128 + 4 * 128)  # 2 encoder + 2 decoder (self + cross)


def test_gpt2_small_parameters_and_flops():
    view = LESSON.run(FAST, preset="GPT-2 small (124M)")
    assert view.numbers["parameters"] == 124_439_808  # Hugging Face's gpt2, tied head
    n_matmul = 124_439_808 - 1024 * 768  # the learned positions are a lookup
    assert view.numbers["flops_terms"] == {"weights": 6 * n_matmul, "attention scores": 12 * 12 * 768 * 1024}
    assert view.numbers["train_flops_per_token"] == 855_166_464
    assert view.numbers["forward_flops_per_token"] == 855_166_464 // 3


def test_gpt3_is_about_175_billion():
    view = LESSON.run(FAST, preset="GPT-3 (175B)")
    assert view.numbers["parameters"] == 174_604_259_328  # 12·L·d² + (V + T)·d + biases and norms
    d, L = 12288, 96
    assert view.numbers["parts"]["attention"] == L * (4 * d * d + 4 * d)
    assert view.numbers["parts"]["feed-forward"] == L * (8 * d * d + 5 * d)


def test_shipped_checkpoint_matches_its_weights():
    name = "gpt-python-docs-char"
    view = LESSON.run(FAST, preset="The shipped char GPT")
    tensors = load_file(str(SHIPPED_LIBRARY / "models" / name / "model.safetensors"))
    config = json.loads((SHIPPED_LIBRARY / "models" / name / "config.json").read_text())["model"]
    stored = sum(t.numel() for t in tensors.values())  # a tied head is saved once, under one of its two names
    if config.get("tie_embeddings", True) and {"tok_emb.weight", "lm_head.weight"} <= set(tensors):
        stored -= tensors["lm_head.weight"].numel()
    assert view.numbers["parameters"] == stored
    assert CHECKPOINT + name in SOURCES


def test_memory_wall_numbers_by_hand():
    view = LESSON.run(FAST)
    assert view.numbers["memory_wall_bytes"] == 12 * 8 * 4096 * 4096 * 4 == 6_442_450_944
    assert view.numbers["memory_wall_batch_bytes"] == 32 * 6_442_450_944 == 206_158_430_208


def test_attention_cost_probe():
    cost = attention_cost([128, 256])
    assert list(cost["score_matrix_bytes"]) == [4 * 128 * 128 * 4, 4 * 256 * 256 * 4]  # B=1, h=4, fp32
    # the explicit path holds the scores and the weights (two T×T tensors at least); the fused one neither
    assert (cost["explicit_bytes"] >= 2 * cost["score_matrix_bytes"]).all()
    assert (cost["fused_bytes"] < cost["score_matrix_bytes"]).all()
    assert (cost["fused_bytes"] >= 4 * cost["T"] * 64 * 4).all()  # at least its output [1,4,T,64]
    assert (cost["max_abs_diff"] < 1e-5).all() and (cost[["explicit_ms", "fused_ms"]] > 0).all().all()


def test_norm_placement_probe():
    probe = norm_placement_probe(8, "xavier")
    pre, post = (probe[probe["placement"] == p] for p in ("pre-LN", "post-LN"))
    # post-LN ends each block with a fresh LayerNorm (weight 1, bias 0): RMS sqrt(var / (var + eps)) ≈ 1
    assert post["activation_rms"].between(0.99, 1.0 + 1e-6).all()
    assert pre["activation_rms"].is_monotonic_increasing and pre["activation_rms"].iloc[-1] > 2
    assert (probe["grad_norm"] > 0).all()
    assert probe.equals(norm_placement_probe(8, "xavier"))  # seeded: a rerun repeats


def test_caps_and_bad_shapes_are_refused():
    with pytest.raises(LessonInputError, match="choose one of"):
        LESSON.run({"max_length": "4096"})
    with pytest.raises(LessonInputError, match="at most 48"):
        LESSON.run({"depth": 49})
    with pytest.raises(LessonInputError, match="at most"):
        LESSON.run({"vocab": 10**7})
    with pytest.raises(LessonInputError, match="n_head|head"):
        LESSON.run({**FAST, "d_model": 100, "n_head": 3})
    with pytest.raises(LessonInputError):
        LESSON.run({"source": "../../etc/passwd"})


def test_view_has_every_chart_and_table_it_promises():
    view = LESSON.run(FAST, preset="The CPU tiny GPT preset")
    assert view.numbers["parameters"] == get_family("gpt").sizes.count_parameters(_resolve("nanogpt-cpu-tiny", 65)[1])
    assert len(view.charts) <= LESSON.max_charts and len(view.tables) <= LESSON.max_tables
    for chart in view.charts:
        chart.to_dict()


@pytest.mark.parametrize("source", [CHECKPOINT + "vit-digits", "seq2seq-toytranslation-transformer"])
def test_families_without_a_flops_estimate_still_show_their_parts(source):
    view = LESSON.run({**FAST, "source": source, "vocab": 100})
    family, config, _ = _resolve(source)
    assert view.numbers["parameters"] == _numel(build_model(family, config))
    assert "train_flops_per_token" not in view.numbers
    assert any("no FLOPs estimate" in note for note in view.notes)


def _torch_encoder_decoder(vocab: int, shared: str) -> int:
    """The paper's base model built from torch.nn's own layers (post-LN, ReLU, no final norms) with
    `shared` = "all" (one embedding for source, target, output), "target" (output tied to target) or "none"."""
    enc = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(512, 8, 2048), 6, enable_nested_tensor=False)
    dec = torch.nn.TransformerDecoder(torch.nn.TransformerDecoderLayer(512, 8, 2048), 6)
    src = torch.nn.Embedding(vocab, 512)
    tgt = src if shared == "all" else torch.nn.Embedding(vocab, 512)
    out = torch.nn.Linear(512, vocab, bias=False)
    if shared != "none":
        out.weight = tgt.weight
    return _numel(torch.nn.ModuleList([enc, dec, src, tgt, out]))


def test_vaswani_base_is_the_papers_encoder_decoder_counted_by_torch_nn():
    view = LESSON.run(FAST, preset="The notes' encoder block (Vaswani base)")
    assert view.numbers["family"] == "transformer_seq2seq"
    variants = view.numbers["embedding_variants"]
    assert view.numbers["parameters"] == variants["shared"] == _torch_encoder_decoder(37000, "all") == 63_082_496
    assert variants["separate_source"] == _torch_encoder_decoder(37000, "target")
    assert variants["none_shared"] == _torch_encoder_decoder(37000, "none")
    assert any("63,082,496 parameters in all" in note for note in view.notes)
    assert any("65M" in note for note in view.notes)
    assert not any("38,120,448" in note for note in view.notes)  # the decoder-only count it used to show
