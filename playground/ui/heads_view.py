"""Analyze tab, "Heads" accordion: head ablation, importance, pruning curve and head scores.

``run_heads`` is module-level (tests call it directly); ``build(ctx, device, checkpoint)`` lays
out the accordion under the tab's checkpoint dropdown and runs through the tab's per-user
wrapper in the analysis lane.
"""
from __future__ import annotations

from typing import Any

import gradio as gr

from playground.errors import PlaygroundError
from playground.ui.components import Chart, Slider
from playground.ui.context import AppContext
from playground.workspace import Workspace

MAX_EXAMPLES = 256


def run_heads(workspace: Workspace, device: str, checkpoint: str | None, examples: Any,
              mode: str = "zero") -> tuple[str, Any, Any]:
    """(summary Markdown, layer x head heatmaps, pruning curve) of ``checkpoint``'s heads."""
    from playground.analysis.heads.report import analyse_heads
    from playground.bundle import cached_bundle
    from playground.charts.heads import head_heatmaps_chart, pruning_chart
    from playground.cli.heads import summary

    if not checkpoint:
        raise PlaygroundError("Choose a checkpoint first.")
    n = int(examples or 32)
    if not 1 <= n <= MAX_EXAMPLES:
        raise PlaygroundError(f"Use 1 to {MAX_EXAMPLES} examples.")
    bundle = cached_bundle(checkpoint, workspace, device)
    report = analyse_heads(bundle, n=n, mode=mode if mode in ("zero", "mean") else "zero",  # type: ignore[arg-type]
                           workspace=workspace, device=device)
    text = "  \n".join(summary(report).splitlines())
    return (text, head_heatmaps_chart(report.frame()),
            pruning_chart(report.pruning_frame(), report.clean_loss))


def build(ctx: AppContext, device: str, checkpoint: gr.Dropdown) -> None:
    """The "Heads" accordion: examples, ablation kind, Run; summary, heatmaps, pruning curve."""
    with gr.Accordion("Heads: ablation, importance, pruning, previous-token and induction scores", open=False,
                      elem_id="analyze-heads-accordion"):
        gr.Markdown("Each head's output before the output projection is zeroed or replaced by its mean, on the "
                    "checkpoint's validation data; heads are ranked by the loss increase and by Michel et al.'s "
                    "|∂L/∂ξ|, then removed least important first. Scores: mean attention on the previous and first "
                    "token; induction on random tokens repeated twice (GPT).")
        with gr.Row():
            examples = Slider(1, MAX_EXAMPLES, value=32, step=1, label="Validation examples")
            mode = gr.Radio(["zero", "mean"], value="zero", label="Ablation for the pruning curve")
            run_btn = gr.Button("Run head analysis", elem_id="analyze-heads-run")
        summary = gr.Markdown(elem_id="analyze-heads-summary")
        heatmaps = Chart(label="Layer x head scores", elem_id="analyze-heads-heatmaps")
        pruning = Chart(label="Pruning curve", elem_id="analyze-heads-pruning")

    def _run(space, checkpoint, examples, mode):
        return run_heads(space, device, checkpoint, examples, mode)

    run_btn.click(ctx.per_user(_run), [ctx.user, checkpoint, examples, mode], [summary, heatmaps, pruning],
                  api_name="analyze_heads", **ctx.analysis())
