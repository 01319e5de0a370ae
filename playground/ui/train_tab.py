"""Train tab: presets, live curves, checkpoints (skeleton; filled by issue 5)."""
from __future__ import annotations

import gradio as gr

from playground.ui.context import AppContext, choices_update


def build(ctx: AppContext) -> None:
    """Lay out the Train tab."""
    gr.Markdown("Train a small model from a preset.")
    tokenizer = gr.Dropdown(label="Tokenizer", choices=[], interactive=True, elem_id="train-tokenizer")
    ctx.on_workspace_change(lambda cur: choices_update(ctx.workspace.names("tokenizers"), cur), [tokenizer], [tokenizer], api_name="train_tokenizers")
