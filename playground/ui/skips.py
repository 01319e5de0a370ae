"""`Blocks`: gr.Blocks whose `gr.skip()` outputs cost nothing on the server.

Gradio treats `gr.skip()` (`{"__type__": "update"}`) as a property update with no properties:
for each one it rebuilds the output component from its constructor arguments and recomputes
that component's config, JSON schemas included (pydantic), then sends `{"__type__": "update"}`,
which the browser ignores. That is 0.3-2.6 ms per skipped output (a download button or an image
costs the most), and this app skips a lot: a streamed generation updates 2 of its 11 outputs
per partial result, an unchanged workspace list skips all of a refresher's outputs. Profiled on
the server while 20 users generated at once, rebuilding skipped components was over a third of
its CPU time.

This subclass answers a pure skip of a non-state output itself, with the reply gradio would
send (made by gradio's own `postprocess_update_dict`, on the component as it is), and hands
every other output to gradio's own `postprocess_data`, unchanged. The session state is not
touched for a skipped output (gradio would replace the component with an identical one, and
drop its value from the session's config). Any other shape of result (a single output, a dict
keyed by component, a batch function) goes to gradio as it is.
"""
from __future__ import annotations

import copy
from typing import Any

import gradio as gr
from gradio.blocks import postprocess_update_dict

SKIP = {"__type__": "update"}


def is_pure_skip(value: Any) -> bool:
    """`gr.skip()` or an update with no properties at all."""
    return isinstance(value, dict) and value == SKIP


class Blocks(gr.Blocks):
    """gr.Blocks with free `gr.skip()` outputs (see the module docstring)."""

    async def postprocess_data(self, block_fn: Any, predictions: Any, state: Any) -> list[Any]:  # type: ignore[override]
        outputs = list(block_fn.outputs)
        if (
            getattr(block_fn, "batch", False)
            or len(outputs) < 2
            or not isinstance(predictions, (list, tuple))
            or len(predictions) != len(outputs)
        ):
            return await super().postprocess_data(block_fn, predictions, state)
        skipped = {i for i, (block, value) in enumerate(zip(outputs, predictions))
                   if is_pure_skip(value) and not getattr(block, "stateful", False)}
        if not skipped:
            return await super().postprocess_data(block_fn, predictions, state)
        kept = [i for i in range(len(outputs)) if i not in skipped]
        processed: list[Any] = []
        if kept:
            narrowed = copy.copy(block_fn)  # the same function, seen with its updated outputs only
            narrowed.outputs = [outputs[i] for i in kept]
            values = [predictions[i] for i in kept]
            # gradio wraps the result of a one-output function in a list itself
            processed = list(await super().postprocess_data(narrowed, values[0] if len(kept) == 1 else values, state))
        # what gradio sends for a skip, from its own function (an HTML output's has a `props` key)
        result: list[Any] = [postprocess_update_dict(block, dict(SKIP), postprocess=False) if i in skipped else None
                             for i, block in enumerate(outputs)]
        for i, value in zip(kept, processed):
            result[i] = value
        return result
