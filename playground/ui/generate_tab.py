"""Generate tab (skeleton; filled by its issue)."""
from __future__ import annotations

import gradio as gr

from playground.ui.context import AppContext, choices_update


def build(ctx: AppContext) -> None:
    """Lay out the Generate tab."""
    model = gr.Dropdown(label="Checkpoint", choices=[], interactive=True, elem_id="generate-model")
    ctx.on_workspace_change(lambda cur: choices_update(ctx.workspace.names("models"), cur), [model], [model], api_name="generate_models")
