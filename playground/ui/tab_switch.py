"""Switch the top-level tab in the browser, never by making the gr.Tabs an event output.

Gradio 6's frontend keeps a loading status for every component that has ever been an output of
an event, and on each status change of any later event (pending, started, each streamed
result, complete) it re-reads the state of each of those components and, for a layout block,
of every block inside it. The top-level gr.Tabs holds the whole app: once one event had it as an
output (the deep-link handler on page load did, on every load; "Explain in Analyze" did), every
click in that tab re-read every component of the app, values included (tables, charts, the
generated text), several times. The cost grew with what the page had shown: the slowdown of a
tab kept open for hours.

Here the handler returns a tab id into a small hidden textbox (or nothing, for a fixed target)
and a follow-up browser-only step clicks that tab's button, as the user would; the Tabs block
itself is never an output. A click also fires the tab's own select event (its refresher), as a
user's click does.
"""
from __future__ import annotations

import json

import gradio as gr
from gradio.events import Dependency

BUTTON_ID = "tab-{}-button"  # what gradio 6 names a tab's button, from gr.Tab(elem_id="tab-<id>")

# (tab_id) -> clicks tab <tab_id>'s button (BUTTON_ID); nothing for an empty or unknown id
CLICK_TAB_JS = """(tab) => {
  if (typeof tab === "string" && /^[a-z]+$/.test(tab)) {
    const button = document.getElementById(`tab-${tab}-button`);
    if (button) button.click();
  }
  return [];
}"""


def click_tab_js(tab_id: str) -> str:
    """A browser-only event step that opens tab `tab_id` (fixed at build time)."""
    return f"() => {{ document.getElementById({json.dumps(BUTTON_ID.format(tab_id))})?.click(); return []; }}"


def tab_target(elem_id: str) -> gr.Textbox:
    """A hidden textbox a handler writes a tab id into; `open_tab_from` clicks that tab."""
    return gr.Textbox(visible=False, elem_id=elem_id)


def open_tab_from(event: Dependency, target: gr.Textbox) -> None:
    """After `event` succeeds, open the tab whose id it wrote into `target` (if any)."""
    event.success(None, [target], None, js=CLICK_TAB_JS, queue=False, show_progress="hidden")
