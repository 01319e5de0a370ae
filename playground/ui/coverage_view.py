"""Analyze tab, "Repeated and dropped source words" accordion (seq2seq): the checkpoint of the tab
beside a second one, e.g. the same preset trained with and without coverage (See et al. 2017).

``run_coverage`` is module-level (tests call it directly); ``build(ctx, device, checkpoint)``
lays out the accordion under the tab's checkpoint dropdown, in the analysis lane.
"""
from __future__ import annotations

from typing import Any

import gradio as gr
import pandas as pd

from playground.analysis.coverage import (
    COLUMNS,
    MAX_EXAMPLES,
    checkpoint_coverage,
    comparison_rows,
    comparison_text,
)
from playground.errors import PlaygroundError
from playground.ui.components import Slider
from playground.ui.context import AppContext, model_choices
from playground.ui.tables import Table
from playground.workspace import Workspace

UI_MAX_EXAMPLES = min(MAX_EXAMPLES, 500)  # a web request decodes at most this many pairs per checkpoint


def run_coverage(workspace: Workspace, device: str, checkpoint: str | None, other: str | None,
                 examples: Any) -> tuple[str, pd.DataFrame]:
    """(summary Markdown, one row per checkpoint) of the repeated/dropped counts."""
    from playground.bundle import cached_bundle

    if not checkpoint:
        raise PlaygroundError("Choose a checkpoint first.")
    n = int(examples or 100)
    if not 1 <= n <= UI_MAX_EXAMPLES:
        raise PlaygroundError(f"Use 1 to {UI_MAX_EXAMPLES} examples.")
    names = [checkpoint] + ([other] if other and other != checkpoint else [])
    reports = {name: checkpoint_coverage(cached_bundle(name, workspace, device), n, workspace) for name in names}
    frame = pd.DataFrame(comparison_rows(reports), columns=["checkpoint", *COLUMNS])
    return comparison_text(reports).split("\n\n", 1)[-1], frame


def build(ctx: AppContext, device: str, checkpoint: gr.Dropdown) -> None:
    """The accordion: a checkpoint to compare with, examples, Run; a note and the table."""
    with gr.Accordion("Repeated and dropped source words (seq2seq, e.g. with vs without coverage)", open=False,
                      elem_id="analyze-coverage-accordion"):
        gr.Markdown("Greedy outputs on the checkpoint's validation pairs. For each source token the attention it "
                    "received is summed over the whole output: at least 1.5 counts as looked at repeatedly, at "
                    "most 0.5 as dropped. Beside them: output tokens repeated back to back (beyond the reference's) "
                    "and reference tokens missing from the output. Pick a second checkpoint to compare, e.g. "
                    "`seq2seq-toytranslation-coverage` trained with `--set model.coverage=false`.")
        with gr.Row():
            other = gr.Dropdown(label="Compare with", choices=[], interactive=True, elem_id="analyze-coverage-other")
            examples = Slider(1, UI_MAX_EXAMPLES, value=100, step=1, label="Validation examples")
            run_btn = gr.Button("Count repeated and dropped words", elem_id="analyze-coverage-run")
        note = gr.Markdown(elem_id="analyze-coverage-note")
        table = Table(label="Per checkpoint", elem_id="analyze-coverage-table")
    # the tab's dropdown is refreshed with the user's models; the comparison list follows it
    checkpoint.change(ctx.per_user(model_choices), [ctx.user, other], [other], api_name="analyze_coverage_models",
                      show_progress="hidden")

    def _run(space, checkpoint, other, examples):
        return run_coverage(space, device, checkpoint, other, examples)

    run_btn.click(ctx.per_user(_run), [ctx.user, checkpoint, other, examples], [note, table],
                  api_name="analyze_coverage", **ctx.analysis())
