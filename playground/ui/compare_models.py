"""Two models side by side: the user's own beside an imported pretrained one (or any two).

- Analyze: "Compare with a second model" runs the per-input analysis, the attention
  interventions and the induction score of both on one text and shows them in two columns
  (:mod:`playground.analysis.side_by_side`).
- Generate: "Compare with a second language model" decodes one prompt greedily with both and
  lists each generated token with its probability, step by step.

The tabs call :func:`build_analyze` / :func:`build_generate` with their checkpoint dropdown.
"""
from __future__ import annotations

from typing import Any

import gradio as gr
import pandas as pd

from playground.analysis.explain.per_input import (
    DEFAULT_METHODS,
    METHODS,
    AnalysisOptions,
)
from playground.analysis.side_by_side import (
    agreement_columns,
    analyse_pair,
    summary_columns,
)
from playground.bundle import cached_bundle
from playground.errors import PlaygroundError
from playground.generation.api import GenerateRequest, generate
from playground.generation.filters import SamplingConfig
from playground.limits import check_count, check_text
from playground.ui.components import Chart
from playground.ui.context import AppContext, model_choices
from playground.ui.tables import Table

COMPARE_METHODS = ("attention", "rollout", "ig", "loo")  # what the bench times: quick on a real model


def _pair(workspace: Any, device: str, first: str | None, second: str | None) -> list[Any]:
    if not first or not second:
        raise PlaygroundError("Choose two checkpoints: the one above and a second one here.")
    if first == second:
        raise PlaygroundError("Choose a second checkpoint other than the first.")
    return [cached_bundle(name, workspace, device) for name in (first, second)]


def compare_analysis(workspace: Any, device: str, first: str | None, second: str | None, text: str | None,
                     methods: list[str] | None, ig_steps: Any, caps: Any = None) -> tuple[Any, ...]:
    """(summary table, agreement table, first's importance chart, second's) for one text."""
    if not (text or "").strip():
        raise PlaygroundError("Type a text both models read (each through its own tokenizer).")
    check_text(text or "", "max_prompt_chars", caps, "The text")
    steps = int(ig_steps or 50)
    check_count(steps, "max_ig_steps", caps, "Integrated-gradients steps", 1)
    # function-level: the analysis engine (captum) loads on first use, not at app start (as analyze_tab)

    bundles = _pair(workspace, device, first, second)
    kinds = {b.family for b in bundles}
    options = AnalysisOptions(methods=tuple(methods or COMPARE_METHODS), ig_steps=steps, ig_auto=False)
    try:
        columns = analyse_pair(bundles, text or "", options, device=device)
    except PlaygroundError as exc:
        raise PlaygroundError(f"{exc} (comparing {' and '.join(sorted(kinds))} models)") from exc
    charts = [c.analysis.prepared.query.explainer.importance_chart(c.analysis) for c in columns]
    return summary_columns(columns).round(4), agreement_columns(columns).round(3), *charts


def compare_generations(workspace: Any, device: str, first: str | None, second: str | None, prompt: str | None,
                        max_new: Any, caps: Any = None) -> pd.DataFrame:
    """Both language models' greedy continuations of one prompt, one row per step: token and probability."""
    check_text(prompt or "", "max_prompt_chars", caps, "The prompt")
    n = int(max_new or 20)
    check_count(n, "max_new_tokens", caps, "Max new tokens", 1)
    bundles = _pair(workspace, device, first, second)
    rows: dict[int, dict[str, Any]] = {}
    for bundle in bundles:
        done = generate(bundle, GenerateRequest(prompt=prompt or "", max_new_tokens=n, sampling=SamplingConfig(temperature=0.0),
                                                seed=0))
        for event in done.samples[0].events:
            row = rows.setdefault(event.index, {"step": event.index})
            row[f"{bundle.name} token"] = repr(event.text)[1:-1].replace(" ", "␣")  # a space made visible
            row[f"{bundle.name} p"] = round(event.prob, 4)
    return pd.DataFrame([rows[i] for i in sorted(rows)])


def build_analyze(ctx: AppContext, device: str, checkpoint: gr.Dropdown) -> None:
    """The Analyze tab's "Compare with a second model" accordion (under the tab's checkpoint)."""
    # function-level: the analysis engine (captum) loads on first use, not at app start (as analyze_tab)

    caps = ctx.settings.caps
    with gr.Accordion("Compare with a second model (e.g. your own beside an imported GPT-2)", open=False,
                      elem_id="compare-analyze"):
        gr.Markdown("Both models read the same text, each through its own tokenizer. The tables put their "
                    "numbers in two columns: how the explanation methods agree (Kendall τ of every pair), what "
                    "uniform or permuted attention does to the output (total variation distance), and the "
                    "best induction head of a language model.")
        with gr.Row():
            second = gr.Dropdown(label="Second checkpoint", choices=[], interactive=True, elem_id="compare-second")
            text = gr.Textbox(label="Text both models read", lines=2, elem_id="compare-text", scale=2)
        with gr.Row():
            methods = gr.CheckboxGroup(label="Methods", choices=list(METHODS), elem_id="compare-methods",
                                       value=[m for m in COMPARE_METHODS if m in DEFAULT_METHODS])
            ig_steps = gr.Number(value=50, precision=0, label="IG steps", elem_id="compare-ig-steps")
        with gr.Row():
            run_btn = gr.Button("Compare", variant="primary", elem_id="compare-run", scale=3)
            stop_btn = gr.Button("Stop", elem_id="compare-stop", scale=1)
        # hidden until there are numbers: an empty table shows placeholder headers (1, 2, 3)
        summary = Table(label="Prediction, attention interventions, induction head: one column per model",
                        interactive=False, elem_id="compare-summary", visible=False)
        agreement = Table(label="Agreement of every pair of methods (Kendall τ), one column per model",
                          interactive=False, elem_id="compare-agreement", visible=False)
        with gr.Row():
            with gr.Column():
                gr.Markdown("**Importance per method: the checkpoint above**")
                first_chart = Chart(show_label=False, elem_id="compare-chart-1")
            with gr.Column():
                gr.Markdown("**Importance per method: the second checkpoint**")
                second_chart = Chart(show_label=False, elem_id="compare-chart-2")
    ctx.on_workspace_change(model_choices, [second], [second], api_name="compare_models")

    def run(space, first, second, text, methods, ig_steps):
        table, pairs, *charts = compare_analysis(space, device, first, second, text, methods, ig_steps, caps)
        return gr.update(value=table, visible=True), gr.update(value=pairs, visible=True), *charts

    event = run_btn.click(ctx.per_user(run), [ctx.user, checkpoint, second, text, methods, ig_steps],
                          [summary, agreement, first_chart, second_chart], api_name="compare_analyze",
                          **ctx.analysis())
    stop_btn.click(None, cancels=[event], api_visibility="private")


def build_generate(ctx: AppContext, device: str, model: gr.Dropdown, prompt: gr.Textbox, max_new: Any) -> None:
    """The Generate tab's "Compare with a second language model" accordion."""
    caps = ctx.settings.caps
    with gr.Accordion("Compare with a second language model (greedy, token by token)", open=False,
                      elem_id="compare-generate"):
        with gr.Row():
            second = gr.Dropdown(label="Second checkpoint", choices=[], interactive=True, elem_id="compare-gen-second")
            run_btn = gr.Button("Generate with both", elem_id="compare-gen-run")
        tokens = Table(label="Each model's next token and its probability, step by step", interactive=False,
                       elem_id="compare-gen-table", visible=False)
    ctx.on_workspace_change(model_choices, [second], [second], api_name="compare_generate_models")

    def run(space, first, second, prompt, max_new):
        return gr.update(value=compare_generations(space, device, first, second, prompt, max_new, caps), visible=True)

    run_btn.click(ctx.per_user(run), [ctx.user, model, second, prompt, max_new], [tokens],
                  api_name="compare_generate", **ctx.light())
