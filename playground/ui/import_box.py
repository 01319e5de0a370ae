"""My space's "Import a pretrained model" box: a Hub id or the user's uploaded save_pretrained files
(never a server path) converted into the playground's own family, saved read-only in their space.

"Check size" shows parameters, memory and the download before anything is fetched; Import shows
the same line first, then fetches (a Hub download shows its bytes as they arrive, on the status
line and the progress bar) and converts. Stop cuts the download off at its next chunk; nothing
half-written is kept.
"""
from __future__ import annotations

import shutil
from contextlib import closing
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import gradio as gr

from playground.errors import ConfigError
from playground.pretrained.importer import (
    ImportPlan,
    check_name,
    import_cap,
    iter_weights,
    plan_import,
    run_import,
)
from playground.spaces import UserSpace
from playground.ui.context import AppContext

# the files of a save_pretrained folder the importer may read (anything else uploaded is ignored)
UPLOADABLE = ("config.json", "model.safetensors", "model.safetensors.index.json", "tokenizer.json",
              "tokenizer_config.json", "vocab.txt", "vocab.json", "merges.txt", "preprocessor_config.json")
EXAMPLES = "distilgpt2, gpt2, distilbert-base-uncased, distilbert-base-uncased-finetuned-sst-2-english"


def about(caps: Any) -> str:
    cap = import_cap(caps)
    limit = f" This server imports models of up to {cap / 1e6:,.0f} M parameters." if cap else ""
    return ("Bring a real model beside yours: a **Hugging Face id** (e.g. " + EXAMPLES + ") or the files of a "
            "folder written by `save_pretrained` (config.json, model.safetensors, tokenizer.json). GPT-2, BERT, "
            "DistilBERT and ViT are converted into the playground's own models, so every tool works on them. "
            "Imports are read-only (no Resume); fine-tune from one with `data.init_from`." + limit)


def _uploaded_folder(space: UserSpace, files: Sequence[Any]) -> str:
    """The uploaded files copied under their own names into a fresh scratch folder."""
    folder = space.scratch_dir("import-") / "uploaded-model"  # its name is the default model name
    folder.mkdir()
    for f in files:
        src = Path(getattr(f, "name", f))
        if src.name in UPLOADABLE or src.name.startswith("model-") and src.name.endswith(".safetensors"):
            shutil.copyfile(src, folder / src.name)
    if not (folder / "config.json").is_file():
        shutil.rmtree(folder.parent, ignore_errors=True)
        raise ConfigError("The uploaded files have no config.json: upload config.json, model.safetensors and "
                          "tokenizer.json from a save_pretrained folder.")
    return str(folder)


def make_plan(space: UserSpace, caps: Any, hub_id: str | None, files: Sequence[Any] | None) -> ImportPlan:
    """The import's plan from a Hub id or uploaded files (exactly one of them)."""
    hub_id = (hub_id or "").strip()
    if hub_id and files:
        raise ConfigError("Give a Hugging Face id or upload files, not both.")
    if files:
        return plan_import(_uploaded_folder(space, files), caps=caps, allow_paths=True)
    if not hub_id:
        raise ConfigError("Type a Hugging Face model id (e.g. distilgpt2) or upload a save_pretrained folder's files.")
    return plan_import(hub_id, caps=caps, allow_paths=False)


def check_size(space: UserSpace, caps: Any, hub_id: str | None, files: Sequence[Any] | None) -> str:
    """One line: what it is, what it becomes, parameters, memory, download size."""
    return make_plan(space, caps, hub_id, files).summary()


def import_model(space: UserSpace, caps: Any, hub_id: str | None, files: Sequence[Any] | None, name: str | None,
                 version: int, progress: Any = None) -> Iterator[tuple[str, int]]:
    """Plan (shown first), then fetch, convert and save; the status line and the new space version.

    A Hub download reports its bytes on the status line and to ``progress`` (gradio's
    gr.Progress: fraction and text) as huggingface_hub writes them; closing this generator (Stop)
    cuts it off and saves nothing."""
    plan = make_plan(space, caps, hub_id, files)
    name = check_name(plan, space, (name or "").strip() or None)  # before any download
    yield f"{plan.summary()}. Fetching the weights…", version
    with closing(iter_weights(plan.source)) as weights:  # closed by a Stop: the download is cut off
        while True:
            try:
                event = next(weights)
            except StopIteration as done:
                tensors = done.value
                break
            if event is None:  # nothing downloaded yet (a stalled start): the line stays
                yield f"{plan.summary()}. Fetching the weights…", version
                continue
            if progress is not None:
                progress(event.fraction, desc=event.line())
            yield f"{plan.summary()}. {event.line()}… (Stop cuts it off: nothing is imported.)", version
    yield f"{plan.summary()}. Converting…", version  # Stop before here: nothing is saved
    path = run_import(plan, space, name, tensors=tensors)
    yield (f"Imported **{path.name}** into your space ({plan.converter.family}): pick it in Generate or Analyze, "
           "beside one of your own models."), version + 1


def build(ctx: AppContext) -> None:
    """Lay out the box (under My space's panel)."""
    caps = ctx.settings.caps
    with gr.Accordion("Import a pretrained model", open=False, elem_id="import-box"):
        gr.Markdown(about(caps))
        with gr.Row():
            hub_id = gr.Textbox(label="Hugging Face model id", placeholder="distilgpt2", elem_id="import-hub-id", scale=2)
            name = gr.Textbox(label="Name in your space (optional)", elem_id="import-name", scale=1)
        files = gr.File(label="…or upload a save_pretrained folder's files", file_count="multiple",
                        elem_id="import-files")
        with gr.Row():
            check_btn = gr.Button("Check size", elem_id="import-check")
            import_btn = gr.Button("Import", variant="primary", elem_id="import-run")
            stop_btn = gr.Button("Stop", variant="stop", elem_id="import-stop")
        status = gr.Markdown(elem_id="import-status")
    check_btn.click(ctx.per_user(check_size, caps), [ctx.user, hub_id, files], [status], api_name="import_check",
                    **ctx.light())
    def _import(space, hub, uploaded, as_name, version, progress=gr.Progress()):  # noqa: B008 - gradio finds its tracker by this default
        yield from import_model(space, caps, hub, uploaded, as_name, version, progress)

    run = import_btn.click(ctx.per_user(_import), [ctx.user, hub_id, files, name, ctx.workspace_version],
                           [status, ctx.workspace_version], api_name="import_model", **ctx.heavy())
    stop_btn.click(lambda: "Stopped: nothing was imported.", None, [status], cancels=[run], queue=False)
