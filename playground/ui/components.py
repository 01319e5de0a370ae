"""Gradio components whose input errors read as sentences instead of gradio's bare "Error"."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import gradio as gr


class ReadableImage(gr.Image):
    """gr.Image that refuses an upload it cannot decode with a message naming the file.

    gr.Image decodes uploads before any handler runs; a file that is not an image (or a
    truncated one) otherwise fails there and the user sees only "Error".
    """

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
