"""Head analysis of a checkpoint on its own validation data: one call, one :class:`HeadReport`.

Data per family (rebuilt by the trainer's adapter, :func:`prepare_data`):

- GPT: ``n`` windows of block_size validation tokens drawn with ``seed``; loss = next-token
  cross-entropy. Induction scores and the in-context loss use ``n`` random token sequences of
  length L = block_size // 2 repeated twice (tokens drawn from the vocabulary without specials).
- ViT: the first ``n`` validation images; loss = cross-entropy of the class.
- Transformer text classifier: the first ``n`` validation texts (right-padded per batch; the
  positional scores then include the padded query rows); loss = cross-entropy of the class.
- Transformer seq2seq: the first ``n`` validation pairs, teacher-forced; loss = token
  cross-entropy without padding (the encoder's, decoder's and cross-attention heads).

Positional scores are read from self-attention maps (square, one per module); cross-attention
modules have none. Ablation, gradient importance and pruning use every multi-head module.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import pandas as pd
import torch
from torch import Tensor, nn

from playground.analysis.experiments.core import make_generator
from playground.analysis.experiments.data import prepare_data
from playground.analysis.heads.ablation import (
    Mode,
    ablation_losses,
    gradient_importance,
    mean_loss,
    pruning_curve,
    ranking,
    replacements_for,
)
from playground.analysis.heads.batches import HeadBatches
from playground.analysis.heads.mask import head_modules
from playground.analysis.heads.scores import (
    in_context_losses,
    induction_scores,
    positional_scores,
    repeated_random_tokens,
    uniform_causal_baseline,
)
from playground.analysis.inputs import special_id_set
from playground.bundle import Bundle
from playground.errors import PlaygroundError
from playground.families import get_family
from playground.models.attention import record_attention
from playground.workspace import Workspace

ORDERS = ("gradient", "ablation")  # how the pruning curve orders the heads


@dataclass
class HeadReport:
    """Every head score of one model. Per-head values are ``{module: [H]}`` in module order."""

    checkpoint: str
    family: str
    modules: list[str]
    n_head: list[int]
    n_examples: int
    clean_loss: float
    ablation: dict[str, dict[str, list[float]]]  # mode -> module -> loss with that head ablated
    gradient: dict[str, list[float]]  # Michel et al.'s |dL/dxi_h|
    positional: dict[str, dict[str, list[float]]]  # score -> module -> mean attention mass
    pruning_mode: str = "zero"
    pruning: dict[str, dict[str, Any]] = field(default_factory=dict)  # order -> {"order": [[m,h]..], "loss": [..]}
    induction: dict[str, list[float]] = field(default_factory=dict)  # GPT only
    induction_length: int = 0
    in_context: dict[str, float] = field(default_factory=dict)  # loss on the first/second copy, drop
    uniform: dict[str, float] = field(default_factory=dict)  # causal models: the score of uniform attention

    @property
    def total_heads(self) -> int:
        return sum(self.n_head)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict."""
        return asdict(self)

    def score_tables(self) -> dict[str, dict[str, list[float]]]:
        """Every per-head score by name: ablation deltas (loss increase), gradient, positional, induction."""
        tables: dict[str, dict[str, list[float]]] = {}
        for mode, losses in self.ablation.items():
            tables[f"ablation_{mode}"] = {m: [v - self.clean_loss for v in vs] for m, vs in losses.items()}
        tables["gradient"] = self.gradient
        tables.update(self.positional)
        if self.induction:
            tables["induction"] = self.induction
        return tables

    def frame(self) -> pd.DataFrame:
        """Long frame: score, module, layer, head, value (one row per head and score)."""
        rows = []
        layer = {m: i for i, m in enumerate(self.modules)}
        for score, table in self.score_tables().items():
            for m, values in table.items():
                rows += [{"score": score, "module": m, "layer": layer[m], "head": h, "value": float(v)}
                         for h, v in enumerate(values)]
        return pd.DataFrame(rows, columns=["score", "module", "layer", "head", "value"])

    def pruning_frame(self) -> pd.DataFrame:
        """Long frame: order, removed (heads), fraction (of all heads), loss."""
        rows = []
        for order, curve in self.pruning.items():
            n = len(curve["loss"]) - 1
            rows += [{"order": order, "removed": k, "fraction": k / n if n else 0.0, "loss": float(v)}
                     for k, v in enumerate(curve["loss"])]
        return pd.DataFrame(rows, columns=["order", "removed", "fraction", "loss"])

    def top(self, score: str, k: int = 3) -> list[tuple[str, int, float]]:
        """The ``k`` heads with the highest value of ``score``: (module, head, value)."""
        table = self.score_tables()[score]
        items = [(m, h, float(v)) for m, vs in table.items() for h, v in enumerate(vs)]
        return sorted(items, key=lambda t: -t[2])[:k]

    def loss_at(self, fraction: float, order: str = "gradient") -> float:
        """The pruning curve's loss with round(fraction * all heads) removed."""
        losses = self.pruning[order]["loss"]
        return float(losses[round(fraction * (len(losses) - 1))])


# ----------------------------------------------------------------------------------------
# Per-family data


def family_data(bundle: Bundle, n: int, seed: int = 0, batch_size: int = 16,
                workspace: Workspace | None = None, device: str = "cpu") -> HeadBatches:
    """(loss data, the model inputs of each batch as positional args): the family's explainer
    batches its own prepared validation data (`FamilyExplainer.head_data`)."""
    _, prep, _ = prepare_data(bundle, workspace)
    explainer = get_family(bundle.family).explainer
    found = explainer.head_data(prep.payload, n, seed, batch_size, device)
    if found is None:
        raise PlaygroundError(f"Head analysis has no validation batches for {bundle.name!r} ({bundle.family}); it "
                              "covers GPT text models, ViT, the Transformer text classifier and the Transformer seq2seq.")
    return found


# ----------------------------------------------------------------------------------------
# Scores


@torch.no_grad()
def recorded_positional(model: nn.Module, inputs: list[tuple]) -> dict[str, dict[str, list[float]]]:
    """Positional scores of every self-attention module, averaged over the batches (weighted by size)."""
    total: dict[str, dict[str, Tensor]] = {}
    count = 0
    for args in inputs:
        with record_attention(model) as maps:
            model(*args)
        square = {name: w for name, w in maps.items() if w.shape[-1] == w.shape[-2] and w.ndim == 4}
        B = args[0].shape[0]
        for score, table in positional_scores(square).items():
            for name, values in table.items():
                acc = total.setdefault(score, {})
                acc[name] = acc.get(name, 0) + torch.tensor(values, dtype=torch.float64) * B
        count += B
    return {score: {name: (v / count).tolist() for name, v in table.items()} for score, table in total.items()}


@torch.no_grad()
def gpt_induction(model: nn.Module, vocab_size: int, specials: set[int], length: int, n: int, seed: int,
                  device: str = "cpu") -> tuple[dict[str, list[float]], dict[str, float]]:
    """Induction scores and in-context losses on ``n`` random sequences of ``length`` repeated twice."""
    vocab = [i for i in range(vocab_size) if i not in specials]
    tokens = repeated_random_tokens(vocab, length, n, make_generator(seed)).to(device)  # [N,2L]
    with record_attention(model) as maps:
        logits = model(tokens)  # [N,2L,V]
    return induction_scores(dict(maps), length), in_context_losses(logits, tokens, length)


def analyse_heads(bundle: Bundle, n: int = 64, seed: int = 0, mode: Mode = "zero", batch_size: int = 16,
                  workspace: Workspace | None = None, device: str = "cpu") -> HeadReport:
    """Every head score of ``bundle`` on ``n`` validation examples; pruning by ``mode`` ablation."""
    model = bundle.model
    modules = head_modules(model)
    if not modules:
        raise PlaygroundError(f"{bundle.name!r} has no multi-head attention to analyse.")
    data, inputs = family_data(bundle, n, seed, batch_size, workspace, device)
    clean = mean_loss(model, data)
    ablation = {m: ablation_losses(model, data, m) for m in ("zero", "mean")}  # type: ignore[arg-type]
    gradient = gradient_importance(model, data)
    repl = replacements_for(model, data, mode)
    orders = {"gradient": ranking(gradient), "ablation": ranking(ablation[mode], clean)}
    pruning = {}
    for name, ranked in orders.items():
        order = [head for head, _ in ranked]
        pruning[name] = {"order": [[m, h] for m, h in order],
                         "loss": pruning_curve(model, data, order, mode, repl)}
    report = HeadReport(
        checkpoint=bundle.name, family=bundle.family, modules=list(modules),
        n_head=[hm.n_head for hm in modules.values()], n_examples=sum(len(b[0]) for b in data.batches),
        clean_loss=clean, ablation=ablation, gradient=gradient,
        positional=recorded_positional(model, inputs), pruning_mode=mode, pruning=pruning,
    )
    if get_family(bundle.family).explainer.induction:
        cfg = bundle.model_config
        length = cfg.block_size // 2
        specials = special_id_set(bundle.tokenizer) if bundle.tokenizer is not None else set()
        report.induction, report.in_context = gpt_induction(model, cfg.vocab_size, specials, length, n, seed, device)
        report.induction_length = length
        T = int(data.batches[0][0].shape[1])  # window length
        report.uniform = {"previous": uniform_causal_baseline(T, -1), "first": uniform_causal_baseline(T, -1),
                          "induction": uniform_causal_baseline(2 * length, first_query=length)}
    return report
