"""What "generate" means for a sequence-to-sequence model: decode a source, greedily or by beam search."""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import torch
from tokenizers import Tokenizer
from torch import Tensor

from playground.generation.api import GenerateRequest, source_ids
from playground.generation.events import Done, SampleResult, StepEvent
from playground.generation.family import Controls, FamilyGenerator, picked_token
from playground.generation.seq2seq import stream_beam, stream_greedy

if TYPE_CHECKING:  # bundle imports the family registry, which imports this module
    from playground.bundle import Bundle


class Seq2SeqGenerator(FamilyGenerator):
    """An encoder-decoder: a source in, its decoded output out, with the attention alignment."""

    what = "sequence-to-sequence model"
    controls = Controls(
        reads_image=False, input_label="Source", placeholder="Type a source sequence",
        hint="Type a source sequence; the model decodes its output.", beam=True, alignment=True,
        prompt_required=True,
    )

    def stream(self, bundle: Bundle, request: GenerateRequest) -> Iterator[StepEvent | Done]:
        """Greedy decoding (beam width 1) or beam search with GNMT length penalty."""
        src = source_ids(bundle, request.prompt)
        if request.beam_width <= 1:
            yield from stream_greedy(bundle.model, bundle.tokenizer, src, max_new_tokens=request.max_new_tokens,
                                     n_alternatives=request.n_alternatives, source_text=request.prompt)
        else:
            yield from stream_beam(bundle.model, bundle.tokenizer, src, beam_width=request.beam_width,
                                   alpha=request.length_penalty, max_new_tokens=request.max_new_tokens,
                                   n_alternatives=request.n_alternatives, source_text=request.prompt)

    def streams_live(self, request: GenerateRequest) -> bool:
        """Greedy tokens are final as they come; a beam's best hypothesis is known only at the end."""
        return request.beam_width <= 1

    def console_result(self, done: Done) -> str:
        return done.samples[0].text + "\n"

    def summary(self, done: Done) -> str | None:
        """The output's score and the decoder that found it."""
        s = done.samples[0]
        return f"score {s.score:.3f}" + (f" (beam {done.info['beam_width']}, α {done.info['alpha']})"
                                         if done.info.get("decoder") == "beam" else " (greedy)")

    def final_output(self, done: Done) -> str | None:
        return done.samples[0].text

    def next_token_logits(self, bundle: Bundle, prompt: str, target_prefix: Sequence[int] | None = None) -> Tensor:
        """Logits [V] of the decoder after <bos> and the target tokens `target_prefix`, for source `prompt`."""
        model = bundle.model
        device = next(model.parameters()).device
        src = torch.tensor([source_ids(bundle, prompt)], device=device)  # [1,S]
        state = model.start(src)
        y = torch.tensor([bundle.model_config.bos_id], device=device)  # [1]
        logits = None
        for tok in [None, *(target_prefix or [])]:
            if tok is not None:
                y = torch.tensor([tok], device=device)
            logits, _, state = model.step(state, y)  # logits [1,V]
        return logits[0].float().cpu()  # type: ignore[index]

    def why_context(self, sample: SampleResult, index: int) -> tuple[str, list[int] | None]:
        """The source, and the output tokens before token `index`."""
        return sample.prompt, [e.token_id for e in sample.events[:index]]

    def explain_target(self, done: Done, sample: int, index: int, tokenizer: Tokenizer | None = None) -> dict[str, Any]:
        """`input` is the source text, `target_position` the index of the target in the output
        (0-based, after <bos>), `output_ids` the output tokens before and including it."""
        result, ev = picked_token(done, sample, index)
        events = result.events
        return {"input": result.prompt, "source_ids": list(result.prompt_ids), "target_position": index,
                "target_token": (result.target_tokens or [ev.text])[index], "target_id": ev.token_id,
                "output_ids": [e.token_id for e in events[: index + 1]], "output": result.text}
