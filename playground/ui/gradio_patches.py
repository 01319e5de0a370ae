"""Every place the app works around gradio's internals, in one list.

Each patch is one function here, with what it works around, the upstream issue (none was found
for any of them; a search of gradio's issues for each symptom came up empty), and when it can go.
The code of the larger ones lives in its own module (named in each docstring), whose tests pin it
to the gradio range pyproject.toml allows (>=6.0.1, the floor .ci/floor_check.sh installs, and
<6.32: 6.31 is the newest these tests have run on). `apply(app)` is called once, where the app is
built (`playground.ui.app.build_app`); the middleware goes in with `launch_options`, and the app's
`Blocks` class carries the server-side ones.
"""
from __future__ import annotations

from typing import Any

from starlette.middleware import Middleware

from playground.ui.checked_blocks import Blocks
from playground.ui.frontend_fix import FrontendFix
from playground.ui.progress_targets import limit_progress_targets

__all__ = ["Blocks", "apply", "frontend_middleware", "free_skips", "limit_progress_targets_patch", "readable_inputs"]


def frontend_middleware() -> Middleware:
    """The frontend's loading statuses (`playground.ui.frontend_fix.FrontendFix`).

    Works around: gradio's `Blocks-<hash>.js` keeps the loading status of every completed event's
    inputs for the life of the page and hands every kept status back to its component on every
    status change, so a click in a long-lived tab costs more and more. The middleware edits that
    minified asset as it is served. Upstream issue: none found.
    Remove when: a gradio release marks only streaming events "closed" on completion and hands a
    status over only when it changed; tests/ui/test_frontend_fix.py then finds that neither
    pattern matches (or the browser bench shows a long-lived tab as fast as a fresh one without it).
    """
    return Middleware(FrontendFix)


def free_skips() -> type:
    """`gr.skip()` outputs answered without rebuilding the component (`playground.ui.skips.Blocks`,
    the base of the app's `Blocks`).

    Works around: gradio's `Blocks.postprocess_data` rebuilds a skipped output from its
    constructor and recomputes its config (pydantic schemas) only to send `{"__type__": "update"}`;
    over a third of the server's CPU with 20 users generating. Upstream issue: none found.
    Remove when: gradio's `postprocess_data` short-circuits a property-less update;
    tests/ui/test_skips.py checks the replies are the ones gradio itself would send.
    """
    from playground.ui.skips import Blocks as SkipBlocks

    return SkipBlocks


def readable_inputs() -> type:
    """Inputs checked before gradio reads them (`playground.ui.checked_blocks.Blocks`).

    Works around: a value a component cannot read (NaN or "abc" into a number field) makes
    gradio's `preprocess_data` answer a bare "Error" with no message. Upstream issue: none found.
    Remove when: gradio's preprocessing names the field and what it takes;
    tests/ui/test_hostile_values.py sends such values and checks the message.
    """
    return Blocks


def limit_progress_targets_patch(app: Any) -> int:
    """Progress only on small components (`playground.ui.progress_targets`).

    Works around: gradio's frontend deep-copies the value of every progress target of every event
    that ran, on each status change, so charts and tables shown earlier slow every later click.
    Sets `show_progress_on` of each event that names none to its light outputs. Upstream issue:
    none found. Remove when: gradio stops snapshotting targets' values on status changes; the
    browser bench (`python -m playground bench browser`) shows no growth without it.
    """
    return limit_progress_targets(app)


def apply(app: Any) -> None:
    """The build-time patches, called once at the end of the app's `with Blocks()` block (every
    event registered, the config not yet frozen)."""
    limit_progress_targets_patch(app)
