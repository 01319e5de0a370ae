"""The BERT families' validation examples.

- MLM: lines of the validation text with one token replaced by [MASK] (Generate; the reference
  is the hidden token), and for the experiments validation windows with a [MASK] in the middle.
- classifier: the text classifier's validation reviews (with rationales); held-out queries on
  the [CLS]-framed validation texts.
"""
from __future__ import annotations

import dataclasses
import random
from typing import TYPE_CHECKING, Any

import torch
from tokenizers import Tokenizer
from torch import Generator

from playground.data.corpora import load_corpus
from playground.data.examples import AnalysisExample, Example, FamilyExamples
from playground.data.policy import DataPolicy
from playground.data.reviews import make_reviews
from playground.errors import DataError, OfflineError, PlaygroundError
from playground.families.bert.mlm_training import REVIEWS
from playground.families.bert.tokens import MASK
from playground.families.text_classifier.examples import TextExamples, rationale_mask
from playground.families.text_classifier.training import LabelledTextConfig
from playground.workspace import Workspace

if TYPE_CHECKING:  # bundle imports the family registry, which imports this module
    from playground.bundle import Bundle


def _no_fetch(url: str) -> bytes:
    raise OfflineError("not downloading for validation samples")


def validation_lines(data: dict[str, Any], workspace: Workspace | None, policy: DataPolicy, n: int) -> list[str]:
    """Up to ``n`` non-empty lines from the tail of the MLM corpus (built in, generated or uploaded; no download)."""
    corpus = data.get("corpus")
    if not corpus or not isinstance(corpus, str):
        return []
    if corpus == REVIEWS:
        count = min(int(data.get("n_reviews", 20000)), 2000)
        reviews = make_reviews(count, int(data.get("reviews_seed", 1)), float(data.get("negation", 0.25)),
                               float(data.get("intensify", 0.25)), cues=data.get("cues") or None)
        text = "\n".join(r.text for r in reviews)
    else:
        text = load_corpus(corpus, workspace=workspace, fetch=_no_fetch, policy=policy).text
    if data.get("max_chars"):
        text = text[: int(data["max_chars"])]
    val = text[int(len(text) * (1 - float(data.get("val_fraction", 0.1)))):]
    lines = [ln.strip() for ln in val.splitlines() if len(ln.split()) >= 3]
    step = max(1, len(lines) // max(1, n))
    return lines[::step][:n]


def masked_line(line: str, by_char: bool, max_chars: int, rng: random.Random) -> tuple[str, str] | None:
    """The line (cut to ``max_chars``) with one word (or, by_char, one letter of a word) as [MASK],
    and the hidden token; None when it has no word of letters."""
    words = line[:max_chars].split()
    candidates = [i for i, w in enumerate(words) if w.isalpha() and len(w) > (2 if by_char else 1)]
    if not candidates:
        return None
    i = rng.choice(candidates)
    word = words[i]
    if by_char:
        k = rng.randrange(len(word))
        hidden, words[i] = word[k], word[:k] + MASK + word[k + 1:]
    else:
        hidden, words[i] = word.lower(), MASK
    return " ".join(words), hidden


class MLMExamples(FamilyExamples):
    """Masked lines of the validation text."""

    def for_generate(self, data: dict[str, Any], n: int, model: dict[str, Any], workspace: Workspace | None,
                     policy: DataPolicy) -> list[Example]:
        by_char = data.get("tokenizer", "char") == "char"
        block = int(model.get("block_size", 64)) - 3
        rng = random.Random(0)
        out = []
        for line in validation_lines(data, workspace, policy, n):
            masked = masked_line(line, by_char, block if by_char else 4 * block, rng)
            if masked is not None:
                out.append(Example(masked[0][:60], masked[0], masked[1]))
        return out

    def for_analysis(self, data: dict[str, Any], n: int) -> list[AnalysisExample]:
        """None: the Analyze tab takes a typed text with [MASK]."""
        return []

    def held_out(self, bundle: Bundle, prepared: Any, tokenizer: Tokenizer | None, n: int, gen: Generator) -> Any:
        """Validation windows with the middle token masked; each explains the prediction there."""
        from playground.analysis.experiments.data import (
            HeldOut,  # the analyzer loads late (start-up time)
        )
        from playground.families.bert.explain import prepare_mlm

        data = prepared.payload
        rows = [r for r in data.val_rows(1, 4 * n)[0] if len(r) >= 3]
        if not rows:
            raise DataError("The validation text has no examples of 3 tokens or more.")
        pick = torch.randperm(len(rows), generator=gen)[:n].tolist()
        device = next(bundle.model.parameters()).device
        queries, units, gold, labels = [], [], [], []
        for k in pick:
            ids, _ = data.frame([rows[k]])  # [1,T] one segment's framing is enough for a query
            ids = [i for i in ids[0].tolist() if i != data.pad_id]
            mid = 1 + len(rows[k]) // 2
            gold.append(ids[mid])
            ids[mid] = data.mask_id
            p = prepare_mlm(bundle, ids, mid, None, device)
            queries.append(p.query)
            units.append(p.units)
            labels.append(f"val #{k}: [MASK] at {mid}")
        return HeldOut(bundle.family, "lm", queries, labels, units, gold, [None] * len(queries),
                       description=f"{len(queries)} validation examples, the middle token masked")


def labelled_fields(data: dict[str, Any]) -> dict[str, Any]:
    """The text classifier's `[data]` keys of a fine-tuning record (n_train, init_from, ... dropped)."""
    names = {f.name for f in dataclasses.fields(LabelledTextConfig)}
    return {k: v for k, v in data.items() if k in names}


class BertTextExamples(TextExamples):
    """The text classifier's validation reviews, read through [CLS] text [SEP]."""

    def for_generate(self, data: dict[str, Any], n: int, model: dict[str, Any], workspace: Workspace | None,
                     policy: DataPolicy) -> list[Example]:
        return super().for_generate(labelled_fields(data), n, model, workspace, policy)

    def for_analysis(self, data: dict[str, Any], n: int) -> list[AnalysisExample]:
        return super().for_analysis(labelled_fields(data), n)

    def held_out(self, bundle: Bundle, prepared: Any, tokenizer: Tokenizer | None, n: int, gen: Generator) -> Any:
        """Validation texts in a seeded random order; each explains its predicted class."""
        from playground.analysis.experiments.data import (
            HeldOut,  # the analyzer loads late (start-up time)
        )
        from playground.families.bert.explain import prepare_bert_classifier

        split = prepared.payload
        if not split.val_ids:
            raise DataError("The validation split has no texts.")
        idx = torch.randperm(len(split.val_ids), generator=gen)[: min(n, len(split.val_ids))].tolist()
        device = next(bundle.model.parameters()).device
        names = prepared.class_names or bundle.class_names or []
        queries, units, masks, gold, kept = [], [], [], [], []
        for i in idx:
            review = split.val_reviews[i]
            words = rationale_mask(review, len(review.words))
            try:
                p = prepare_bert_classifier(bundle, split.val_ids[i], None, words, int(split.val_labels[i]),
                                            review.text, device)
            except PlaygroundError:
                continue
            queries.append(p.query)
            units.append(p.units)
            masks.append(p.mask)
            gold.append(int(split.val_labels[i]))
            kept.append(i)
        labels = [f"val #{i}: {names[g] if g < len(names) else g}" for i, g in zip(kept, gold)]
        return HeldOut(bundle.family, "classifier", queries, labels, units, gold, masks, list(names),
                       description=f"{len(queries)} validation texts",
                       sources=[split.val_reviews[i].text for i in kept])
