"""Gradio components whose input errors read as sentences instead of gradio's bare "Error"."""
from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import gradio as gr
from gradio.components.plot import PlotData


class ReadableImage(gr.Image):
    """gr.Image that refuses an upload it cannot decode with a message naming the file.

    gr.Image decodes uploads before any handler runs; a file that is not an image (or a
    truncated one) otherwise fails there and the user sees only "Error".
    """

    def get_block_name(self) -> str:
        """The browser draws it with gr.Image's frontend (a subclass's own name has none: it would not show)."""
        return "image"

    def preprocess(self, payload: Any) -> Any:
        try:
            return super().preprocess(payload)
        except gr.Error:
            raise
        except Exception as exc:  # noqa: BLE001 - PIL raises many kinds for a bad file
            name = Path(str(getattr(payload, "orig_name", None) or getattr(payload, "path", "") or "the upload")).name
            reason = re.sub(r"\s*'?/[^\s']+'?", "", str(exc))  # no server paths in the message
            raise gr.Error(f"{name!r} is not an image we can read ({type(exc).__name__}: {reason}); "
                           "give a PNG or JPEG file.") from None


class Slider(gr.Slider):
    """gr.Slider whose number box, cleared or typed out of range, gets a sentence, not a traceback.

    gr.Slider compares the raw value with its bounds before any handler runs: an emptied box
    (None) raised a TypeError there, logged a traceback and showed a bare "Error".
    """

    def get_block_name(self) -> str:
        """Drawn by gr.Slider's frontend (a subclass's own name has none: it would not show)."""
        return "slider"

    def preprocess(self, payload: Any) -> Any:
        what = self.label or "This slider"
        span = f"from {self.minimum:g} to {self.maximum:g}"
        if payload is None or (isinstance(payload, str) and not payload.strip()):
            raise gr.Error(f"{what} is empty: type a number {span}, or drag the slider.", print_exception=False)
        try:
            value = float(payload)
        except (TypeError, ValueError):
            raise gr.Error(f"{what} must be a number {span}, not {str(payload)[:20]!r}.",
                           print_exception=False) from None
        if not self.minimum <= value <= self.maximum:
            raise gr.Error(f"{what} must be {span}; {value:g} is outside.", print_exception=False)
        return super().preprocess(value)


VALIDATE_ENV = "PLAYGROUND_VALIDATE_CHARTS"


class Chart(gr.Plot):
    """gr.Plot for altair charts, drawn without vega-embed's "..." actions menu.

    gradio's Altair plot finalizes the old vega view on every update but not vega-embed's
    result, whose menu leaves a click listener on the document that holds the old chart, its
    data and its nodes: one leaked chart per live-curve refresh, gigabytes after a long session
    in one tab. Without the menu nothing outlives an update. (The CSV buttons beside each chart
    keep the data downloadable.)
    """

    def get_block_name(self) -> str:
        """Drawn by gr.Plot's frontend (a subclass's own name has none: it would not show)."""
        return "plot"

    def postprocess(self, value: Any) -> Any:
        """An altair chart's spec, compact and not validated against the Vega-Lite schema on
        every update (gradio's `to_json` does: 8.5 of the 14 ms a 200-step loss chart took, on
        each live-curve refresh of each user). The tests set PLAYGROUND_VALIDATE_CHARTS=1, so every
        chart sent while they run is validated."""
        if value is None or isinstance(value, PlotData) or "altair" not in type(value).__module__:
            return super().postprocess(value)
        spec = value.to_dict(validate=os.environ.get(VALIDATE_ENV) == "1")
        spec.setdefault("usermeta", {}).setdefault("embedOptions", {})["actions"] = False
        return PlotData(type="altair", plot=json.dumps(spec, separators=(",", ":")))
