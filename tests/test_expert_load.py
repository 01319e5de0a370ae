"""The expert-load view of a mixture-of-experts GPT: its frames agree with the router's own
scores, shares sum to 1 per layer, the charts fit their box, a dense model is refused."""
from __future__ import annotations

import pytest
import torch

from playground.charts import layout
from playground.charts.experts import expert_load_chart, expert_tokens_chart
from playground.errors import PlaygroundError
from playground.families.gpt.experts import expert_load, routing_frame
from playground.models.gpt import GPT, GPTConfig
from playground.tokenization.simple import build_char_tokenizer

TEXT = "the cat sat on the mat"


def _model(**options) -> tuple[GPT, object]:
    tok = build_char_tokenizer([TEXT], [])
    torch.manual_seed(0)
    cfg = dict(vocab_size=tok.get_vocab_size(), block_size=32, n_layer=2, n_head=2, d_model=16)
    return GPT(GPTConfig(**{**cfg, **options})).eval(), tok


def test_routing_follows_the_routers_largest_score() -> None:
    model, tok = _model(ffn_experts=4, ffn_top_k=2)
    inputs = {}
    hooks = [b.mlp.register_forward_hook(lambda m, args, out, i=i: inputs.__setitem__(i, args[0]))
             for i, b in enumerate(model.blocks)]
    routes = routing_frame(model, tok, TEXT)
    for h in hooks:
        h.remove()
    T = len(tok.encode(TEXT).ids)
    assert len(routes) == T * 2 * 2  # tokens x layers x top_k
    for layer, block in enumerate(model.blocks):
        best = block.mlp.router(inputs[layer][0]).argmax(-1)  # [T]
        top = routes[(routes["layer"] == layer) & (routes["rank"] == 0)].sort_values("position")
        assert top["expert"].tolist() == best.tolist()
        assert top["token"].tolist() == [tok.decode([i]) for i in tok.encode(TEXT).ids]


def test_load_shares_sum_to_one_and_match_the_layer() -> None:
    model, tok = _model(ffn_experts=3, ffn_top_k=1)
    load = expert_load(model, tok, TEXT)
    assert sorted(load.columns) == ["expert", "layer", "share", "tokens"]
    assert len(load) == 2 * 3
    for layer, block in enumerate(model.blocks):
        shares = load[load["layer"] == layer].sort_values("expert")["share"]
        assert shares.sum() == pytest.approx(1.0)
        assert shares.tolist() == pytest.approx(block.mlp.load.tolist())  # what the layer recorded


def test_charts_fit_and_dense_models_are_refused() -> None:
    model, tok = _model(ffn_experts=4, ffn_top_k=2)
    for chart, width in ((expert_load_chart(expert_load(model, tok, TEXT)), layout.FULL // 2),
                         (expert_tokens_chart(routing_frame(model, tok, TEXT)), layout.FULL)):
        spec = chart.to_dict()
        assert spec["width"] == width and spec["autosize"]["type"] == "fit-x"
    dense, tok = _model()
    with pytest.raises(PlaygroundError, match="ffn_experts"):
        expert_load(dense, tok, TEXT)
