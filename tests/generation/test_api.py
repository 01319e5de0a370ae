"""Bundle-level helpers: next-token distribution table, Explain-in-Analyze payload, text helpers."""
from __future__ import annotations

import pytest
import torch

from playground.generation import GenerateRequest, SamplingConfig, explain_target, generate, next_token_table
from playground.generation.text import Detokenizer, encode_text, unknown_units


def test_next_token_table_shows_each_filter(gpt_bundle):
    cfg = SamplingConfig(temperature=0.7, top_k=5, top_p=0.6)
    df = next_token_table(gpt_bundle, "the quick", cfg, top=12)
    assert set(df["stage"]) == {"model (T = 1)", "after temperature", "after top-k", "after top-p",
                                "after min-p (sampled from)"}
    assert df["rank"].nunique() == 12
    with torch.no_grad():
        ids = gpt_bundle.tokenizer.encode("the quick").ids
        probs = gpt_bundle.model(torch.tensor([ids]))[0, -1].softmax(-1)
    raw = df[df.stage == "model (T = 1)"].sort_values("rank")
    assert raw["token_id"].tolist() == probs.topk(12).indices.tolist()
    assert raw["probability"].tolist() == pytest.approx(probs.topk(12).values.tolist(), rel=1e-5)
    assert df[df.stage == "after top-k"]["kept"].sum() == 5
    final = df[df.stage == "after min-p (sampled from)"]
    kept = final[final.kept]
    assert 1 <= len(kept) <= 5 and kept["probability"].sum() == pytest.approx(1.0, abs=1e-5)
    # top-p keeps the smallest head of the tempered, top-k'd distribution reaching 0.6
    topk = df[df.stage == "after top-k"].sort_values("rank")["probability"].tolist()
    cum = 0.0
    expected = 0
    for p in topk:
        expected += 1
        cum += p
        if cum >= 0.6:
            break
    assert len(kept) == expected


def test_next_token_table_for_seq2seq(seq2seq_bundle):
    df = next_token_table(seq2seq_bundle, "abc", SamplingConfig(), top=5)
    first = df[df.stage == "model (T = 1)"].sort_values("rank")
    done = generate(seq2seq_bundle, GenerateRequest(prompt="abc", max_new_tokens=4))
    assert first["token_id"].iloc[0] == done.samples[0].events[0].token_id


def test_explain_target_gpt(gpt_bundle):
    done = generate(gpt_bundle, GenerateRequest(prompt="the", max_new_tokens=6, sampling=SamplingConfig(temperature=0)))
    sel = explain_target("tiny-gpt", gpt_bundle.family, done, 0, 2, gpt_bundle.tokenizer)
    sample = done.samples[0]
    assert sel["checkpoint"] == "tiny-gpt"
    assert sel["target_position"] == 3 + 2
    assert sel["input_ids"][sel["target_position"]] == sample.ids[2]
    assert sel["input"] == "the" + gpt_bundle.tokenizer.decode(sample.ids[:3])
    assert sel["target_token"] == gpt_bundle.tokenizer.decode([sample.ids[2]])
    assert sel["context"] == "the" + gpt_bundle.tokenizer.decode(sample.ids[:2])


def test_explain_target_seq2seq(seq2seq_bundle):
    done = generate(seq2seq_bundle, GenerateRequest(prompt="abc", max_new_tokens=6))
    sel = explain_target("s2s", seq2seq_bundle.family, done, 0, 0, seq2seq_bundle.tokenizer)
    assert sel["input"] == "abc" and sel["target_position"] == 0
    assert sel["target_token"] == done.samples[0].target_tokens[0]


def test_encode_text_names_unknown_pieces_for_word_vocabularies():
    from playground.tokenization.simple import build_word_tokenizer

    tok = build_word_tokenizer(["the cat sat"])
    assert unknown_units(tok, "the dog sat on") == ["dog", "on"]
    with pytest.raises(Exception, match="'dog'"):
        encode_text(tok, "the dog sat")
    assert encode_text(tok, "the cat") == tok.encode("the cat").ids


def test_detokenizer_streams_byte_level_bpe_without_broken_characters():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(["héllo wörld"] * 5, trainers.BpeTrainer(vocab_size=270, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    text = "日本 héllo wörld"
    ids = tok.encode(text).ids
    det = Detokenizer(tok)
    pieces = [det.push(i) for i in ids]
    assert "".join(pieces) == text
    assert all("\ufffd" not in p for p in pieces)
    assert "" in pieces  # some bytes waited for the rest of their character
