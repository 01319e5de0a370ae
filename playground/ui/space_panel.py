"""The "Your space" panel: what this user can see (own, shared, library), Share and Delete."""
from __future__ import annotations

import shutil
from typing import Any

import gradio as gr
import pandas as pd

from playground.errors import NotFoundError, PlaygroundError
from playground.hub_share import HubFolder, prepare, upload
from playground.spaces import ReadOnlyError, UserSpace, shared_owner, space_rows
from playground.ui import import_box
from playground.ui.context import AppContext
from playground.ui.tables import Table
from playground.workspace import validate_name

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


def problem(action: str, exc: PlaygroundError) -> str:
    """The status line for a refused action: what failed and the message that says what to change."""
    return f"**Could not {action}:** {exc}"


def share_entry(space: UserSpace, label: str | None, name: str | None, as_name: str | None, version: int):
    """Share one of the user's own entries; returns (status, table, version + 1). A refusal
    (no such entry, a taken name) is the status line, with the table and version left as they are:
    these events run unqueued, where gradio shows no toast, so a raised error was a bare "Error"."""
    try:
        entry = space.share(_kind(label), name or "", (as_name or "").strip() or None)
    except PlaygroundError as exc:
        return problem("share", exc), gr.skip(), gr.skip()
    return f"Shared {label} {entry.name!r}: every user of this server can now use it (read-only).", \
        space_table(space), version + 1


def deletable(space: UserSpace, kind: str, name: str) -> str:
    """What deleting `name` would remove ("your model 'x'"); raises the message a refused Delete
    shows (a library or someone else's shared entry, or no entry of that name)."""
    name = validate_name(name)
    what = kind[:-1]
    if space.own.exists(kind, name):
        return f"your {what} {name!r}"
    if shared_owner(space.shared, kind, name) == space.key:
        return f"your shared copy of {what} {name!r}"
    origin = space.origin(kind, name)
    if origin == "library":
        raise ReadOnlyError(f"{name!r} is a {what} of the library (shipped or the instructor's), read-only to you.")
    if origin == "shared":
        raise ReadOnlyError(f"{name!r} is a {what} someone else shared, read-only to you.")
    have = ", ".join(sorted(space.own.names(kind))) or "none yet"
    raise NotFoundError(f"No {what} named {name!r} in your space (yours: {have}).")


def ask_delete(space: UserSpace, label: str | None, name: str | None):
    """Delete's first step: (the confirmation row, its question, the status line). Nothing is
    deleted until "Yes, delete" is pressed; a name that cannot be deleted is refused here."""
    try:
        what = deletable(space, _kind(label), name or "")
    except PlaygroundError as exc:
        return gr.update(visible=False), gr.skip(), problem("delete", exc)
    return gr.update(visible=True), f"Delete {what} for good? This cannot be undone.", ""


def delete_entry(space: UserSpace, label: str | None, name: str | None, version: int):
    """Delete one of the user's own entries (the confirmation's "Yes"); returns (status, table,
    version + 1, the confirmation row hidden)."""
    hide = gr.update(visible=False)
    try:
        kind = _kind(label)
        deletable(space, kind, name or "")
        space.delete(kind, name or "")
    except PlaygroundError as exc:
        return problem("delete", exc), gr.skip(), gr.skip(), hide
    return f"Deleted your {label} {name!r}.", space_table(space), version + 1, hide


def refresh(space: UserSpace) -> pd.DataFrame:
    """on_workspace_change: the table after any save."""
    return space_table(space)


def _hub_ready(space: UserSpace, label: str | None, name: str | None) -> HubFolder:
    """The entry's Hub-ready folder (playground.hub_share) in this session's scratch space."""
    kind = _kind(label)[:-1]
    name = validate_name(name or "")
    return prepare(space, kind, name, space.scratch_dir("hub-") / name)


def hub_folder(space: UserSpace, label: str | None, name: str | None):
    """(zip of the Hub-ready folder, status): the entry's card, curves and files, as one download."""
    try:
        folder = _hub_ready(space, label, name)
    except PlaygroundError as exc:
        return gr.skip(), problem("prepare the Hub folder", exc)
    archive = shutil.make_archive(str(folder.path), "zip", root_dir=folder.path)
    return archive, (f"The Hub-ready folder of {label} {name!r} ({len(folder.files)} files, its card as README.md) is "
                     "ready to download; upload it yourself with `hf upload`, or give a repository and a token below.")


def hub_upload(space: UserSpace, label: str | None, name: str | None, repo: str | None, token: str | None) -> str:
    """Prepare the entry's Hub-ready folder and upload it (private) to `repo` with the user's token;
    the status line says where it went or why not (offline, a refused token). The token is used
    for this request only: never stored, logged or sent back."""
    try:
        url = upload(_hub_ready(space, label, name), (repo or "").strip(), token=(token or "").strip() or None)
    except PlaygroundError as exc:
        return problem("upload", exc)
    return f"Uploaded {label} {name!r} to {url} (private: make it public on the Hub when you want)."


def build(ctx: AppContext) -> None:
    """Lay out the panel (inside an accordion the app places under its header)."""
    gr.Markdown(ABOUT)
    # The fields and buttons above the table, inside a laptop's window; the table scrolls below.
    with gr.Row():
        kind = gr.Radio(["model", "tokenizer"], value="model", label="Kind", scale=1, elem_id="space-kind")
        name = gr.Textbox(label="Name (one of yours)", elem_id="space-name", scale=2)
        as_name = gr.Textbox(label="Share as (optional)", scale=2)
    with gr.Row():
        share_btn = gr.Button("Share", elem_id="space-share")
        delete_btn = gr.Button("Delete", variant="stop", elem_id="space-delete")
    # Delete asks first; the question names what goes (from the fields as they were asked about).
    with gr.Row(visible=False, elem_id="space-confirm", equal_height=True) as confirm:
        question = gr.Markdown(elem_id="space-confirm-text")
        yes = gr.Button("Yes, delete", variant="stop", size="sm", elem_id="space-confirm-yes", scale=0)
        no = gr.Button("Keep it", size="sm", elem_id="space-confirm-no", scale=0)
    status = gr.Markdown(elem_id="space-status")
    table = Table(headers=COLUMNS, interactive=False, elem_id="space-table", max_height=260)
    private = {"api_visibility": "undocumented", "queue": False, "show_progress": "hidden"}
    share_btn.click(ctx.per_user(share_entry), [ctx.user, kind, name, as_name, ctx.workspace_version],
                    [status, table, ctx.workspace_version], api_name="space_share", queue=False)
    delete_btn.click(ctx.per_user(ask_delete), [ctx.user, kind, name], [confirm, question, status], **private)
    yes.click(ctx.per_user(delete_entry), [ctx.user, kind, name, ctx.workspace_version],
              [status, table, ctx.workspace_version, confirm], api_name="space_delete", queue=False)
    no.click(hide, None, [confirm], **private)
    # A question about one name must not be answered for another: editing the fields withdraws it.
    gr.on([name.input, kind.input], hide, None, [confirm], **private)
    ctx.on_workspace_change(refresh, [], [table], api_name="space")
    with gr.Accordion("Share to the Hugging Face Hub", open=False):
        gr.Markdown("The model or tokenizer named above as a Hub-ready folder: its files, a card (preset, what you "
                    "changed, data, validation numbers) and its curves. Download it, or upload it to a private "
                    "repository of yours with a write token (used for this upload only, never stored).")
        with gr.Row(equal_height=True):
            hub_btn = gr.Button("Prepare the folder", elem_id="space-hub-prepare", scale=1)
            hub_zip = gr.DownloadButton("Download it (zip)", value=None, elem_id="space-hub-zip", scale=1)
        with gr.Row(equal_height=True):
            repo = gr.Textbox(label="Repository (user/name)", elem_id="space-hub-repo", scale=2)
            token = gr.Textbox(label="Hub token (write)", type="password", elem_id="space-hub-token", scale=2)
            push = gr.Button("Upload", elem_id="space-hub-upload", scale=1)
    hub_btn.click(ctx.per_user(hub_folder), [ctx.user, kind, name], [hub_zip, status], api_name="space_hub_folder")
    push.click(ctx.per_user(hub_upload), [ctx.user, kind, name, repo, token], [status], api_name="space_hub_upload",
               **ctx.light())
    import_box.build(ctx)  # "Import a pretrained model"


def hide() -> dict[str, Any]:
    """An update that hides a block."""
    return gr.update(visible=False)
