"""What "generate" means for the BERT families.

- ``bert_mlm``: fill-mask. The text holds [MASK] tokens; one forward pass gives, at each mask,
  the model's distribution over the vocabulary: the top-k candidates with their probabilities
  (one :class:`StepEvent` per mask: the best candidate, the k best as its alternatives).
- ``bert_classifier``: class probabilities of one text, as the text classifier shows them.
"""
from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from tokenizers import Tokenizer
from torch import Tensor

from playground.errors import DataError, PlaygroundError, TooBigError
from playground.families.bert.tokens import MASK
from playground.families.text_classifier.generation import (
    TextClassifierGenerator,
    softmax_of,
)
from playground.generation.events import Done, SampleResult, StepEvent
from playground.generation.family import Controls, FamilyGenerator, picked_token

if TYPE_CHECKING:  # bundle imports the family registry, which imports this module
    from playground.bundle import Bundle
    from playground.generation.api import GenerateRequest

MAX_TEXT_CHARS = 2000
MAX_MASKS = 8
MAX_TOP_K = 20


@dataclass
class MaskFill:
    """The candidates at one [MASK]: its position in the framed ids, ids and probabilities (best first)."""

    position: int
    ids: list[int]
    tokens: list[str]
    probs: list[float]


def token_str(tokenizer: Tokenizer, idx: int) -> str:
    """How one token reads on its own."""
    return tokenizer.id_to_token(int(idx)) or f"#{idx}"


def framed_ids(bundle: Bundle, text: str) -> list[int]:
    """[CLS] ids [SEP] of typed text; TooBigError when longer than the model reads, DataError when empty."""
    if not text or not text.strip():
        raise DataError(f"Type a text with {MASK} where a token should be predicted, e.g. 'the plot was {MASK} .'")
    if len(text) > MAX_TEXT_CHARS:
        raise TooBigError(f"The text has {len(text):,} characters; fill-mask reads at most {MAX_TEXT_CHARS:,}. Shorten it.")
    c = bundle.model_config
    tokenizer = bundle.tokenizer
    if tokenizer is None:
        raise DataError("This checkpoint has no tokenizer.json, so it cannot read a text.")
    ids = tokenizer.encode(text, add_special_tokens=False).ids
    if len(ids) > c.block_size - 2:
        raise TooBigError(f"The text is {len(ids)} tokens; this model reads at most {c.block_size - 2} "
                          f"between [CLS] and [SEP]. Shorten it.")
    return [c.cls_id, *ids, c.sep_id]


def fill_mask(bundle: Bundle, text: str, top_k: int = 5) -> tuple[list[MaskFill], list[int]]:
    """Top-k candidates at every [MASK] of ``text`` and the framed ids (one forward pass)."""
    if not 1 <= top_k <= MAX_TOP_K:
        raise DataError(f"Ask for 1 to {MAX_TOP_K} candidates per mask, got {top_k}.")
    ids = framed_ids(bundle, text)
    mask_id = bundle.model_config.mask_id
    where = [i for i, t in enumerate(ids) if t == mask_id]
    if not where:
        raise DataError(f"The text has no {MASK}: put {MASK} where a token should be predicted.")
    if len(where) > MAX_MASKS:
        raise TooBigError(f"The text has {len(where)} masks; fill-mask takes at most {MAX_MASKS}.")
    model = bundle.model
    device = next(model.parameters()).device
    with torch.inference_mode():
        logits = model(torch.tensor([ids], device=device))[0].float()  # [T,V]
    probs = logits[where].softmax(-1).cpu()  # [M,V]
    top = probs.topk(min(top_k, probs.shape[-1]), dim=-1)
    fills = [MaskFill(pos, top.indices[m].tolist(), [token_str(bundle.tokenizer, i) for i in top.indices[m].tolist()],
                      top.values[m].tolist()) for m, pos in enumerate(where)]
    return fills, ids


def fill_rows(fills: list[MaskFill]) -> list[dict[str, Any]]:
    """One table row per (mask, candidate): mask number, its token position, rank, token, probability."""
    return [{"mask": m + 1, "position": f.position, "rank": r + 1, "token": tok, "probability": p}
            for m, f in enumerate(fills) for r, (tok, p) in enumerate(zip(f.tokens, f.probs))]


class FillMaskGenerator(FamilyGenerator):
    """A masked-language model: a text with [MASK] in, the top candidates at each mask out."""

    what = "masked-language model (BERT)"
    controls = Controls(
        reads_image=False, input_label="Text with [MASK]", placeholder="e.g. the acting was [MASK] and the plot was bad",
        hint=f"Type a text with up to {MAX_MASKS} [MASK] tokens; each gets its top candidates with probabilities "
             "(the token table: one row per mask). Pick a mask to explain its prediction in Analyze.",
        prompt_required=True, pick_label="Pick a [MASK] to explain",
    )

    def stream(self, bundle: Bundle, request: GenerateRequest) -> Iterator[StepEvent | Done]:
        """One StepEvent per mask (its best candidate; alternatives = the top k), then a Done."""
        t0 = time.perf_counter()
        fills, ids = fill_mask(bundle, request.prompt, min(max(1, request.n_alternatives), MAX_TOP_K))
        events = []
        for m, f in enumerate(fills):
            alternatives = [(i, t, p) for i, t, p in zip(f.ids, f.tokens, f.probs)]
            event = StepEvent(0, m, f.position, f.ids[0], f.tokens[0], f.probs[0], 1.0, alternatives,
                              stopped=m == len(fills) - 1)
            events.append(event)
            yield event
        filled = list(ids)
        for f in fills:
            filled[f.position] = f.ids[0]
        text = bundle.tokenizer.decode(filled[1:-1], skip_special_tokens=False)
        sample = SampleResult(request.prompt, ids, [f.ids[0] for f in fills], text, "stop", events)
        yield Done([sample], None, len(fills), time.perf_counter() - t0, info={"fill_mask": fill_rows(fills)})

    def streams_live(self, request: Any) -> bool:
        return False

    def console_result(self, done: Done) -> str:
        lines = [f"{r['mask']}\t{r['rank']}\t{r['token']}\t{r['probability']:.4f}" for r in done.info["fill_mask"]]
        return "mask\trank\ttoken\tprobability\n" + "\n".join(lines) + f"\nfilled: {done.samples[0].text}\n"

    def summary(self, done: Done) -> str | None:
        return f"{len(done.samples[0].events)} mask(s) filled"

    def final_output(self, done: Done) -> str | None:
        return done.samples[0].text

    def next_token_logits(self, bundle: Bundle, prompt: str, target_prefix: Sequence[int] | None = None) -> Tensor:
        """The logits [V] at the first [MASK] of ``prompt`` (a masked model has no 'next' token)."""
        ids = framed_ids(bundle, prompt)
        if bundle.model_config.mask_id not in ids:
            raise PlaygroundError(f"A masked-language model predicts at {MASK}: put one in the text.")
        pos = ids.index(bundle.model_config.mask_id)
        device = next(bundle.model.parameters()).device
        with torch.inference_mode():
            return bundle.model(torch.tensor([ids], device=device))[0, pos].float().cpu()

    def why_context(self, sample: SampleResult, index: int) -> tuple[str, list[int] | None]:
        return sample.prompt, None

    def explain_target(self, done: Done, sample: int, index: int, tokenizer: Tokenizer | None = None) -> dict[str, Any]:
        """The text, the picked mask's position in the framed ids and its best candidate."""
        result, event = picked_token(done, sample, index)
        return {"input": result.prompt, "target_position": event.position, "target_token": event.text,
                "target_id": event.token_id, "ids": list(result.prompt_ids)}


def bert_class_probs(bundle: Bundle, text: str) -> tuple[Tensor, list[int]]:
    """Softmax over the classes [C] of ``text`` ([CLS] text [SEP]) and the framed ids."""
    ids = framed_ids(bundle, text)
    if len(ids) < 3:
        raise DataError("The text has no tokens to read; type a sentence.")
    return softmax_of(bundle.model, ids), ids


class BertClassifierGenerator(TextClassifierGenerator):
    """A fine-tuned BERT: a text in, class probabilities out (the text classifier's view)."""

    what = "BERT text classifier"

    def class_probs(self, bundle: Bundle, text: str) -> tuple[Tensor, list[int]]:
        """The text framed as [CLS] text [SEP] (:func:`bert_class_probs`)."""
        return bert_class_probs(bundle, text)
