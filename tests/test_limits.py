"""Caps on every size a user can type: refused just over, accepted at the cap, before any allocation."""
from __future__ import annotations

import dataclasses
import time

import pytest

from playground import limits
from playground.analysis.experiments.runner import ExperimentOptions
from playground.errors import ConfigError, TooBigError
from playground.generation.api import GenerateRequest, check_request_sizes
from playground.models.gpt import GPTConfig
from playground.families import build_model
from playground.models.rnn_seq2seq import RNNSeq2SeqConfig
from playground.models.transformer_seq2seq import TransformerSeq2SeqConfig
from playground.models.vit import ViTConfig
from playground.settings import DEMO_CAPS, FULL_CAPS
from playground.training.config import TrainConfig
from playground.training.spec import resolve_run

CONFIGS = [
    ("gpt", GPTConfig()),
    ("gpt", GPTConfig(pos_encoding="rope", ffn="swiglu", norm="rmsnorm", bias=False, d_ff=100)),
    ("gpt", GPTConfig(norm_placement="post", pos_encoding="sinusoidal", vocab_size=65)),
    ("gpt", GPTConfig(tie_embeddings=False, qk_norm=True, ffn="relu2", vocab_size=65)),  # its own lm_head
    ("vit", ViTConfig()),
    ("vit", ViTConfig(pool="mean", pos_encoding="none", bias=False, image_size=8, patch_size=2, channels=1)),
    ("rnn_seq2seq", RNNSeq2SeqConfig()),
    ("rnn_seq2seq", RNNSeq2SeqConfig(cell="lstm", attention="general", n_layers=2, bidirectional=False)),
    ("rnn_seq2seq", RNNSeq2SeqConfig(attention="additive", attn_dim=33, n_layers=3)),
    ("rnn_seq2seq", RNNSeq2SeqConfig(attention="none")),
    ("transformer_seq2seq", TransformerSeq2SeqConfig()),
    ("transformer_seq2seq", TransformerSeq2SeqConfig(share_embeddings=False, pos_encoding="learned",
                                                      norm_placement="pre", ffn="gelu")),
]


@pytest.mark.parametrize("family,config", CONFIGS)
def test_parameter_estimate_matches_the_built_model(family, config) -> None:
    model = build_model(family, config)
    assert limits.count_parameters(family, config) == sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("preset", ["nanogpt-cpu-tiny", "nanogpt-shakespeare-char", "vit-digits",
                                    "seq2seq-dates-bahdanau", "seq2seq-dates-luong-general",
                                    "seq2seq-dates-transformer", "seq2seq-toytranslation-noattn"])
def test_parameter_estimate_matches_every_preset(preset) -> None:
    from playground.families import get_family

    spec = resolve_run(preset)
    values = dict(spec.preset.model)
    if spec.family == "vit":
        values.update(image_size=8, channels=1, n_classes=10)
    else:
        values["vocab_size"] = 70
    config = get_family(spec.family).config_cls(**values)
    model = build_model(spec.family, config)
    assert limits.count_parameters(spec.family, config) == sum(p.numel() for p in model.parameters())
    limits.check_model_size(spec.family, config, dataclasses.replace(spec.train, max_steps=1000), DEMO_CAPS,
                            seq_len=40)  # the shipped presets fit a demo server


def test_a_huge_d_model_is_refused_at_once_with_the_numbers_and_a_suggestion() -> None:
    start = time.perf_counter()
    with pytest.raises(TooBigError) as err:
        limits.check_model_size("gpt", GPTConfig(d_model=1_000_000), TrainConfig(), FULL_CAPS)
    assert time.perf_counter() - start < 1.0
    message = str(err.value)
    assert "d_model 1,000,000" in message and "300,000,000 parameters" in message and "d_model ≤" in message


def test_parameter_cap_refuses_just_over_and_accepts_at_the_cap() -> None:
    config = GPTConfig(d_model=64, n_head=4, n_layer=2, block_size=16)
    n = limits.count_parameters("gpt", config)
    roomy = dataclasses.replace(DEMO_CAPS, max_params=n, max_train_memory_gb=100.0)
    assert limits.check_model_size("gpt", config, TrainConfig(batch_size=1), roomy) == n
    with pytest.raises(TooBigError, match=f"up to {n - 1:,} parameters"):
        limits.check_model_size("gpt", config, TrainConfig(batch_size=1), dataclasses.replace(roomy, max_params=n - 1))


def test_memory_cap_suggests_a_batch_that_fits() -> None:
    config = GPTConfig(d_model=128, block_size=256)
    with pytest.raises(TooBigError, match="train.batch_size ≤") as err:
        limits.check_model_size("gpt", config, TrainConfig(batch_size=10_000_000), FULL_CAPS)
    best = int(str(err.value).split("train.batch_size ≤ ")[1].split()[0].replace(",", ""))
    limits.check_model_size("gpt", config, TrainConfig(batch_size=best), FULL_CAPS)
    with pytest.raises(TooBigError):
        limits.check_model_size("gpt", config, TrainConfig(batch_size=best + 1), FULL_CAPS)


@pytest.mark.parametrize("caps", [FULL_CAPS, DEMO_CAPS])
@pytest.mark.parametrize("key,field", [("max_steps", "max_train_steps"), ("batch_size", "max_batch_size"),
                                       ("grad_accum", "max_grad_accum"), ("eval_iters", "max_eval_batches")])
def test_train_caps(caps, key, field) -> None:
    limit = int(limits.cap(caps, field))
    base = {"max_steps": 100, "warmup_steps": 10}
    limits.check_train_config(TrainConfig(**{**base, key: limit}), caps)
    with pytest.raises(TooBigError, match=f"train.{key} {limit + 1:,} is above this server's limit of {limit:,}"):
        limits.check_train_config(TrainConfig(**{**base, key: limit + 1}), caps)


def test_resolve_run_refuses_a_billion_steps_and_a_huge_model_before_loading_data() -> None:
    with pytest.raises(TooBigError, match="train.max_steps 1,000,000,000"):
        resolve_run("nanogpt-cpu-tiny", ["train.max_steps=1000000000"])
    with pytest.raises(TooBigError, match="train.batch_size 10,000,000"):
        resolve_run("nanogpt-cpu-tiny", ["train.batch_size=10000000"])
    with pytest.raises(TooBigError, match="d_model 1,000,000"):
        resolve_run("nanogpt-cpu-tiny", ["model.d_model=1000000"])
    with pytest.raises(TooBigError, match="model.block_size"):
        resolve_run("nanogpt-cpu-tiny", [f"model.block_size={FULL_CAPS.max_seq_len + 1}"])
    with pytest.raises(TooBigError, match="data.n"):
        resolve_run("seq2seq-dates-bahdanau", [f"data.n={FULL_CAPS.max_examples + 1}"])
    with pytest.raises(TooBigError, match="data.image_size"):
        resolve_run("vit-shapes", [f"data.image_size={FULL_CAPS.max_image_size + 1}"])


@pytest.mark.parametrize("value,ok", [(0, True), (2**63 - 1, True), (2**63, False), (-1, False), (10**30, False)])
def test_seeds(value, ok) -> None:
    if ok:
        assert limits.check_seed(value) == value
        import torch

        torch.Generator().manual_seed(value)
    else:
        with pytest.raises(ConfigError, match="between 0 and"):
            limits.check_seed(value)


@pytest.mark.parametrize("caps", [FULL_CAPS, DEMO_CAPS])
@pytest.mark.parametrize("key,field", [("n", "max_analysis_examples"), ("n_perm", "max_permutations"),
                                       ("k", "max_adversaries"), ("steps", "max_adversarial_steps")])
def test_experiment_caps(caps, key, field) -> None:
    limit = int(limits.cap(caps, field))
    limits.check_experiment_options(ExperimentOptions(**{key: limit}), caps)
    with pytest.raises(TooBigError, match=f"{limit + 1:,}"):
        limits.check_experiment_options(ExperimentOptions(**{key: limit + 1}), caps)


def test_experiment_refuses_a_billion_permutations_before_drawing_examples() -> None:
    from playground.analysis.experiments.runner import iter_experiment

    with pytest.raises(TooBigError, match="n_perm"):
        next(iter_experiment("permutation", object(), ExperimentOptions(n_perm=10**9)))


def test_generation_sizes() -> None:
    limit = int(limits.cap(FULL_CAPS, "max_prompt_chars"))
    check_request_sizes(GenerateRequest(prompt="x" * limit))
    with pytest.raises(TooBigError, match="The prompt has"):
        check_request_sizes(GenerateRequest(prompt="x" * (limit + 1)))
    with pytest.raises(TooBigError, match="Max new tokens"):
        check_request_sizes(GenerateRequest(max_new_tokens=10**9))
    with pytest.raises(ConfigError, match="seed"):
        check_request_sizes(GenerateRequest(seed=2**64))


def test_out_of_memory_becomes_a_too_big_error() -> None:
    with pytest.raises(TooBigError, match="too big for this server"):
        with limits.too_big_on_oom("This model", "lower d_model"):
            raise MemoryError()
    with pytest.raises(RuntimeError, match="other"):
        with limits.too_big_on_oom("This model", "lower d_model"):
            raise RuntimeError("other")
