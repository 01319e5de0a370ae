"""Tokenizer tab: build, inspect, compare and save BPE tokenizers (skeleton; filled by issue 4)."""
from __future__ import annotations

import gradio as gr

from playground.ui.context import AppContext, choices_update


def build(ctx: AppContext) -> None:
    """Lay out the Tokenizer tab."""
    gr.Markdown("Build a BPE tokenizer on a corpus and look inside it.")
    saved = gr.Dropdown(label="Saved tokenizers", choices=[], interactive=True, elem_id="tokenizer-saved")
    ctx.on_workspace_change(lambda cur: choices_update(ctx.workspace.names("tokenizers"), cur), [saved], [saved], api_name="tokenizer_saved")
