"""GPT's validation examples: lines of the validation text (Generate) and windows of it (experiments)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from tokenizers import Tokenizer
from torch import Generator, Tensor

from playground.data.corpora import load_corpus
from playground.data.examples import AnalysisExample, Example, FamilyExamples
from playground.data.policy import DataPolicy
from playground.errors import DataError, OfflineError
from playground.workspace import Workspace

if TYPE_CHECKING:  # bundle imports the family registry, which imports this module
    from playground.bundle import Bundle


def _no_fetch(url: str) -> bytes:
    raise OfflineError("not downloading for validation samples")


class TextExamples(FamilyExamples):
    """Examples from the tail of a text corpus (the trainer's validation split of it)."""

    def for_generate(self, data: dict[str, Any], n: int, model: dict[str, Any], workspace: Workspace | None,
                     policy: DataPolicy) -> list[Example]:
        """Prompts starting at line beginnings of the validation text, spread evenly over it."""
        corpus = data.get("corpus")
        if not corpus or not isinstance(corpus, str):
            return []
        text = load_corpus(corpus, workspace=workspace, fetch=_no_fetch, policy=policy).text  # built in or uploads only
        if data.get("max_chars"):
            text = text[: int(data["max_chars"])]
        val = text[int(len(text) * (1 - float(data.get("val_fraction", 0.1)))) :]
        length = max(8, min(120, int(model.get("block_size", 64))))
        starts = [i + 1 for i, c in enumerate(val[:-length]) if c == "\n" and val[i + 1 : i + 2].strip()]
        if not starts:
            starts = list(range(0, max(1, len(val) - length), max(1, len(val) // (n + 1))))
        step = max(1, len(starts) // n)
        out = []
        for s in starts[::step][:n]:
            piece = val[s : s + length]
            piece = piece[: piece.rfind("\n")] if "\n" in piece[length // 3 :] else piece
            first = piece.strip().splitlines()[0] if piece.strip() else piece
            out.append(Example(first[:60], piece))
        return out

    def for_analysis(self, data: dict[str, Any], n: int) -> list[AnalysisExample]:
        """None: the Analyze tab takes typed text for a language model."""
        return []

    def held_out(self, bundle: Bundle, prepared: Any, tokenizer: Tokenizer | None, n: int, gen: Generator) -> Any:
        """Windows of ``block_size`` validation tokens; each explains the prediction after its last token."""
        # Function-level: the analysis package is loaded only when an experiment runs (start-up
        # time), and it asks playground.families, which imports this module (a cycle at the top).
        from playground.analysis.experiments.data import HeldOut, lm_queries
        from playground.analysis.inputs import token_label

        model = bundle.model
        val: Tensor = prepared.payload.val
        T = model.config.block_size
        high = len(val) - T
        if high < 1:
            raise DataError(f"The validation text has {len(val)} tokens, too few for windows of {T}.")
        starts = torch.randint(high, (n,), generator=gen)
        windows = torch.stack([val[s : s + T] for s in starts.tolist()])  # [N,T]
        gold = [int(val[s + T]) for s in starts.tolist()]
        queries = lm_queries(model, windows, tokenizer)
        units = [[token_label(tokenizer, int(t)) for t in w.tolist()] for w in windows]
        labels = [f"val @{s}: …{''.join(u[-12:])!r} → ?" for s, u in zip(starts.tolist(), units)]
        return HeldOut(bundle.family, "lm", queries, labels, units, gold, [None] * n,
                       description=f"{n} windows of {T} tokens from the validation text")
