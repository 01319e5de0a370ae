"""Presets and training configs: every preset builds its model; errors name the key and choices."""
from __future__ import annotations

import pytest
import torch

from playground.config import list_presets, load_preset, parse_preset
from playground.errors import ConfigError
from playground.families import build_model
from playground.families import get_family
from playground.training.config import TrainConfig, preset_to_toml
from playground.training.spec import resolve_run
from tests.training.conftest import corpus_text

TINY_DATA = {
    "gpt": {"data.tokenizer": "char", "data.max_chars": "0"},
    "vit": {"data.n": "120"},
    "rnn_seq2seq": {"data.n": "120"},
    "transformer_seq2seq": {"data.n": "120"},
    "text_classifier": {"data.n": "120"},
    "imagegpt": {"data.n": "120"},
    "bert_mlm": {"data.max_chars": "20000", "data.n_reviews": "300"},
    "bert_classifier": {"data.n": "120", "data.init_from": ""},  # fine-tuning's pre-trained checkpoint: not here
}

REQUIRED = [
    "nanogpt-cpu-tiny", "nanogpt-shakespeare-char", "nanogpt-bpe", "vit-digits", "vit-shapes",
    *(f"seq2seq-dates-{a}" for a in ("noattn", "bahdanau", "luong-dot", "luong-general", "transformer")),
    *(f"seq2seq-toytranslation-{a}" for a in ("noattn", "bahdanau", "transformer")),
]


def test_required_presets_are_shipped():
    assert set(REQUIRED) <= set(list_presets())


@pytest.mark.parametrize("name", list_presets())
def test_every_preset_parses_and_builds_its_model(name, tmp_path):
    """The preset's own model section builds (tiny data only), and one loss is finite."""
    corpus = tmp_path / "c.txt"
    corpus.write_text(corpus_text(6000), encoding="utf-8")
    preset = load_preset(name)
    overrides = dict(TINY_DATA[preset.family])
    if preset.family == "gpt":
        overrides["data.corpus"] = str(corpus)
    if preset.data.get("dataset") == "shapes":
        overrides["data.n"] = "40"
    spec = resolve_run(preset, overrides)
    assert preset.description, "every preset describes itself"
    adapter = get_family(spec.family).adapter
    prep = adapter.prepare(spec.data, spec.preset.model, None)
    torch.manual_seed(0)
    model = build_model(spec.family, prep.model_config)
    assert model.num_parameters() > 0
    batch = adapter.batch(prep, 0, 0, 0, 2, 2)
    with torch.no_grad():
        loss = adapter.loss(model, batch)
    assert torch.isfinite(loss)


@pytest.mark.parametrize("name", [n for n in list_presets() if load_preset(n).family in ("gpt", "vit", "transformer_seq2seq")])
@pytest.mark.parametrize("override", ["model.pos_encoding=rope", "model.norm_placement=post", "model.ffn=swiglu",
                                      "model.attn_scale=false", "model.norm=rmsnorm"])
def test_transformer_presets_switch_architecture_by_override(name, override):
    from playground.families import get_family
    from playground.training.config import build_model_config

    key, value = override.split("=")
    spec = resolve_run(name, [override])
    derived = {"gpt": {"vocab_size": 50}, "vit": {"image_size": 8 if "digits" in name else 32, "channels": 1,
                                                   "n_classes": 4},
               "transformer_seq2seq": {"vocab_size": 50, "pad_id": 0, "bos_id": 1, "eos_id": 2}}[spec.family]
    cfg = build_model_config(get_family(spec.family).config_cls, spec.preset.model, derived)
    field = key.split(".")[1]
    assert str(getattr(cfg, field)).lower() == value


def test_unknown_key_names_the_key_and_valid_keys():
    with pytest.raises(ConfigError) as err:
        resolve_run("nanogpt-cpu-tiny", ["train.learning_rate=1e-3"])
    msg = str(err.value)
    assert "train.learning_rate" in msg and "lr" in msg and "max_steps" in msg


def test_unknown_model_key_names_the_valid_keys():
    with pytest.raises(ConfigError) as err:
        resolve_run("nanogpt-cpu-tiny", ["model.n_layers=3"])
    assert "model.n_layers" in str(err.value) and "n_layer" in str(err.value)


def test_bad_literal_value_names_the_choices():
    with pytest.raises(ConfigError) as err:
        resolve_run("nanogpt-cpu-tiny", ["train.schedule=linear"])
    msg = str(err.value)
    assert "train.schedule" in msg and "cosine" in msg and "inverse_sqrt" in msg


def test_bad_model_choice_names_the_key_and_choices(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text(corpus_text(3000), encoding="utf-8")
    spec = resolve_run("nanogpt-cpu-tiny", {"model.pos_encoding": "spiral", "data.corpus": str(corpus)})
    with pytest.raises(ConfigError) as err:
        get_family("gpt").adapter.prepare(spec.data, spec.preset.model, None)
    msg = str(err.value)
    assert "model.pos_encoding" in msg and "rope" in msg and "alibi" in msg


def test_bad_number_and_range_errors_name_the_key():
    with pytest.raises(ConfigError, match="train.batch_size"):
        resolve_run("vit-digits", ["train.batch_size=many"])
    with pytest.raises(ConfigError, match="train.batch_size"):
        resolve_run("vit-digits", ["train.batch_size=0"])
    with pytest.raises(ConfigError, match="data.pairs"):
        resolve_run("seq2seq-dates-bahdanau", ["data.pairs=poems"])
    with pytest.raises(ConfigError, match="data.dataset"):
        resolve_run("vit-digits", ["data.dataset=cifar"])


def test_unknown_family_names_the_families():
    preset = parse_preset('family = "lstm_lm"\n[train]\nmax_steps = 3\n')
    with pytest.raises(ConfigError) as err:
        resolve_run(preset)
    assert "gpt" in str(err.value) and "rnn_seq2seq" in str(err.value)


def test_data_contradicting_model_key_is_an_error(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text(corpus_text(3000), encoding="utf-8")
    spec = resolve_run("nanogpt-cpu-tiny", {"model.vocab_size": "7", "data.corpus": str(corpus)})
    with pytest.raises(ConfigError, match="model.vocab_size"):
        get_family("gpt").adapter.prepare(spec.data, spec.preset.model, None)


@pytest.mark.parametrize("name", list_presets())
def test_preset_toml_round_trip(name):
    preset = load_preset(name)
    again = parse_preset(preset_to_toml(preset), name=name)
    assert again == preset


def test_train_config_defaults_are_the_tiny_cpu_recipe():
    cfg = resolve_run("nanogpt-cpu-tiny").train
    assert (cfg.max_steps, cfg.batch_size, cfg.lr, cfg.min_lr, cfg.warmup_steps, cfg.beta2) == (2000, 12, 1e-3, 1e-4, 100, 0.99)
    assert (cfg.eval_interval, cfg.eval_iters, cfg.schedule) == (250, 20, "cosine")
    assert TrainConfig().to_dict()["optimizer"] == "adamw"
