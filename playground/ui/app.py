"""`build_app(settings)`: the four tabs in one gr.Blocks, with no side effects."""
from __future__ import annotations

import html

import gradio as gr

from playground.settings import Settings
from playground.ui import analyze_tab, deeplink_view, generate_tab, tokenizer_tab, train_tab
from playground.ui.context import AppContext
from playground.workspace import Workspace

TABS = (
    ("tokenizer", "Tokenizer", tokenizer_tab),
    ("train", "Train", train_tab),
    ("generate", "Generate", generate_tab),
    ("analyze", "Analyze", analyze_tab),
)


def header_markdown(settings: Settings) -> str:
    """The header line: product name, device in use, workspace, demo mode."""
    demo = " · **demo mode** (capped for a shared server)" if settings.demo else ""
    return (
        "## Transformer Playground\n"
        f"Device: **{settings.resolved_device}** · Workspace: `{html.escape(str(settings.workspace))}`{demo}"
    )


def build_app(settings: Settings) -> gr.Blocks:
    """Build (not launch) the app for these settings."""
    workspace = Workspace(settings.workspace)
    with gr.Blocks(title="Transformer Playground") as app:
        gr.Markdown(header_markdown(settings), elem_id="header")
        workspace_version = gr.State(0)
        selection = gr.State({})
        with gr.Tabs() as tabs:
            ctx = AppContext(settings, workspace, workspace_version, selection, tabs)
            tab_objects = []
            for tab_id, label, module in TABS:
                with gr.Tab(label, id=tab_id, elem_id=f"tab-{tab_id}") as tab:
                    module.build(ctx)
                tab_objects.append(tab)
        triggers = [workspace_version.change, app.load, *(t.select for t in tab_objects)]
        for fn, inputs, outputs, api_name in ctx.refreshers:
            gr.on(triggers, fn, inputs=inputs, outputs=outputs, queue=False, show_progress="hidden", api_name=api_name)
        deeplink_view.wire(app, ctx)  # ?tab=train&preset=...&set=key=value links open an exercise
    app.queue(default_concurrency_limit=settings.caps.light_slots)
    return app
