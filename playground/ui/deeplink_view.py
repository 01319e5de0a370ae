"""Deep links in the app: on page load, `?tab=...&preset=...&set=...` opens that tab with the preset
and settings filled in; the Train tab gets a "Link to this exercise" button that writes such a URL.

Parsing and checking are playground.deeplink (pure); this module finds the Train tab's components
by their elem_ids (so the tab needs no hooks) and registers the handlers.
"""
from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

import gradio as gr

from playground.deeplink import DeepLink, apply_settings, exercise_query, parse_query
from playground.ui.tab_switch import open_tab_from, tab_target

LINK_JS = "(query) => query ? window.location.origin + window.location.pathname + query : ''"


def _by_elem_id(app: gr.Blocks) -> dict[str, Any]:
    return {b.elem_id: b for b in app.blocks.values() if getattr(b, "elem_id", None)}


def _field_elem_id(key: str) -> str:
    return f"train-{key.replace('.', '-').replace('_', '-')}"


def load_updates(link: DeepLink, toml_text: str | None, caps: Any = None) -> tuple[str | None, tuple[Any, ...] | None, list[str]]:
    """The pure part of the load handler: (tab to select, Train tab values or None, notices).

    The Train tab values are (preset name, TOML text, description, run name, *form updates),
    as train_tab.preset_selected gives them, with the link's settings applied.
    """
    from playground.config import load_preset, parse_preset
    from playground.errors import PlaygroundError
    from playground.training.config import preset_to_toml
    from playground.ui import train_tab

    notices = list(link.notices)
    if link.preset is None and not link.settings:
        return link.tab, None, notices
    try:
        if link.preset is not None:
            preset = load_preset(link.preset, allow_paths=False)
            text, description, name, *_ = train_tab.preset_selected(link.preset)
        else:  # settings on top of the preset shown
            preset = parse_preset(toml_text or "", name="custom")
            text, description, name = toml_text or "", gr.skip(), gr.skip()
    except PlaygroundError as exc:
        return link.tab, None, [*notices, f"Link: {exc}"]
    preset, applied, skipped = apply_settings(preset, link.settings, caps)
    notices.extend(skipped)
    if applied:
        text = preset_to_toml(preset)
    values = (link.preset if link.preset is not None else gr.skip(), text, description, name,
              *train_tab.form_updates(text))
    return link.tab, values, notices


def link_query(preset_name: str | None, toml_text: str | None) -> str:
    """The query string for the Train tab as it is now (empty when its TOML does not parse)."""
    from playground.config import list_presets, load_preset, parse_preset
    from playground.errors import PlaygroundError
    from playground.training.config import preset_to_toml
    from playground.ui import train_tab

    try:
        current = parse_preset(toml_text or "", name=preset_name or "custom")
        original = load_preset(preset_name, allow_paths=False) if preset_name in list_presets() else None
        shown = None
        if original is not None:  # the preset with every form field at the value the form first showed
            text = preset_to_toml(original)
            values = [u.get("value") for u in train_tab.form_updates(text)]
            shown = parse_preset(train_tab.apply_form(text, values, strict=False), name=original.name)
    except PlaygroundError:
        return ""
    return exercise_query(preset_name if original is not None else None, current, original, shown)


def wire(app: gr.Blocks, ctx: Any, notify: Callable[[str], Any] = gr.Warning) -> None:
    """Register the deep-link load handler (and the Train tab's link button) on a built app.

    Call inside `with gr.Blocks() as app:` after the tabs are built; `ctx.tabs` is the gr.Tabs.
    """
    from playground.config import list_presets
    from playground.training.config import TrainConfig  # noqa: F401 - fail here, not on load, if broken
    from playground.ui.train_tab import FORM_FIELDS

    found = _by_elem_id(app)
    ids = ["train-preset", "train-toml", "train-description", "train-name", *(_field_elem_id(f.key) for f in FORM_FIELDS)]
    missing = [i for i in ids if i not in found]
    if missing:
        raise RuntimeError(f"deeplink_view.wire: the Train tab has no component(s) {missing}")
    preset, toml = found["train-preset"], found["train-toml"]
    train_outputs = [found[i] for i in ids]
    presets = list_presets()
    caps = ctx.settings.caps
    skip_train = [gr.skip() for _ in train_outputs]

    def on_load(toml_text: str | None, request: gr.Request) -> list[Any]:
        params = getattr(request, "query_params", None) or {}
        items = params.multi_items() if hasattr(params, "multi_items") else params
        link = parse_query(items, presets)
        if link.empty and not link.notices:
            return [gr.skip(), *skip_train]
        tab, values, notices = load_updates(link, toml_text, caps)
        for notice in notices:
            notify(html.escape(notice))  # the toast renders HTML; a link's values are text, never markup
        return [tab or gr.skip(), *(values if values is not None else skip_train)]

    tab_box = tab_target("deeplink-tab")  # the link's tab id; the browser then opens that tab
    loaded = app.load(on_load, [toml], [tab_box, *train_outputs], api_name="deep_link", api_visibility="undocumented",
                      show_progress="hidden")
    open_tab_from(loaded, tab_box)

    train_tab = found.get("tab-train")
    if train_tab is not None:
        with train_tab, gr.Accordion("Share this exercise", open=False):
            make = gr.Button("Link to this exercise", size="sm", elem_id="train-link-make")
            link = gr.Textbox(label="Link (the preset and the settings changed from it)", buttons=["copy"],
                              interactive=False, elem_id="train-link")
        make.click(link_query, [preset, toml], [link], queue=False, api_name="train_link",
                   api_visibility="undocumented").then(None, [link], [link], js=LINK_JS, queue=False)


__all__ = ["link_query", "load_updates", "wire"]
