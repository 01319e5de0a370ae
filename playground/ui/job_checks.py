"""Refuse a job that does not fit this server before it takes a heavy slot.

Training's sizes (the model's parameters and memory, closed-form per family; the data's generated
pairs) are checked from the TOML alone: in the browser's first step of Start (queue=False) and,
for callers of the `train_start` API who skip that step, in the event's gradio validator, which
runs before the event joins the heavy lane's queue. The child process checks again once the data
fixes the rest (vocabulary, sequence lengths).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gradio as gr

from playground.config import parse_preset
from playground.errors import PlaygroundError
from playground.settings import Settings
from playground.training.spec import check_run_sizes, resolve_run
from playground.ui.gpu_calls import check_plan, planned_training


def check_run(toml_text: str | None, settings: Settings) -> None:
    """PlaygroundError (the message says what to change) unless the run in `toml_text` fits this
    server's caps; an over-cap `train.max_steps` is left to the run, which lowers it with a note."""
    if not toml_text or not toml_text.strip():
        raise PlaygroundError("The preset is empty: choose a preset first.")
    preset = parse_preset(toml_text, name="custom")
    spec = resolve_run(preset, {}, settings.caps, check_steps=False)  # typed sections, against the caps in force
    check_run_sizes(spec, settings.caps, check_steps=False)
    if settings.zerogpu:  # not one step in an anonymous visitor's GPU quota: refused here, not on the GPU
        check_plan(planned_training(preset, settings.caps.max_train_steps, None))


def checked_start(form_step: Callable[..., tuple[Any, ...]], settings: Settings) -> Callable[..., tuple[Any, ...]]:
    """Start's first step (`form_step` writes the form into the TOML), then `check_run` on that TOML."""
    def form_then_check(*args: Any) -> tuple[Any, ...]:
        out = form_step(*args)
        check_run(out[0], settings)
        return out

    form_then_check.__name__ = getattr(form_step, "__name__", "form_to_run")
    return form_then_check


def start_validator(settings: Settings, toml_index: int) -> Callable[..., list[dict[str, Any]]]:
    """A gradio validator for the `train_start` event: a refusal marks the TOML input (position
    `toml_index` among the event's inputs) with the message, before the heavy lane is reached."""
    def validate(*values: Any) -> list[dict[str, Any]]:
        verdicts = [gr.validate(True, "") for _ in values]
        try:
            check_run(values[toml_index], settings)
        except PlaygroundError as exc:
            verdicts[toml_index] = gr.validate(False, str(exc))
        return verdicts

    return validate


__all__ = ["check_run", "checked_start", "start_validator"]
