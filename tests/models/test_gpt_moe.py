"""The mixture-of-experts FFN (#17 item 3): one expert is the dense FFN, all experts with equal
gates are their mean, top-k routing against a per-token loop, the load-balancing loss against its
formula, and the loss reaching the optimizer through the GPT training adapter; GPT-2 export
refuses the new options."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from playground.errors import ConfigError
from playground.families.gpt.training import GPTAdapter
from playground.models.export_hf import check_gpt2_compatible
from playground.models.gpt import GPT, GPTConfig
from playground.models.layers import FeedForward, MoEFeedForward, load_balancing_loss

D, F_ = 16, 24


def test_one_expert_is_the_dense_ffn() -> None:
    torch.manual_seed(0)
    moe, dense = MoEFeedForward(D, F_, "gelu", n_experts=1, top_k=1), FeedForward(D, F_, "gelu")
    dense.load_state_dict(moe.experts[0].state_dict())
    x = torch.randn(2, 5, D)
    assert torch.allclose(moe(x), dense(x), atol=1e-6)
    assert moe.load.tolist() == [1.0]


def test_all_experts_with_equal_gates_are_their_mean() -> None:
    torch.manual_seed(1)
    moe = MoEFeedForward(D, F_, "swiglu", n_experts=3, top_k=3)
    torch.nn.init.zeros_(moe.router.weight)  # every score equal -> every gate 1/3
    x = torch.randn(2, 4, D)
    mean = torch.stack([expert(x) for expert in moe.experts]).mean(0)
    assert torch.allclose(moe(x), mean, atol=1e-6)


def test_top_k_routing_matches_a_per_token_loop() -> None:
    torch.manual_seed(2)
    moe = MoEFeedForward(D, F_, "relu", n_experts=4, top_k=2)
    x = torch.randn(1, 6, D)
    out = moe(x)
    for t in range(6):
        scores = moe.router(x[0, t])  # [E]
        chosen = scores.topk(2).indices
        gates = scores[chosen].softmax(-1)  # a softmax over the two chosen experts only
        want = sum(g * moe.experts[int(e)](x[0, t]) for g, e in zip(gates, chosen))
        assert torch.allclose(out[0, t], want, atol=1e-5)
        assert set(moe.choice[0, t].tolist()) == set(chosen.tolist())
    assert moe.load.sum().item() == pytest.approx(1.0)


def test_load_balancing_loss_formula_and_its_minimum() -> None:
    # 4 tokens, 2 experts, top-1: tokens 0-2 go to expert 0, token 3 to expert 1
    probs = torch.tensor([[0.9, 0.1], [0.8, 0.2], [0.6, 0.4], [0.3, 0.7]])
    f = torch.tensor([3 / 4, 1 / 4])
    P = probs.mean(0)  # [0.65, 0.35]
    assert load_balancing_loss(f, P).item() == pytest.approx(2 * (0.75 * 0.65 + 0.25 * 0.35))
    uniform = torch.full((4,), 0.25)
    assert load_balancing_loss(uniform, uniform).item() == pytest.approx(1.0)


def test_uniform_routing_gives_aux_loss_one_times_the_weight() -> None:
    model = GPT(GPTConfig(vocab_size=20, block_size=8, n_layer=2, n_head=2, d_model=D, ffn_experts=4,
                          ffn_top_k=4, moe_aux_weight=0.05))
    for block in model.blocks:
        torch.nn.init.zeros_(block.mlp.router.weight)  # P uniform; top_k = E: f uniform too
    model.train()(torch.randint(0, 20, (2, 8)))
    assert model.aux_loss().item() == pytest.approx(0.05 * 2 * 1.0)
    model.eval()
    assert model.aux_loss() is None  # evaluation reports the plain cross-entropy


@pytest.mark.parametrize("weight", [0.0, 1.0])
def test_aux_loss_reaches_the_router_through_the_adapter(weight: float) -> None:
    torch.manual_seed(3)
    model = GPT(GPTConfig(vocab_size=20, block_size=8, n_layer=1, n_head=2, d_model=D, ffn_experts=4,
                          ffn_top_k=1, moe_aux_weight=weight)).train()
    batch = {"x": torch.randint(0, 20, (3, 8)), "y": torch.randint(0, 20, (3, 8))}
    loss = GPTAdapter.loss(None, model, batch)  # type: ignore[arg-type]  # no state is used
    aux = model.aux_loss().item()
    ce = F.cross_entropy(model(batch["x"]).flatten(0, 1), batch["y"].flatten())
    assert loss.item() == pytest.approx(ce.item() + aux, abs=1e-5)
    loss.backward()
    # with top-1 the gate p/p is 1 whatever p: the router learns only from the load-balancing loss
    grad = model.blocks[0].mlp.router.weight.grad.abs().sum().item()
    assert grad > 1e-3 if weight else grad < 1e-6


def test_default_config_keeps_the_dense_names() -> None:
    names = set(dict(GPT(GPTConfig(vocab_size=20, block_size=8, n_layer=1, n_head=2, d_model=D)).named_parameters()))
    assert {"blocks.0.mlp.fc.weight", "blocks.0.mlp.proj.weight", "blocks.0.attn.qkv.weight"} <= names
    moe = GPT(GPTConfig(vocab_size=20, block_size=8, n_layer=1, n_head=2, d_model=D, ffn_experts=3, zero_init=True))
    assert all((e.proj.weight == 0).all() for e in moe.blocks[0].mlp.experts)


@pytest.mark.parametrize("bad", [dict(ffn_experts=4, ffn_top_k=5), dict(ffn_experts=4, ffn_top_k=0),
                                 dict(ffn_experts=-1), dict(moe_aux_weight=-0.1)])
def test_bad_moe_options_are_config_errors(bad: dict) -> None:
    with pytest.raises(ConfigError):
        GPTConfig(**bad)


@pytest.mark.parametrize("option, word", [(dict(n_kv_heads=1), "n_kv_heads"), (dict(attn_window=8), "attn_window"),
                                          (dict(ffn_experts=2), "ffn_experts")])
def test_gpt2_export_refuses_the_new_options(option: dict, word: str) -> None:
    with pytest.raises(ConfigError, match=word):
        check_gpt2_compatible(GPTConfig(block_size=64, n_head=4, d_model=32, **option))
    check_gpt2_compatible(GPTConfig(block_size=64, n_head=4, d_model=32, attn_window=64, n_kv_heads=4))


def test_an_idle_expert_gets_zero_gradients_in_training() -> None:
    torch.manual_seed(4)
    moe = MoEFeedForward(D, F_, "gelu", n_experts=3, top_k=1).train()
    with torch.no_grad():
        moe.router.weight.zero_()
        moe.router.weight[0] = 1.0  # expert 0 wins for inputs with a positive sum
    x = torch.rand(2, 5, D)  # all positive: every token goes to expert 0
    moe(x).sum().backward()
    assert moe.load.tolist() == [1.0, 0.0, 0.0]
    idle = moe.experts[2].fc.weight.grad
    assert idle is not None and (idle == 0).all()
