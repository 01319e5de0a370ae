"""Every place the app works around gradio's internals, in one list.

The app's code reaches these through this module only: `Blocks` (the app's Blocks class),
`frontend_middleware()` (with `launch_options`) and `apply(app)` (once, at the end of
`playground.ui.app.build_app`). The larger patches' code lives in the module each entry names,
whose tests pin it to the gradio range pyproject.toml allows (>=6.0.1, the floor
.ci/floor_check.sh installs, and <6.32: 6.31 is the newest these tests have run on). Upstream
issues: a search of gradio's issues for each symptom found none, for any of them.

1. **Loading statuses in a long-lived tab** (`playground.ui.frontend_fix.FrontendFix`, a
   middleware). gradio's `Blocks-<hash>.js` keeps the loading status of every completed event's
   inputs for the life of the page and hands every kept status back to its component on every
   status change, so a click in a long-lived tab costs more and more; the middleware edits that
   minified asset as it is served. Remove when a gradio release marks only streaming events
   "closed" on completion and hands a status over only when it changed:
   tests/ui/test_frontend_fix.py then finds that neither pattern matches.
2. **`gr.skip()` rebuilds** (`playground.ui.skips.Blocks`, the base of the app's `Blocks`).
   gradio's `Blocks.postprocess_data` rebuilds a skipped output from its constructor and
   recomputes its config (pydantic schemas) only to send `{"__type__": "update"}`: over a third
   of the server's CPU with 20 users generating. Remove when `postprocess_data` short-circuits a
   property-less update; tests/ui/test_skips.py checks the replies are the ones gradio sends.
3. **Unreadable inputs** (`playground.ui.checked_blocks.Blocks`, the app's `Blocks`). A value a
   component cannot read (NaN or "abc" into a number field) makes gradio's `preprocess_data`
   answer a bare "Error"; ours names the field and what it takes. Remove when gradio's
   preprocessing does; tests/ui/test_hostile_values.py sends such values and checks the message.
4. **Progress targets** (`playground.ui.progress_targets`, applied by `apply`). gradio's frontend
   deep-copies the value of every progress target of every event that ran, on each status change,
   so charts and tables shown earlier slow every later click; each event that names no
   `show_progress_on` gets its light outputs. Remove when gradio stops snapshotting targets'
   values; the browser bench (`python -m playground bench browser`) shows no growth without it.
"""
from __future__ import annotations

from typing import Any

from starlette.middleware import Middleware

from playground.ui.checked_blocks import Blocks
from playground.ui.frontend_fix import FrontendFix
from playground.ui.progress_targets import limit_progress_targets

__all__ = ["Blocks", "apply", "frontend_middleware"]


def frontend_middleware() -> Middleware:
    """Patch 1: the middleware that edits gradio's frontend asset as it is served."""
    return Middleware(FrontendFix)


def apply(app: Any) -> None:
    """The build-time patches (4), called once at the end of the app's `with Blocks()` block
    (every event registered, the config not yet frozen)."""
    limit_progress_targets(app)
