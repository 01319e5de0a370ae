"""The counts of the repeated/dropped source words view, on hand-made attention rows."""
from __future__ import annotations

import pytest
import torch

from playground.analysis.coverage import (
    CoverageCounts,
    comparison_text,
    consecutive_repeats,
    missing_tokens,
    score_example,
)
from playground.errors import PlaygroundError


def test_received_attention_is_summed_over_output_steps_and_thresholded():
    rows = torch.tensor([[1.0, 0.0, 0.0, 0.0],
                         [0.6, 0.1, 0.3, 0.0],
                         [0.0, 0.2, 0.3, 0.5]])  # 3 output steps over 4 source tokens
    ex = score_example([5, 6, 7, 8], [9, 9, 4], [9, 9, 9, 3], rows)
    assert ex.received == pytest.approx([1.6, 0.3, 0.6, 0.5])
    assert ex.repeated_attention == 1  # token 0: 1.6 >= 1.5
    assert ex.dropped_attention == 2  # tokens 1 (0.3) and 3 (0.5, the bound counts)
    assert ex.repeated_output == 1  # 9 9 9 has two back-to-back repeats, the reference one
    assert ex.missing == 1  # the reference's 4 is not in the output


def test_helpers():
    assert consecutive_repeats([1, 1, 2, 2, 2, 1]) == 3
    assert consecutive_repeats([]) == 0
    assert missing_tokens([1, 1, 2, 3], [1, 3, 3]) == 2  # one 1 and the 2
    assert missing_tokens([1], [1, 1, 1]) == 0


def test_rates_and_table():
    counts = CoverageCounts(n_examples=2, source_tokens=10, reference_tokens=8, output_steps=9, attention_mass=9.0,
                            repeated_attention=1, dropped_attention=4, repeated_output=1, missing=2, exact=1)
    r = counts.rates()
    assert r == pytest.approx({"repeated_attention": 0.1, "dropped_attention": 0.4, "repeated_output_per_example": 0.5,
                               "missing_per_reference_token": 0.25, "exact_match": 0.5, "attention_per_step": 1.0})
    text = comparison_text({"with": counts, "without": counts})
    assert "| with | 0.1 | 0.4 | 0.5 | 0.25 | 0.5 | 1.0 |" in text
    assert "2 validation pairs" in text


def test_bad_inputs_are_refused():
    from playground.analysis.coverage import attention_coverage
    from playground.models.rnn_seq2seq import RNNSeq2Seq, RNNSeq2SeqConfig

    model = RNNSeq2Seq(RNNSeq2SeqConfig(vocab_size=8, emb_dim=4, hidden=8))
    with pytest.raises(PlaygroundError, match="2 sources but 1 references"):
        attention_coverage(model, [[3], [4]], [[3]], pad_id=0, bos_id=1, eos_id=2)
    with pytest.raises(PlaygroundError, match="Use 1 to"):
        attention_coverage(model, [], [], pad_id=0, bos_id=1, eos_id=2)


def test_profile_names_the_words_behind_the_counts():
    rows = torch.tensor([[1.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.4, 0.6]])  # token 5 twice, 6 hardly
    counts = CoverageCounts(token_names={5: "because", 6: "our", 7: "dog"})
    for _ in range(2):
        counts.examples.append(score_example([5, 6, 7], [1, 2, 3], [1, 2, 3], rows))
    assert counts.profile() == {"repeated": [("because", 2)], "dropped": [("our", 2)]}
    assert counts.to_dict()["profile"] == {"repeated": [["because", 2]], "dropped": [["our", 2]]}
    assert "most repeated 'because' x2; most dropped 'our' x2" in comparison_text({"m": counts})
