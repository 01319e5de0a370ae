"""Generate tab: a mixture-of-experts GPT's run shows the expert-load view (declared by the GPT
family's generator); a dense GPT's does not."""
from __future__ import annotations

import altair as alt
import pandas as pd
import torch

from playground.bundle import save_bundle
from playground.models.gpt import GPT, GPTConfig
from playground.tokenization.simple import build_char_tokenizer
from playground.ui.generate_tab import Env, generate_text, select_model

TEXT = "the quick brown fox jumps over the lazy dog.\n"


def _save(ws, name: str, **options) -> None:
    tok = build_char_tokenizer([TEXT], special_tokens=[])
    cfg = GPTConfig(vocab_size=tok.get_vocab_size(), block_size=16, n_layer=2, n_head=2, d_model=16, **options)
    torch.manual_seed(0)
    save_bundle(ws, name, GPT(cfg), "gpt", cfg, tokenizer=tok, step=1)


def _last_run(env: Env, name: str):
    *_, last = generate_text(env, name, "the", 0.0, 0, 1.0, 0.0, 1.0, 0.0, 0.0, 6, 1, 1, "", 1, 0.0)
    return last


def test_a_mixture_of_experts_run_shows_its_expert_load(workspace) -> None:
    _save(workspace, "moe", ffn_experts=4, ffn_top_k=2)
    env = Env(workspace, "cpu", None)
    assert select_model(env, "moe").routing_plot["visible"] is True
    last = _last_run(env, "moe")
    assert isinstance(last.routing_plot, alt.VConcatChart)
    routes = pd.read_csv(last.routing_csv)
    n_tokens = min(16, len(last.result["done"].samples[0].full_text))  # one character per token, last block_size
    assert len(routes) == n_tokens * 2 * 2  # tokens x layers x top_k
    assert set(routes["expert"]) <= set(range(4))


def test_a_dense_run_has_no_expert_view(workspace) -> None:
    _save(workspace, "dense")
    env = Env(workspace, "cpu", None)
    assert select_model(env, "dense").routing_plot["visible"] is False
    last = _last_run(env, "dense")
    assert last.routing_plot == last.routing_csv  # both gr.skip(): nothing to show
