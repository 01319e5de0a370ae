"""What "generate" means for GPT: continue a prompt by sampling, one token at a time."""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import altair as alt
import pandas as pd
import torch
from tokenizers import Tokenizer
from torch import Tensor

from playground.charts.experts import expert_load_chart, expert_tokens_chart
from playground.charts.layout import FIT_X
from playground.families.gpt.experts import expert_load, routing_frame
from playground.families.gpt.sizes import kv_cache_note
from playground.generation.api import GenerateRequest, prompt_ids
from playground.generation.batching import batching_enabled, stream_batched
from playground.generation.events import Done, SampleResult, StepEvent
from playground.generation.family import Controls, FamilyGenerator, picked_token
from playground.generation.lm import start_ids, stream_lm
from playground.generation.text import token_text

if TYPE_CHECKING:  # bundle imports the family registry, which imports this module
    from playground.bundle import Bundle


class LMGenerator(FamilyGenerator):
    """A language model: a prompt in, sampled continuations out (streamed token by token)."""

    what = "language model (GPT)"
    controls = Controls(
        reads_image=False, input_label="Prompt", placeholder="Type a prompt (empty = start from scratch)",
        hint="Type a prompt; the model continues it.", sampling=True, echo_prompt=True, context_modes=True,
    )

    def stream(self, bundle: Bundle, request: GenerateRequest) -> Iterator[StepEvent | Done]:
        """Sample `num_samples` continuations, batched with every other user of the same checkpoint
        (one forward pass per step for all), or alone when batching is off."""
        ids = prompt_ids(bundle, request.prompt)
        stop_ids = ()
        if bundle.tokenizer is not None:
            eot = bundle.tokenizer.token_to_id("<|endoftext|>")
            stop_ids = (eot,) if eot is not None and ids != [eot] else ()
        decode = stream_batched if batching_enabled() else stream_lm
        for event in decode(
            bundle.model, bundle.tokenizer, ids, max_new_tokens=request.max_new_tokens, sampling=request.sampling,
            seed=request.seed, num_samples=request.num_samples, stop=request.stop, stop_ids=stop_ids,
            use_cache=request.use_cache, n_alternatives=request.n_alternatives, prompt_text=request.prompt,
            context=request.context,
        ):
            if isinstance(event, Done):
                event.info["kv_cache"] = self._cache_note(bundle, event, len(ids) or 1)
            yield event

    @staticmethod
    def _cache_note(bundle: Bundle, done: Done, prompt_len: int) -> str:
        """The KV cache line of a run's stats, with the full multi-head cache beside a grouped-query
        or windowed one. 'extend' holds every position of the run; 'window' a cache of block_size
        positions (a windowed ring when the run decoded alone: Done.info has its kv_cache_bytes; a
        batched run's row cache keeps block_size positions whatever the window)."""
        c = bundle.model_config
        if done.info.get("context") == "extend":
            positions = prompt_len + max((len(s.events) for s in done.samples), default=0)
        else:
            positions = int(c.block_size)
            if "kv_cache_bytes" not in done.info:  # batched: the rows are not windowed
                c = replace(c, attn_window=0)
        element = next(bundle.model.parameters()).element_size()
        return kv_cache_note(c, positions, len(done.samples), element)

    def summary(self, done: Done) -> str | None:
        """The run's mode when it went past block_size, and its KV cache (see _cache_note)."""
        parts = [f"context {done.info['context']}"] if done.info.get("context") == "extend" else []
        if done.info.get("kv_cache"):
            parts.append(done.info["kv_cache"])
        return " · ".join(parts) or None

    def streams_live(self, request: GenerateRequest) -> bool:
        """One sample streams live; several are printed one after another at the end."""
        return request.num_samples == 1

    def console_result(self, done: Done) -> str:
        return "".join(f"--- sample {i + 1} ---\n{sample.full_text}\n" for i, sample in enumerate(done.samples))

    def shows_routing(self, bundle: Bundle) -> bool:
        """A GPT with a mixture-of-experts FFN (ffn_experts > 1) shows its expert load."""
        return bool(getattr(bundle.model_config, "moe", False))

    def routing_view(self, bundle: Bundle, done: Done) -> tuple[Any, pd.DataFrame] | None:
        """Each expert's share per layer (above) and the top expert of each token per layer (below)
        for the first sample's prompt + output (its last block_size tokens); the data is the
        routing frame (one row per token, layer and chosen expert)."""
        if not self.shows_routing(bundle) or not done.samples:
            return None
        text = done.samples[0].full_text
        if not text:
            return None
        routes = routing_frame(bundle.model, bundle.tokenizer, text)
        load = expert_load(bundle.model, bundle.tokenizer, text)
        charts = [expert_load_chart(load), expert_tokens_chart(routes)]
        for chart in charts:  # sized one by one; a concatenation takes no per-view autosize
            chart.autosize = alt.Undefined
        return alt.vconcat(*charts).properties(autosize=FIT_X), routes

    def next_token_logits(self, bundle: Bundle, prompt: str, target_prefix: Sequence[int] | None = None) -> Tensor:
        """Logits [V] after the last `block_size` tokens of the prompt (the start token when empty)."""
        ids = prompt_ids(bundle, prompt) or start_ids(bundle.tokenizer)
        block = int(bundle.model_config.block_size)
        x = torch.tensor([ids[-block:]], device=next(bundle.model.parameters()).device)  # [1,T]
        return bundle.model(x, last_only=True)[0, -1].float().cpu()

    def why_context(self, sample: SampleResult, index: int) -> tuple[str, list[int] | None]:
        """The prompt plus the text generated before token `index`."""
        return sample.prompt + "".join(e.text for e in sample.events[:index]), None

    def explain_target(self, done: Done, sample: int, index: int, tokenizer: Tokenizer | None = None) -> dict[str, Any]:
        """`input` is prompt + generated text through the target token, `input_ids` its ids (prompt
        ids + generated ids), `target_position` the target's index in `input_ids` (the model
        predicted it from `input_ids[:target_position]`)."""
        result, ev = picked_token(done, sample, index)
        events = result.events
        ids = list(result.prompt_ids) + [e.token_id for e in events[: index + 1]]
        text = result.prompt + "".join(e.text for e in events[: index + 1])
        return {"input": text, "input_ids": ids, "target_position": len(result.prompt_ids) + index,
                "target_token": ev.text or (token_text(tokenizer, ev.token_id) if tokenizer is not None else str(ev.token_id)),
                "target_id": ev.token_id, "context": result.prompt + "".join(e.text for e in events[:index])}
