"""The "Your space" panel: what this user can see (own, shared, library), Share and Delete."""
from __future__ import annotations

import gradio as gr
import pandas as pd

from playground.errors import PlaygroundError
from playground.spaces import UserSpace, space_rows
from playground.ui import import_box
from playground.ui.context import AppContext
from playground.ui.tables import Table

COLUMNS = ["kind", "name", "origin", "what", "step"]
ABOUT = (
    "Your tokenizers and models are **private to you**: other users of this server cannot see, change or stop "
    "them. **library** entries (shipped demos, the instructor's) and **shared** ones are read-only to everyone. "
    "**Share** copies one of yours into the shared area, where others can use it but not change it."
)


def space_table(space: UserSpace) -> pd.DataFrame:
    """The panel's table."""
    return pd.DataFrame(space_rows(space), columns=COLUMNS)


def _kind(label: str | None) -> str:
    if label not in ("model", "tokenizer"):
        raise PlaygroundError("Choose model or tokenizer.")
    return f"{label}s"


def share_entry(space: UserSpace, label: str | None, name: str | None, as_name: str | None, version: int):
    """Share one of the user's own entries; returns (status, table, version + 1)."""
    entry = space.share(_kind(label), name or "", (as_name or "").strip() or None)
    return f"Shared {label} {entry.name!r}: every user of this server can now use it (read-only).", \
        space_table(space), version + 1


def delete_entry(space: UserSpace, label: str | None, name: str | None, version: int):
    """Delete one of the user's own entries; returns (status, table, version + 1)."""
    space.delete(_kind(label), name or "")
    return f"Deleted your {label} {name!r}.", space_table(space), version + 1


def refresh(space: UserSpace) -> pd.DataFrame:
    """on_workspace_change: the table after any save."""
    return space_table(space)


def build(ctx: AppContext) -> None:
    """Lay out the panel (inside an accordion the app places under its header)."""
    gr.Markdown(ABOUT)
    table = Table(headers=COLUMNS, interactive=False, elem_id="space-table", max_height=260)
    with gr.Row():
        kind = gr.Radio(["model", "tokenizer"], value="model", label="Kind", scale=1)
        name = gr.Textbox(label="Name (one of yours)", elem_id="space-name", scale=2)
        as_name = gr.Textbox(label="Share as (optional)", scale=2)
    with gr.Row():
        share_btn = gr.Button("Share", elem_id="space-share")
        delete_btn = gr.Button("Delete", variant="stop", elem_id="space-delete")
    status = gr.Markdown(elem_id="space-status")
    share_btn.click(ctx.per_user(share_entry), [ctx.user, kind, name, as_name, ctx.workspace_version],
                    [status, table, ctx.workspace_version], api_name="space_share", queue=False)
    delete_btn.click(ctx.per_user(delete_entry), [ctx.user, kind, name, ctx.workspace_version],
                     [status, table, ctx.workspace_version], api_name="space_delete", queue=False)
    ctx.on_workspace_change(refresh, [], [table], api_name="space")
    import_box.build(ctx)  # "Import a pretrained model"
