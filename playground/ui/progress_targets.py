"""Progress shows on small components only, and not at all where it is hidden.

Gradio's frontend keeps a loading status for every component that was a progress target of any
event that ran on the page (the event's `show_progress_on`, by default all its outputs). On
every status change of every event (pending, each streamed result, done) it hands each of those
statuses back to its component, and each hand-over snapshots (deep-copies) that component's
value: a chart's spec with its data, a 1,000-row table. So the cost of every click grows with
the data every earlier event showed, and a tab kept open for an hour pays for all of it: in a
CDP profile of a tokenizer Save after one round of training, generating, tokenizer views and an
analysis, those copies were the largest single cost of the click.

`limit_progress_targets(app)`, called at the end of the `with Blocks()` block (before gradio
freezes the config), gives every event that names no targets itself:

- hidden progress: no targets (it shows nothing on them anyway);
- shown progress: its outputs that are not data views (no charts, tables, HTML, images or
  files), i.e. its status line, buttons and fields; an event that outputs only data views
  shows no spinner (they are quick: a table filter, one example's chart).

An event that names `show_progress_on` keeps its choice (Generate's output text, Train's
status line).

Gradio also kept the statuses of every completed event's inputs, whatever their type; that is
fixed where it happens, in the frontend (`playground.ui.frontend_fix`).
"""
from __future__ import annotations

from typing import Any

import gradio as gr
from gradio.blocks import BlockContext

DATA_VIEWS = (gr.Plot, gr.Dataframe, gr.HTML, gr.Image, gr.Gallery, gr.File, gr.DownloadButton, gr.JSON,
              gr.HighlightedText, gr.AnnotatedImage, gr.Model3D, gr.Video, gr.Audio)


def is_light(block: Any) -> bool:
    """A component whose value is small: a status line, a field, a button (not a data view, a
    state or a layout block)."""
    return not isinstance(block, (*DATA_VIEWS, gr.State, BlockContext))


def limit_progress_targets(app: Any) -> int:
    """Set `show_progress_on` of every event of `app` that names none (see the module doc); how
    many events were changed."""
    changed = 0
    for fn in app.fns.values():
        if fn.show_progress_on is not None:
            continue
        fn.show_progress_on = [] if fn.show_progress == "hidden" else [b for b in fn.outputs if is_light(b)]
        changed += 1
    return changed
