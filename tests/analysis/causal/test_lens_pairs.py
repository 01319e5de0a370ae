"""The logit lens against the model's own output, and the built-in clean/corrupted pairs."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from playground.analysis.causal.lens import logit_lens
from playground.analysis.causal.pairs import induction_pair, text_task, typed_pair
from playground.errors import PlaygroundError
from playground.models.bert import BertConfig, BertMLM
from playground.models.gpt import GPT, GPTConfig
from playground.tokenization.simple import build_char_tokenizer

TEXT = "When Mary and John went to the store, gave a drink to On 12/05/1987 and again 0123456789"


@pytest.fixture(scope="module")
def tok():
    return build_char_tokenizer([TEXT], [])


def gpt(vocab: int) -> GPT:
    torch.manual_seed(0)
    return GPT(GPTConfig(vocab_size=vocab, block_size=64, n_layer=3, n_head=2, d_model=16)).eval()


def test_gpt_lens_last_layer_is_the_models_output_and_ranks_are_counts():
    model = gpt(20)
    ids = torch.tensor([[1, 5, 7, 3, 9]])
    lens = logit_lens(model, ids, position=-1, target=4, k=3)
    with torch.no_grad():
        out = model(ids)[0, -1].softmax(-1).numpy()
    np.testing.assert_allclose(lens.probs[-1], out, atol=1e-6)
    assert lens.layers == ["embeddings", "after block 0", "after block 1", "after block 2"]
    for i in range(4):
        assert lens.target_rank[i] == int((lens.probs[i] > lens.probs[i, 4]).sum())
        assert lens.top_ids[i, 0] == int(lens.probs[i].argmax())
    assert lens.target_prob[-1] == pytest.approx(out[4], abs=1e-6)


def test_bert_lens_last_layer_is_the_mlm_output():
    torch.manual_seed(0)
    model = BertMLM(BertConfig(vocab_size=30, block_size=16, n_layer=2, n_head=2, d_model=16)).eval()
    ids = torch.tensor([[2, 5, 6, 7, 3]])
    lens = logit_lens(model, ids, position=2)
    with torch.no_grad():
        out = model(ids)[0, 2].softmax(-1).numpy()
    np.testing.assert_allclose(lens.probs[-1], out, atol=1e-6)
    assert len(lens.layers) == 3


def test_lens_refuses_a_model_without_unembedding():
    with pytest.raises(PlaygroundError, match="unembedding"):
        logit_lens(torch.nn.Linear(2, 2), torch.zeros(1, 2, dtype=torch.long))


def test_typed_pair_needs_equal_lengths_and_a_difference(tok):
    model = gpt(tok.get_vocab_size())
    with pytest.raises(PlaygroundError, match="same number|tokens"):
        typed_pair(model, tok, "Mary", "Joh")
    with pytest.raises(PlaygroundError, match="same tokens"):
        typed_pair(model, tok, "Mary", "Mary")
    pair = typed_pair(model, tok, "Mary went", "John went")
    assert pair.clean_ids.shape == pair.corrupted_ids.shape


@pytest.mark.parametrize("task", ["ioi", "dates"])
def test_text_tasks_have_equal_lengths_and_two_answers(tok, task):
    model = gpt(tok.get_vocab_size())
    pair = text_task(model, tok, task)
    assert pair.clean_ids.shape == pair.corrupted_ids.shape
    assert pair.metric.answer != pair.metric.wrong
    diff = (pair.clean_ids != pair.corrupted_ids).sum()
    assert diff >= 1
    if task == "dates":  # one digit of the year changed, the answers are the two digits
        assert int(diff) == 1
        assert {tok.id_to_token(pair.metric.answer), tok.id_to_token(pair.metric.wrong)} == {"8", "5"}


def test_induction_pair_changes_the_token_before_the_answer():
    pair = induction_pair(range(20), length=6, answer_at=3, seed=1)
    c, x = pair.clean_ids[0].tolist(), pair.corrupted_ids[0].tolist()
    assert c[6:] == c[:3] and len(c) == 9
    assert [i for i in range(9) if c[i] != x[i]] == [2]
    assert pair.metric.answer == c[3] and pair.metric.wrong is None
