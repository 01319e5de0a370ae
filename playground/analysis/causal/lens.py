"""The logit lens (nostalgebraist 2020): read the residual stream after each layer as if it were
the last, through the model's own final norm and unembedding.

Row 0 is the embeddings, row l the stream after block l; the last row is the model's own
output. Where the answer's rank drops to 0 shows at which depth the model "knows" it. The
tuned lens (Belrose et al. 2023) trains one affine map per layer before the unembedding,
because early layers do not speak the output's basis; it is not built here.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
from torch import Tensor, nn

from playground.errors import PlaygroundError
from playground.models.activations import record_activations


@dataclass
class LensSpec:
    """Where a model's residual stream is read and how it is unembedded."""

    sites: list[str]  # residual stream: before block 0 (embeddings), ..., after the last block
    unembed: Callable[[Tensor], Tensor]  # [B,T,D] -> logits [B,T,V]


def lens_spec(model: nn.Module) -> LensSpec:
    """GPT (``blocks``, ``ln_f``, ``lm_head``) or BERT MLM (``encoder``, ``mlm_head``)."""
    if hasattr(model, "blocks") and hasattr(model, "lm_head"):
        L = len(model.blocks)
        return LensSpec([f"blocks.{i}:in" for i in range(L)] + ["ln_f:in"], lambda x: model.lm_head(model.ln_f(x)))
    if hasattr(model, "encoder") and hasattr(model, "mlm_head"):
        L = len(model.encoder.blocks)
        return LensSpec([f"encoder.blocks.{i}:in" for i in range(L)] + ["encoder.ln_f:in"],
                        lambda x: model.mlm_head(model.encoder.ln_f(x)))
    raise PlaygroundError(f"The logit lens needs a language model with an unembedding (GPT, BERT MLM); "
                          f"{type(model).__name__} has none.")


@dataclass
class LensResult:
    """Per layer: the top-k tokens and probabilities, and the target's rank (0 = top) and probability."""

    layers: list[str]
    position: int
    target: int
    target_label: str
    top_ids: np.ndarray  # [layers, k]
    top_probs: np.ndarray  # [layers, k]
    top_labels: list[list[str]]
    target_rank: np.ndarray  # [layers]
    target_prob: np.ndarray  # [layers]
    probs: np.ndarray  # [layers, V]: every layer's whole distribution (tests; not exported)

    def frame(self) -> pd.DataFrame:
        rows = []
        for i, name in enumerate(self.layers):
            for r in range(self.top_ids.shape[1]):
                rows.append({"layer": name, "rank": r, "token_id": int(self.top_ids[i, r]),
                             "token": self.top_labels[i][r], "prob": float(self.top_probs[i, r]),
                             "target": self.target_label, "target_rank": int(self.target_rank[i]),
                             "target_prob": float(self.target_prob[i])})
        return pd.DataFrame(rows)

    def to_dict(self) -> dict:
        return {"layers": self.layers, "position": self.position, "target": self.target,
                "target_label": self.target_label, "top_ids": self.top_ids.tolist(),
                "top_probs": self.top_probs.tolist(), "top_labels": self.top_labels,
                "target_rank": self.target_rank.tolist(), "target_prob": self.target_prob.tolist()}


@torch.no_grad()
def logit_lens(model: nn.Module, ids: Tensor, position: int = -1, target: int | None = None, k: int = 5,
               label: Callable[[int], str] = str, forward: Callable[[Tensor], Tensor] | None = None) -> LensResult:
    """The lens at ``position`` of ids [1,T]; ``target`` defaults to the model's own top token.

    ``forward(ids)`` runs the model (default ``model(ids)``; BERT's padding etc. are its own).
    """
    spec = lens_spec(model)
    T = ids.shape[1]
    if not -T <= position < T:
        raise PlaygroundError(f"Position {position} is outside the {T} tokens.")
    with record_activations(model, spec.sites) as acts:
        (forward or model)(ids)
    stream = torch.stack([acts[s][0, position] for s in spec.sites])  # [layers, D]
    probs = spec.unembed(stream[:, None, :])[:, 0].float().softmax(-1)  # [layers, V]
    k = min(k, probs.shape[-1])
    top_p, top_i = probs.topk(k, dim=-1)  # [layers, k]
    tgt = int(probs[-1].argmax()) if target is None else int(target)
    if not 0 <= tgt < probs.shape[-1]:
        raise PlaygroundError(f"Target id {tgt} is outside the vocabulary of {probs.shape[-1]}.")
    rank = (probs > probs[:, tgt : tgt + 1]).sum(-1)  # [layers]: tokens strictly more likely
    return LensResult(layer_names(len(spec.sites)), position % T, tgt, label(tgt), top_i.cpu().numpy(), top_p.cpu().numpy(),
                      [[label(int(i)) for i in row] for row in top_i], rank.cpu().numpy(),
                      probs[:, tgt].cpu().numpy(), probs.cpu().numpy())


def layer_names(n_sites: int) -> list[str]:
    """Row labels: the embeddings, then the stream after each block."""
    return ["embeddings"] + [f"after block {i}" for i in range(n_sites - 1)]
