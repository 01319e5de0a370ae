"""Where a mixture-of-experts GPT sends each token: frames for the expert-load view.

Each MoE layer records its routing on every forward (``MoEFeedForward.choice`` / ``gate``);
these functions run a text through the model once and read it back.
"""
from __future__ import annotations

import pandas as pd
import torch
from tokenizers import Tokenizer

from playground.errors import PlaygroundError
from playground.models.gpt import GPT
from playground.models.layers import MoEFeedForward


def _moe_layers(model: GPT) -> list[tuple[int, MoEFeedForward]]:
    layers = [(i, b.mlp) for i, b in enumerate(model.blocks) if isinstance(b.mlp, MoEFeedForward)]
    if not layers:
        raise PlaygroundError("This model has one dense FFN per layer (ffn_experts 0 or 1): there are no "
                              "experts to show. Train with ffn_experts > 1, e.g. presets/nanogpt-moe.toml.")
    return layers


def routing_frame(model: GPT, tokenizer: Tokenizer, text: str) -> pd.DataFrame:
    """Every routing choice for ``text`` (its last block_size tokens): one row per token, layer and
    chosen expert, columns position, token, layer, expert, gate (the expert's mixing weight), rank
    (0 = the largest gate)."""
    layers = _moe_layers(model)
    ids = tokenizer.encode(text).ids[-model.config.block_size:]
    if not ids:
        raise PlaygroundError("Type some text: it has no tokens.")
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            model(torch.tensor([ids], device=next(model.parameters()).device))
    finally:
        model.train(was_training)
    rows = []
    for layer, mlp in layers:
        gate, choice = mlp.gate[0].cpu(), mlp.choice[0].cpu()  # [T,k] each
        order = gate.argsort(dim=-1, descending=True)  # [T,k]
        for t, token_id in enumerate(ids):
            token = tokenizer.decode([token_id], skip_special_tokens=False)
            for rank, slot in enumerate(order[t].tolist()):
                rows.append({"position": t, "token": token, "layer": layer, "expert": int(choice[t, slot]),
                             "gate": float(gate[t, slot]), "rank": rank})
    return pd.DataFrame(rows)


def expert_load(model: GPT, tokenizer: Tokenizer, text: str) -> pd.DataFrame:
    """Each expert's share of the routing for ``text``, per layer: columns layer, expert, share
    (of the tokens x top_k choices; each layer's shares sum to 1), tokens (how many chose it)."""
    routes = routing_frame(model, tokenizer, text)
    n_experts = model.config.ffn_experts
    counts = routes.groupby(["layer", "expert"]).size()
    rows = []
    for layer in sorted(routes["layer"].unique()):
        total = int((routes["layer"] == layer).sum())
        for expert in range(n_experts):
            n = int(counts.get((layer, expert), 0))
            rows.append({"layer": int(layer), "expert": expert, "share": n / total, "tokens": n})
    return pd.DataFrame(rows)
