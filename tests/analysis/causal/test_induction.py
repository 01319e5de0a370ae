"""The induction known-result tooling: its training data and its attention-only model.

(The check that head patching names the previous-token and induction heads the Heads view's
scores name is not here: no model trained within this machine's budget formed the canonical
circuit; see docs/causal.md, "Known results".)"""
from __future__ import annotations

import torch

from playground.analysis.causal.induction import attention_only_gpt, induction_batch


def test_the_copied_span_repeats_right_after_itself_at_a_random_offset():
    g = torch.Generator().manual_seed(0)
    for _ in range(5):
        x, copied = induction_batch(32, 32, 16, g)
        n_copied = copied.sum(1)
        assert (n_copied == n_copied[0]).all() and 1 <= int(n_copied[0]) <= 13  # one span length n - 1 per batch
        n = int(n_copied[0]) + 1
        for row in range(16):
            cols = copied[row].nonzero().flatten()  # the second copy after its first token
            assert torch.equal(x[row, cols], x[row, cols - n])
        starts = [int(copied[r].nonzero()[0]) for r in range(16)]
        assert len(set(starts)) > 1  # the offset differs between rows


def test_the_attention_only_model_adds_nothing_through_its_mlps():
    model = attention_only_gpt()
    x = torch.randint(32, (2, 10))
    outs = []
    hooks = [b.mlp.register_forward_hook(lambda _m, _a, out: outs.append(out)) for b in model.blocks]
    model(x)
    for h in hooks:
        h.remove()
    assert len(outs) == 2 and all(float(o.abs().max()) == 0.0 for o in outs)
    assert not any(p.requires_grad for b in model.blocks for p in b.mlp.proj.parameters())
