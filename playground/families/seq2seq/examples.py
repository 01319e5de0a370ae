"""Seq2seq validation examples: source/target pairs of the validation split, rebuilt from the pair set's seed."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from tokenizers import Tokenizer
from torch import Generator

from playground.data.examples import AnalysisExample, Example, FamilyExamples
from playground.data.pairs import load_pair_set
from playground.data.policy import DataPolicy
from playground.data.splits import split_indices
from playground.errors import DataError
from playground.training.data import PairDataConfig, load_pairs
from playground.workspace import Workspace

if TYPE_CHECKING:  # bundle imports the family registry, which imports this module
    from playground.bundle import Bundle


class PairExamples(FamilyExamples):
    """Examples from a generated pair set or the user's uploaded TSV."""

    def for_generate(self, data: dict[str, Any], n: int, model: dict[str, Any], workspace: Workspace | None,
                     policy: DataPolicy) -> list[Example]:
        """Validation sources with their reference outputs."""
        name = data.get("pairs")
        if not name or name == "tsv" and not data.get("path"):
            return []
        opts: dict[str, Any] = {}
        if name == "tsv":
            opts["path"] = policy.resolve(data["path"], "data.path")  # uploads only
        else:
            for key in ("min_len", "max_len"):
                if data.get(key):
                    opts[key] = data[key]
        examples = load_pair_set(name, data.get("n") or None, int(data.get("seed", 0)), **opts)
        _, val = split_indices(len(examples), float(data.get("val_fraction", 0.1)), int(data.get("seed", 0)))
        return [Example(f"{examples[i].src} → {examples[i].tgt}", examples[i].src, examples[i].tgt) for i in val[:n]]

    def for_analysis(self, data: dict[str, Any], n: int) -> list[AnalysisExample]:
        """Validation sources with reference and gold alignment; none for TSV uploads."""
        pc = PairDataConfig(**data)
        if pc.pairs == "tsv":
            return []
        pairs = load_pairs(pc)
        _, val = split_indices(len(pairs), pc.val_fraction, pc.seed)
        return [AnalysisExample(f"val #{i}: {pairs[i].src}", source=pairs[i].src, reference=pairs[i].tgt,
                                alignment=pairs[i].alignment) for i in val[:n]]

    def held_out(self, bundle: Bundle, prepared: Any, tokenizer: Tokenizer | None, n: int, gen: Generator) -> Any:
        """Validation sources in a seeded random order; each explains one step of the model's greedy output."""
        # Function-level: the analysis package is loaded only when an experiment runs (start-up
        # time), and it asks playground.families, which imports this module (a cycle at the top).
        from playground.analysis.experiments.data import HeldOut, seq2seq_queries
        from playground.analysis.inputs import token_label

        data = prepared.payload
        n_val = len(data.val_src)
        if n_val == 0:
            raise DataError("The validation split has no pairs.")
        idx = torch.randperm(n_val, generator=gen)[: min(n, n_val)].tolist()
        queries, gold, steps = seq2seq_queries(bundle.model, [data.val_src[i] for i in idx], gen, tokenizer,
                                               [data.val_tgt[i] for i in idx])
        units = [[token_label(tokenizer, int(t)) for t in q.inputs[0].tolist()] for q in queries]
        labels = [f"val #{i}: {data.val_text[i][0]!r}, output step {s}" for i, s in zip(idx, steps)]
        return HeldOut(bundle.family, "seq2seq", queries, labels, units, gold, [None] * len(queries),
                       description=f"{len(queries)} validation pairs, one output step each")
