"""The block's parts: where a transformer's parameters and FLOPs go (from the families' own size
code), one block itemised, pre- vs post-LN at initialisation, and attention's cost against length."""
from __future__ import annotations

import dataclasses
import json
from typing import Any

import pandas as pd

from playground.charts.lessons_models import (
    attention_cost_chart,
    flops_context_chart,
    norm_placement_chart,
    parts_chart,
)
from playground.config import list_presets, load_preset
from playground.errors import PlaygroundError
from playground.families import get_family
from playground.families.layer_sizes import attention, ffn, norm
from playground.families.layer_sizes import d_ff as d_ff_of
from playground.lessons.base import Lesson, LessonInputError, LessonView, Param
from playground.lessons.block_probes import (
    COST_BATCH,
    COST_HEAD_DIM,
    COST_HEADS,
    attention_cost,
    norm_placement_probe,
    score_matrix_bytes,
)
from playground.limits import ModelSizes
from playground.models.base import ModelConfig
from playground.settings import SHIPPED_LIBRARY
from playground.training.config import build_model_config

CUSTOM = "custom shape (GPT)"
CUSTOM_ED = "custom shape (encoder–decoder)"
CHECKPOINT = "checkpoint: "
TRANSFORMERS = ("gpt", "transformer_seq2seq", "vit")
LENGTHS = (128, 256, 512, 1024, 2048)  # attention-cost probe; the largest explicit call allocates ~200 MB
NOTES_BLOCK = 3_150_336  # the notes' one encoder block (d 512, 8 heads, d_ff 2048, no attention biases)
WALL = {"layers": 12, "heads": 8, "T": 4096, "batch": 32}  # the notes' memory-wall example (fp32)
VASWANI_BASE = {"vocab_size": 37000, "d_model": 512, "n_head": 8, "n_encoder_layers": 6, "n_decoder_layers": 6,
                "d_ff": 2048, "ffn": "relu", "bias": True, "norm_placement": "post", "pos_encoding": "sinusoidal"}
KV_FACTOR = 4  # the KV-cache table decodes 4 x block_size tokens (past it where positions allow)


def _preset_family(name: str) -> str:
    return load_preset(name).family


def _sources() -> tuple[str, ...]:
    """The custom shape, the transformer presets and the shipped transformer checkpoints."""
    presets = [p for p in list_presets() if _preset_family(p) in ("gpt", "transformer_seq2seq")]
    shipped = []
    for config in sorted((SHIPPED_LIBRARY / "models").glob("*/config.json")):
        if json.loads(config.read_text(encoding="utf-8")).get("family") in TRANSFORMERS:
            shipped.append(CHECKPOINT + config.parent.name)
    return (CUSTOM, CUSTOM_ED, *presets, *shipped)


SOURCES = _sources()


def resolve(source: str, *, vocab: int, d_model: int, n_head: int, n_layer: int, d_ff_: int, block_size: int,
            bias: bool, ffn_kind: str, placement: str) -> tuple[str, ModelConfig, str]:
    """(family, model config, what it is) for a source; presets take `vocab` (their tokenizer sets it)."""
    try:
        if source.startswith(CHECKPOINT):
            name = source[len(CHECKPOINT):]
            data = json.loads((SHIPPED_LIBRARY / "models" / name / "config.json").read_text(encoding="utf-8"))
            family = get_family(data["family"])
            return family.name, family.config_cls.from_dict(data["model"]), f"the shipped checkpoint {name}"
        if source == CUSTOM:
            family = get_family("gpt")
            values = {"vocab_size": vocab, "block_size": block_size, "n_layer": n_layer, "n_head": n_head,
                      "d_model": d_model, "d_ff": d_ff_, "bias": bias, "ffn": ffn_kind, "norm_placement": placement}
            return "gpt", family.config_cls(**values), "a custom decoder-only shape (tied embeddings)"
        if source == CUSTOM_ED:
            family = get_family("transformer_seq2seq")
            values = {"vocab_size": vocab, "max_len": block_size, "n_encoder_layers": n_layer,
                      "n_decoder_layers": n_layer, "n_head": n_head, "d_model": d_model, "d_ff": d_ff_, "bias": bias,
                      "ffn": ffn_kind, "norm_placement": placement, "share_embeddings": True}
            what = (f"a custom encoder–decoder ({n_layer} encoder and {n_layer} decoder blocks, cross-attention "
                    "included, one embedding matrix shared by source, target and output)")
            return family.name, family.config_cls(**values), what
        preset = load_preset(source, allow_paths=False)
        family = get_family(preset.family)
        config = build_model_config(family.config_cls, dict(preset.model), {"vocab_size": vocab})
        return family.name, config, f"the preset {source} with a vocabulary of {vocab:,}"
    except PlaygroundError as exc:
        raise LessonInputError(str(exc)) from None


def parts_table(family: str, config: ModelConfig) -> pd.DataFrame:
    """Parameters by part (the family's own split) with each part's share of the total."""
    parts = get_family(family).sizes.parameter_parts(config)
    total = sum(parts.values())
    rows = [{"part": part, "parameters": count, "share": count / total} for part, count in parts.items() if count]
    return pd.DataFrame(rows, columns=["part", "parameters", "share"])


def block_table(config: ModelConfig) -> pd.DataFrame:
    """One encoder-style block (self-attention + FFN + two norms) itemised, from the layer sizes."""
    d, inner = config.d_model, d_ff_of(config)
    attn_weights = attention(d, False)
    ffn_weights = ffn(d, inner, config.ffn, False)
    rows = [
        ("W_Q, W_K, W_V", attn_weights * 3 // 4),
        ("W_O", attn_weights // 4),
        ("attention biases", attention(d, config.bias) - attn_weights),
        ("FFN weights", ffn_weights),
        ("FFN biases", ffn(d, inner, config.ffn, config.bias) - ffn_weights),
        ("two norms", 2 * norm(config.norm, d, config.bias)),
    ]
    return pd.DataFrame([{"piece": piece, "parameters": count} for piece, count in rows])


def embedding_variants(family: str, config: ModelConfig) -> dict[str, int]:
    """An encoder–decoder's parameters with one embedding matrix for source, target and output, with
    a separate source matrix (target tied to the output), and with three separate matrices."""
    sizes = get_family(family).sizes
    shared = sizes.count_parameters(dataclasses.replace(config, share_embeddings=True))
    separate = sizes.count_parameters(dataclasses.replace(config, share_embeddings=False))
    untied_output = config.vocab_size * config.d_model  # the family always ties output to target
    return {"shared": shared, "separate_source": separate, "none_shared": separate + untied_output}


def flops_by_context(sizes: ModelSizes, config: ModelConfig, lengths: list[int]) -> pd.DataFrame:
    """Training FLOPs per token in the family's terms (`sizes.train_flops_parts`), for a context of
    each length."""
    rows = []
    for length in lengths:
        parts = sizes.train_flops_parts(dataclasses.replace(config, block_size=length))
        rows += [{"T": length, "term": term, "flops": value} for term, value in parts.items()]
    return pd.DataFrame(rows)


def compute(source: str, vocab: int, d_model: int, n_head: int, n_layer: int, d_ff: int, block_size: int,
            bias: bool, ffn: str, norm_placement: str, depth: int, init: str, max_length: str) -> LessonView:
    """Parameter and FLOP breakdown of the chosen shape, one block itemised, the pre/post-LN probe and
    the attention-cost probe."""
    family, config, what = resolve(source, vocab=vocab, d_model=d_model, n_head=n_head, n_layer=n_layer,
                                   d_ff_=d_ff, block_size=block_size, bias=bias, ffn_kind=ffn,
                                   placement=norm_placement)
    sizes = get_family(family).sizes
    total = sizes.count_parameters(config)
    parts = parts_table(family, config)
    block = block_table(config)
    block_total = int(block["parameters"].sum())
    block_no_attn_bias = block_total - int(block.loc[block["piece"] == "attention biases", "parameters"].iloc[0])
    ffn_share = (block.loc[block["piece"].str.startswith("FFN"), "parameters"].sum()) / block_total
    numbers: dict[str, Any] = {
        "source": source, "family": family, "parameters": total,
        "parts": {row.part: int(row.parameters) for row in parts.itertuples()},
        "block_parameters": block_total, "block_parameters_without_attention_biases": block_no_attn_bias,
        "block_ffn_share": round(float(ffn_share), 6),
    }
    notes = [(f"Counting {what}: {total:,} parameters in all (the family's own size code, the same the size "
              "limits use).")]
    if getattr(config, "share_embeddings", False):
        embeddings = embedding_variants(family, config)
        numbers["embedding_variants"] = embeddings
        notes.append(f"Each embedding matrix is {config.vocab_size:,} × {config.d_model:,} = "
                     f"{config.vocab_size * config.d_model:,} parameters: {embeddings['shared']:,} in all with one "
                     f"matrix for source, target and output (the paper's choice), {embeddings['separate_source']:,} "
                     f"with its own source matrix, {embeddings['none_shared']:,} with three separate matrices.")
        if dataclasses.asdict(config) | VASWANI_BASE == dataclasses.asdict(config):
            notes.append("This is the paper's base model (Vaswani et al. 2017, EN–DE with a shared vocabulary of "
                         "about 37,000 tokens), which their Table 3 lists as 65M; the count above has no final norms "
                         "(post-LN) and sinusoidal positions, which have no parameters.")
    d = config.d_model
    notes.append(f"One block (d {d}, d_ff {d_ff_of(config):,}): {block_total:,} parameters, "
                 f"{block_no_attn_bias:,} without the attention biases; the FFN holds {ffn_share:.1%}.")
    if block_no_attn_bias == NOTES_BLOCK:
        notes.append(f"The notes count this block as ≈3.15M ({NOTES_BLOCK:,}, no attention biases) and six of them as "
                     f"≈18.9M ({6 * NOTES_BLOCK:,}), the FFN about two thirds: all three agree.")
    charts = [parts_chart(parts, f"Parameters of {source}")]
    tables = {"Parameters by part": parts, "One block, itemised": block}

    flops, terms = sizes.train_flops_per_unit(config), sizes.train_flops_parts(config)
    if flops is not None and terms is not None:
        numbers |= {"train_flops_per_token": flops, "forward_flops_per_token": flops // 3,
                    "flops_terms": terms}
        lengths = sorted({2**i for i in range(4, 16)} | {config.block_size})
        charts.append(flops_context_chart(flops_by_context(sizes, config, lengths), config.block_size))
        notes.append(f"Training FLOPs per token at T = {config.block_size:,}: {flops:,} (6N = {terms['weights']:,} "
                     f"for the weight matrices, 12·L·d·T = {terms['attention scores']:,} for QKᵀ and the weighted "
                     f"sum); a forward pass is a third of it, {flops // 3:,}.")
    else:
        notes.append(f"The {family} family has no FLOPs estimate; the FLOPs chart covers GPT shapes only.")

    probe = norm_placement_probe(depth, init)
    numbers["norm_placement"] = {
        p: {"activation_rms": [round(x, 6) for x in g["activation_rms"]], "grad_norm": [round(x, 6) for x in g["grad_norm"]]}
        for p, g in probe.groupby("placement")}
    charts.append(norm_placement_chart(probe))
    pre, post = (probe[probe["placement"] == p] for p in ("pre-LN", "post-LN"))
    notes.append(f"Measured at initialisation ({init} init, {depth} blocks, d 64): the pre-LN residual stream's RMS goes "
                 f"from {pre['activation_rms'].iloc[0]:.2f} to {pre['activation_rms'].iloc[-1]:.2f} while post-LN "
                 f"holds {post['activation_rms'].iloc[-1]:.2f}; the block gradient norms of the first and last block "
                 f"are {pre['grad_norm'].iloc[0]:.3g} / {pre['grad_norm'].iloc[-1]:.3g} (pre) and "
                 f"{post['grad_norm'].iloc[0]:.3g} / {post['grad_norm'].iloc[-1]:.3g} (post).")

    lengths = [t for t in LENGTHS if t <= int(max_length)]
    cost = attention_cost(lengths)
    numbers["attention_cost"] = cost.round(6).to_dict("records")
    charts.append(attention_cost_chart(cost))
    tables["Attention cost against T"] = cost
    notes.append(f"Attention cost, batch {COST_BATCH}, {COST_HEADS} heads of {COST_HEAD_DIM}: the T×T bytes are "
                 "computed (B·h·T²·4); each path's bytes are what its ops allocated in all, read from the torch "
                 "profiler (a sum, not the peak); times are one call each, measured on one thread of this server's CPU.")

    kv_length = KV_FACTOR * config.block_size if hasattr(config, "block_size") else 0
    kv = sizes.kv_cache_table(config, kv_length) if kv_length else None
    if kv:
        numbers["kv_cache"] = kv  # a note, not a table: the view has three table slots
        full, kept = kv[0], kv[-1]
        saved = "" if kept is full else (f"; this model keeps {kept['bytes']:,} ({kept['cache']}), "
                                          f"{full['bytes'] / kept['bytes']:.0f}x less")
        notes.append(f"Decoding {kv_length:,} tokens ({KV_FACTOR} × block_size, one sequence, fp32), a full multi-head "
                     f"KV cache holds {full['bytes']:,} bytes (2 · layers · T · d · 4){saved}.")

    wall = WALL["layers"] * score_matrix_bytes(1, WALL["heads"], WALL["T"])
    numbers |= {"notes_block": NOTES_BLOCK, "memory_wall_bytes": wall, "memory_wall_batch_bytes": wall * WALL["batch"]}
    notes.append(f"The notes' example: {WALL['layers']} layers × {WALL['heads']} heads of one T×T fp32 matrix at "
                 f"T = {WALL['T']:,} is {wall:,} bytes ({wall / 1e9:.1f} GB, {wall / 2**30:.1f} GiB), "
                 f"{wall * WALL['batch'] / 1e9:.0f} GB for a batch of {WALL['batch']}; their ≈6.4 GB and "
                 "\"over 200 GB\" agree.")
    return LessonView(numbers=numbers, tables=tables, charts=charts, notes=notes)


LESSON = Lesson(
    name="block_parts",
    title="The block's parts",
    short="Block parts",
    text=("A block is one attention sub-layer (four d×d projections) and one feed-forward sub-layer (two d×4d "
          "matrices, so twice the attention's weights), each wrapped in a residual and a norm. Per token, every "
          "weight costs 6 FLOPs to train; only the scores QKᵀ and their weighted sum grow with the context. "
          "Where the norm sits changes how signals and gradients scale with depth."),
    formula=(r"attention $4d^2(+4d)$, FFN $2\,d\,d_{ff}(+d_{ff}+d)$, norms $2\cdot 2d$ per block; "
             r"training FLOPs per token $\approx 6N + 12\,L\,d\,T$; post-LN $y=\mathrm{LN}(x+f(x))$, "
             r"pre-LN $y=x+f(\mathrm{LN}(x))$; one score matrix $B\,h\,T^2\cdot 4$ bytes."),
    see_also=("Train: a preset's `d_model`, `n_layer`, `d_ff`, `norm_placement` and `bias` are these knobs, and the "
              "size limits use the same counts; the run's MFU uses the same FLOPs per token."),
    params=(
        Param("source", "Shape", "choice", CUSTOM, choices=SOURCES,
              help=("A custom decoder-only or encoder–decoder shape (layers = blocks per stack), a transformer "
                    "preset or a shipped transformer checkpoint.")),
        Param("vocab", "Vocabulary size (custom shape and presets)", "int", 50257, minimum=2, maximum=1_000_000, step=1),
        Param("d_model", "d_model", "int", 768, minimum=8, maximum=65536, step=8),
        Param("n_head", "Heads", "int", 12, minimum=1, maximum=512, step=1),
        Param("n_layer", "Layers", "int", 12, minimum=1, maximum=512, step=1),
        Param("d_ff", "FFN width (0 = 4·d_model)", "int", 0, minimum=0, maximum=262144, step=1),
        Param("block_size", "Context T", "int", 1024, minimum=1, maximum=1_048_576, step=1),
        Param("bias", "Biases", "bool", True),
        Param("ffn", "FFN activation", "choice", "gelu", choices=("gelu", "gelu_exact", "relu", "relu2", "swiglu")),
        Param("norm_placement", "Norm placement", "choice", "pre", choices=("pre", "post")),
        Param("depth", "Blocks in the pre/post-LN probe", "int", 24, minimum=2, maximum=48, step=1),
        Param("init", "Probe init", "choice", "xavier", choices=("xavier", "gpt2"),
              help="xavier: unit-scale branches (Xiong et al. 2020's setting); gpt2: the app's own small init."),
        Param("max_length", "Longest T in the attention-cost probe", "choice", "1024",
              choices=tuple(str(t) for t in LENGTHS)),
    ),
    compute=compute,
    presets={
        "GPT-2 small (124M)": {"source": CUSTOM, "vocab": 50257, "d_model": 768, "n_head": 12, "n_layer": 12,
                               "d_ff": 0, "block_size": 1024, "bias": True, "ffn": "gelu", "norm_placement": "pre"},
        "The notes' encoder block (Vaswani base)": {"source": CUSTOM_ED, "vocab": 37000, "d_model": 512, "n_head": 8,
                                                    "n_layer": 6, "d_ff": 2048, "block_size": 512, "bias": True,
                                                    "ffn": "relu", "norm_placement": "post"},
        "GPT-3 (175B)": {"source": CUSTOM, "vocab": 50257, "d_model": 12288, "n_head": 96, "n_layer": 96,
                         "d_ff": 0, "block_size": 2048, "bias": True, "ffn": "gelu", "norm_placement": "pre"},
        "The CPU tiny GPT preset": {"source": "nanogpt-cpu-tiny", "vocab": 65},
        "The shipped char GPT": {"source": CHECKPOINT + "gpt-python-docs-char"},
        "Post-LN with the app's init": {"init": "gpt2", "depth": 24},
    },
    max_charts=4,
    max_tables=3,
)
