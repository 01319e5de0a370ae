"""`Blocks`: the app's gr.Blocks, whose inputs are checked before gradio reads them.

gradio turns a value its component cannot read (a Seed of NaN, "abc" or [] into a whole-number
field; a Slider given "x") into a bare "Error" with no message, before any handler runs; a
non-finite float or a text with an unpaired surrogate passes through to the handler, which
fails somewhere inside. Here every number field's value and every text is checked first, and
any other value a component cannot read becomes a message naming the field and what it takes,
so an API caller or a hand-edited request learns what to change.
"""
from __future__ import annotations

import math
from typing import Any

import gradio as gr

from playground.ui.skips import Blocks as SkipBlocks

NUMBER_FIELDS = (gr.Number, gr.Slider)


def _label(block: Any) -> str:
    return str(getattr(block, "label", None) or getattr(block, "elem_id", None) or type(block).__name__)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def number_problem(block: Any, value: Any) -> str | None:
    """Why a number field cannot take `value` (None when it can): a field that may be left empty
    takes None; otherwise a finite int or float (not a bool, not text)."""
    if value is None and isinstance(block, gr.Number):
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"{_label(block)}: expected a number, got {_shown(value)}; type a number such as 1."
    if not math.isfinite(value):
        return f"{_label(block)}: expected a finite number, got {value}; type a number such as 1."
    return None


def text_problem(block: Any, value: str) -> str | None:
    """Why a text cannot be taken (None when it can): an unpaired UTF-16 surrogate such as
    "\\ud800" (a JSON escape a browser never sends) is not a character, and nothing can encode it."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        return (f"{_label(block)}: the text holds an unpaired surrogate (U+{ord(value[exc.start]):04X} at position "
                f"{exc.start}), which is not a character; remove it or send the character it was part of.")
    return None


class Blocks(SkipBlocks):
    """gr.Blocks (with free skips) that answers an unreadable input with a message."""

    async def preprocess_data(self, block_fn: Any, inputs: list[Any], state: Any,  # type: ignore[override]
                              explicit_call: bool = False) -> Any:
        if block_fn.preprocess:
            for block, value in zip(block_fn.inputs, inputs):
                if getattr(block, "stateful", False):
                    continue
                problem = (number_problem(block, value) if isinstance(block, NUMBER_FIELDS)
                           else text_problem(block, value) if isinstance(value, str) else None)
                if problem:
                    raise gr.Error(problem)
        try:
            return await super().preprocess_data(block_fn, inputs, state, explicit_call)
        except gr.Error:
            raise
        except Exception:  # noqa: BLE001 - gradio's own reading of a value: say which field and what it takes
            raise gr.Error(unreadable(block_fn.inputs, inputs)) from None


def _takes(block: Any) -> str:
    """What a field takes, in words."""
    if isinstance(block, gr.CheckboxGroup) or (isinstance(block, gr.Dropdown) and getattr(block, "multiselect", False)):
        return "a list of its choices (an empty list for none)"
    if isinstance(block, (gr.Dropdown, gr.Radio)):
        return "one of its choices"
    if isinstance(block, gr.Checkbox):
        return "true or false"
    if isinstance(block, (gr.Textbox, gr.Code)):
        return "text"
    return "what its box on the page sends"


def unreadable(blocks: Any, values: list[Any]) -> str:
    """The message for inputs gradio could not read: the first field whose value its component
    refuses (tried on the plain components; a file or image is named with the rest)."""
    for block, value in zip(blocks, values):
        if getattr(block, "stateful", False) or getattr(block, "data_model", None) is not None:
            continue
        try:
            block.preprocess(value)
        except Exception:  # noqa: BLE001 - this is the field gradio could not read
            return f"{_label(block)}: cannot read {_shown(value)}; send {_takes(block)}."
    labels = ", ".join(_label(b) for b in blocks if not getattr(b, "stateful", False))
    return f"One of the inputs ({labels}) could not be read; send each what its box on the page sends."
