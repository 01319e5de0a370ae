"""Text-classifier validation examples: the texts of the validation split, rebuilt from the data's seed.

Generated reviews carry their ground-truth rationale (the tokens that decide the label) as a
[T] bool mask, the text twin of vit-shapes' object masks.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from tokenizers import Tokenizer
from torch import Generator, Tensor

from playground.data.examples import AnalysisExample, Example, FamilyExamples
from playground.data.policy import DataPolicy
from playground.data.reviews import REVIEW_CLASSES, Review, make_reviews
from playground.data.splits import split_indices
from playground.errors import DataError
from playground.families.text_classifier.training import LabelledTextConfig, TextSplit
from playground.workspace import Workspace

if TYPE_CHECKING:  # bundle imports the family registry, which imports this module
    from playground.bundle import Bundle


def rationale_mask(review: Review, n_tokens: int) -> Tensor | None:
    """The review's rationale as [n_tokens] bool (None when it has none); positions past the cut are dropped."""
    if review.rationale is None:
        return None
    mask = torch.zeros(n_tokens, dtype=torch.bool)
    keep = [p for p in review.rationale if p < n_tokens]
    mask[keep] = True
    return mask


def _generated_val(data: dict[str, Any]) -> list[Review]:
    """The validation reviews of a generated-reviews `[data]` record ([] for uploads and downloads)."""
    dc = LabelledTextConfig(**data)
    if dc.texts != "reviews":
        return []
    reviews = make_reviews(dc.n, dc.seed, dc.negation, dc.intensify)
    _, val = split_indices(len(reviews), dc.val_fraction, dc.seed)
    return [reviews[i] for i in val]


class TextExamples(FamilyExamples):
    """Examples from the generated reviews (uploads and SST-2 are not rebuilt here: no file reads, no network)."""

    def for_generate(self, data: dict[str, Any], n: int, model: dict[str, Any], workspace: Workspace | None,
                     policy: DataPolicy) -> list[Example]:
        """Validation reviews with their true class."""
        return [Example(f"{REVIEW_CLASSES[r.label]}: {r.text[:60]}", r.text, REVIEW_CLASSES[r.label])
                for r in _generated_val(data)[:n]]

    def for_analysis(self, data: dict[str, Any], n: int) -> list[AnalysisExample]:
        """Validation reviews with their label and rationale mask (one flag per word = per token)."""
        return [AnalysisExample(f"val #{i}: {REVIEW_CLASSES[r.label]}: {r.text[:50]}", mask=rationale_mask(r, len(r.words)),
                                true_label=r.label, source=r.text) for i, r in enumerate(_generated_val(data)[:n])]

    def held_out(self, bundle: Bundle, prepared: Any, tokenizer: Tokenizer | None, n: int, gen: Generator) -> Any:
        """Validation texts in a seeded random order; each explains its predicted class."""
        # Function-level: the analysis package is loaded only when an experiment runs (start-up
        # time), and it asks playground.families, which imports this module (a cycle at the top).
        from playground.analysis.experiments.data import HeldOut, text_classifier_queries
        from playground.analysis.inputs import token_label

        split: TextSplit = prepared.payload
        if not split.val_ids:
            raise DataError("The validation split has no texts.")
        idx = torch.randperm(len(split.val_ids), generator=gen)[: min(n, len(split.val_ids))].tolist()
        queries = text_classifier_queries(bundle.model, [split.val_ids[i] for i in idx], tokenizer)
        names = prepared.class_names or bundle.class_names or []
        gold = [int(split.val_labels[i]) for i in idx]
        masks = [rationale_mask(split.val_reviews[i], len(split.val_ids[i])) for i in idx]
        units = [[token_label(tokenizer, t) for t in split.val_ids[i]] for i in idx]
        labels = [f"val #{i}: {names[g] if g < len(names) else g}" for i, g in zip(idx, gold)]
        return HeldOut(bundle.family, "classifier", queries, labels, units, gold, masks, list(names),
                       description=f"{len(idx)} validation texts", sources=[split.val_reviews[i].text for i in idx])
