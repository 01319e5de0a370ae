"""Batches are a pure function of (seed, step); splits are deterministic; data errors are clear."""
from __future__ import annotations

import pytest
import torch

from playground.errors import NotFoundError
from playground.families import get_family
from playground.training.spec import resolve_run
from playground.training.data import EpochSampler, PairData, encode_text, length_bucket
from tests.training.conftest import corpus_text, tiny_preset


def test_epoch_sampler_visits_every_example_once_per_epoch():
    s = EpochSampler(10, seed=3)
    first, second = s.indices(0, 10), s.indices(10, 10)
    assert sorted(first.tolist()) == list(range(10)) and sorted(second.tolist()) == list(range(10))
    assert first.tolist() != second.tolist()  # reshuffled each epoch
    assert s.indices(7, 6).tolist() == torch.cat([first, second])[7:13].tolist()  # any stretch, across epochs
    assert EpochSampler(10, seed=3).indices(4, 3).tolist() == first[4:7].tolist()  # stateless


@pytest.mark.parametrize("family", ["gpt", "vit", "rnn_seq2seq"])
def test_global_batch_is_a_function_of_the_step_and_slices_tile_it(family, corpus_file):
    spec = resolve_run(tiny_preset(family, corpus_file))
    adapter = get_family(family).adapter
    prep = adapter.prepare(spec.data, spec.preset.model, None)
    whole = adapter.batch(prep, 5, 3, 0, 8, 8)
    again = adapter.batch(adapter.prepare(spec.data, spec.preset.model, None), 5, 3, 0, 8, 8)
    halves = [adapter.batch(prep, 5, 3, lo, 4, 8) for lo in (0, 4)]
    key = next(iter(whole))
    assert torch.equal(whole[key], again[key])
    if family == "gpt" or family == "vit":  # fixed shapes: the halves concatenate to the whole
        assert torch.equal(torch.cat([h[key] for h in halves]), whole[key])
    other = adapter.batch(prep, 5, 4, 0, 8, 8)
    assert not torch.equal(other[key], whole[key]) if other[key].shape == whole[key].shape else True


def test_text_windows_are_shifted_targets(corpus_file):
    spec = resolve_run(tiny_preset("gpt", corpus_file))
    prep = get_family("gpt").adapter.prepare(spec.data, spec.preset.model, None)
    b = get_family("gpt").adapter.batch(prep, 0, 0, 0, 4, 4)
    assert b["x"].shape == (4, 16) and torch.equal(b["x"][:, 1:], b["y"][:, :-1])
    text = corpus_text()
    assert prep.tokenizer.decode(prep.payload.train[:40].tolist(), skip_special_tokens=False) == text[:40]
    n = prep.info["chars"]  # the corpus loader may normalise the file's last line end
    assert abs(n - len(text)) <= 1
    assert len(prep.payload.train) == int(n * 0.9) and len(prep.payload.val) == n - int(n * 0.9)


def test_chunked_encoding_equals_whole_encoding():
    from playground.tokenization.simple import build_char_tokenizer

    text = corpus_text(5000)
    tok = build_char_tokenizer([text], [])
    assert encode_text(tok, text, chunk_chars=300).tolist() == tok.encode(text).ids


def test_image_split_is_seeded_and_disjoint():
    spec = resolve_run(tiny_preset("vit"))
    a = get_family("vit").adapter.prepare(spec.data, spec.preset.model, None)
    b = get_family("vit").adapter.prepare(spec.data, spec.preset.model, None)
    assert torch.equal(a.payload.val.images, b.payload.val.images)
    assert a.payload.train.n + a.payload.val.n == 300 and a.payload.val.n == 60
    assert a.model_config.image_size == 8 and a.model_config.channels == 1 and a.model_config.n_classes == 10


def test_pair_collation_frames_targets():
    data = PairData([], [], [], [], [], pad_id=0, bos_id=1, eos_id=2)
    b = data.collate([[5, 6, 7], [8]], [[9], [10, 11]])
    assert b["src"].tolist() == [[5, 6, 7], [8, 0, 0]]
    assert b["tgt_in"].tolist() == [[1, 9, 0], [1, 10, 11]]
    assert b["tgt_out"].tolist() == [[9, 2, 0], [10, 11, 2]]
    assert length_bucket(0, 10) == "0-9" and length_bucket(47, 10) == "40-49"


def test_seq2seq_ids_come_from_the_tokenizer():
    spec = resolve_run(tiny_preset("rnn_seq2seq"))
    prep = get_family("rnn_seq2seq").adapter.prepare(spec.data, spec.preset.model, None)
    cfg = prep.model_config
    assert (cfg.pad_id, cfg.bos_id, cfg.eos_id) == (0, 1, 2) and cfg.vocab_size == prep.tokenizer.get_vocab_size()
    src, tgt = prep.payload.val_text[0]
    assert prep.tokenizer.decode(prep.payload.val_src[0]) == src
    assert prep.info["n_train"] == 270 and prep.info["n_val"] == 30


def test_unknown_workspace_tokenizer_lists_what_there_is(workspace, corpus_file):
    spec = resolve_run(tiny_preset("gpt", corpus_file), {"data.tokenizer": "my-bpe"})
    with pytest.raises(NotFoundError) as err:
        get_family("gpt").adapter.prepare(spec.data, spec.preset.model, workspace)
    assert "my-bpe" in str(err.value) and "Tokenizer tab" in str(err.value)


def test_workspace_tokenizer_is_used(workspace, corpus_file):
    from playground.tokenization.simple import build_char_tokenizer

    tok = build_char_tokenizer([corpus_text()], ["<eot>"])
    workspace.save_tokenizer("chars2", tok.to_str(), {"vocab_size": tok.get_vocab_size()})
    spec = resolve_run(tiny_preset("gpt", corpus_file), {"data.tokenizer": "chars2"})
    prep = get_family("gpt").adapter.prepare(spec.data, spec.preset.model, workspace)
    assert prep.model_config.vocab_size == tok.get_vocab_size() and prep.info["tokenizer"] == "chars2"


def test_length_pools_group_similar_lengths_and_stay_stateless():
    spec = resolve_run(tiny_preset("rnn_seq2seq"), {"data.length_pool": "4"})
    prep = get_family("rnn_seq2seq").adapter.prepare(spec.data, spec.preset.model, None)
    data = prep.payload
    pool = [data.train_indices(0, s, 0, 8, 8) for s in range(4)]  # one pool of 4 batches
    plain = data.sampler.indices(0, 32).tolist()
    assert sorted(i for b in pool for i in b) == sorted(plain)  # the same examples, regrouped
    spans = [max(len(data.train_src[i]) for i in b) - min(len(data.train_src[i]) for i in b) for b in pool]
    rand = [plain[j:j + 8] for j in range(0, 32, 8)]
    rand_spans = [max(len(data.train_src[i]) for i in b) - min(len(data.train_src[i]) for i in b) for b in rand]
    assert sum(spans) < sum(rand_spans)
    fresh = get_family("rnn_seq2seq").adapter.prepare(spec.data, spec.preset.model, None).payload
    assert fresh.train_indices(0, 2, 4, 4, 8) == pool[2][4:]  # any step, any slice, no history needed
