"""Dropout from a run's generator: the functional form, the module, the walker, and the RNNs'
inter-layer dropout run layer by layer on the built-in modules' own parameters."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

from playground.models.dropout import Dropout, dropout, set_dropout_generator
from playground.families import build_model, get_family
from playground.models.rnn_seq2seq import GRU, LSTM

from .conftest import TINY_CONFIGS


def test_dropout_mask_comes_from_the_generator() -> None:
    x = torch.ones(1000)
    a = dropout(x, 0.3, torch.Generator().manual_seed(1))
    b = dropout(x, 0.3, torch.Generator().manual_seed(1))
    c = dropout(x, 0.3, torch.Generator().manual_seed(2))
    assert torch.equal(a, b) and not torch.equal(a, c)
    assert a.unique().tolist() == pytest.approx([0.0, 1 / 0.7])
    assert 0.2 < (a == 0).float().mean().item() < 0.4  # about p of them dropped
    assert dropout(x, 0.3, None, training=False) is x and dropout(x, 0.0, None) is x


def test_dropout_keeps_gradients_where_it_keeps_values() -> None:
    x = torch.ones(50, requires_grad=True)
    y = dropout(x, 0.5, torch.Generator().manual_seed(0))
    y.sum().backward()
    assert torch.equal(x.grad, y.detach())  # d(x * mask/(1-p))/dx = mask/(1-p)


def test_the_module_draws_from_the_attached_generator_and_the_global_rng_stays_untouched() -> None:
    model = nn.Sequential(nn.Linear(4, 4), Dropout(0.5), nn.Linear(4, 4), Dropout(0.5)).train()
    assert set_dropout_generator(model, torch.Generator().manual_seed(3)) == 2
    x = torch.randn(8, 4)
    state = torch.get_rng_state()
    out = model(x)
    assert torch.equal(torch.get_rng_state(), state)
    set_dropout_generator(model, torch.Generator().manual_seed(3))
    assert torch.equal(model(x), out)


def test_the_walker_refuses_dropout_that_reads_the_global_rng() -> None:
    with pytest.raises(ValueError, match="global RNG"):
        set_dropout_generator(nn.Sequential(nn.Dropout(0.1)), torch.Generator())
    with pytest.raises(ValueError, match="global RNG"):
        set_dropout_generator(nn.GRU(3, 3, 2, dropout=0.1), torch.Generator())
    assert set_dropout_generator(nn.Sequential(nn.Dropout(0.0), nn.GRU(3, 3)), torch.Generator()) == 0


@pytest.mark.parametrize("family", sorted(TINY_CONFIGS))
def test_every_family_uses_only_generator_dropout(family: str) -> None:
    config = {**TINY_CONFIGS[family], "dropout": 0.1}
    fields = {f.name for f in dataclasses.fields(get_family(family).config_cls)}
    # every dropout the family has: attention weights, embeddings, between stacked RNN layers
    config.update({k: v for k, v in {"attn_dropout": 0.1, "emb_dropout": 0.1, "n_layers": 2}.items() if k in fields})
    assert set_dropout_generator(build_model(family, config), torch.Generator()) > 0


@pytest.mark.parametrize("cls", [GRU, LSTM])
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("packed", [False, True])
def test_layer_by_layer_rnn_equals_the_builtin_kernel(cls: type, bidirectional: bool, packed: bool,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """With every mask all-ones, the layer-by-layer path gives the built-in multi-layer result."""
    g = torch.Generator().manual_seed(0)
    rnn = cls(5, 6, 3, batch_first=True, bidirectional=bidirectional, dropout=0.5)
    x = torch.randn(4, 7, 5, generator=g)
    inp = pack_padded_sequence(x, torch.tensor([7, 3, 5, 1]), batch_first=True, enforce_sorted=False) if packed else x
    h0 = torch.randn(3 * (2 if bidirectional else 1), 4, 6, generator=g)
    hx = (h0, torch.randn(h0.shape, generator=g)) if cls is LSTM else h0
    expected_out, expected_h = rnn.eval()(inp, hx)  # built-in kernel (no dropout in eval)
    monkeypatch.setattr(rnn.layer_drop, "forward", lambda t: t)  # keep everything
    out, h = rnn.train()(inp, hx)  # layer by layer
    data = (lambda o: o.data) if packed else (lambda o: o)
    assert torch.allclose(data(out), data(expected_out), atol=1e-6)
    for a, b in zip(h if cls is LSTM else (h,), expected_h if cls is LSTM else (expected_h,)):
        assert torch.allclose(a, b, atol=1e-6)


def test_rnn_inter_layer_dropout_is_from_the_generator_and_keeps_parameter_names() -> None:
    rnn = GRU(5, 6, 2, batch_first=True, dropout=0.5).train()
    assert [n for n, _ in rnn.named_parameters()] == [n for n, _ in nn.GRU(5, 6, 2).named_parameters()]
    x = torch.randn(2, 4, 5)
    set_dropout_generator(rnn, torch.Generator().manual_seed(1))
    a = rnn(x)[0]
    set_dropout_generator(rnn, torch.Generator().manual_seed(1))
    b = rnn(x)[0]
    set_dropout_generator(rnn, torch.Generator().manual_seed(2))
    c = rnn(x)[0]
    assert torch.equal(a, b) and not torch.equal(a, c)
    assert torch.equal(GRU(5, 6, 1, dropout=0.5).layer_drop(x), x)  # one layer: nothing between layers
