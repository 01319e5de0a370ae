"""What every tab's `build(ctx)` receives: settings, user spaces, lanes and the app-wide events."""
from __future__ import annotations

import functools
import hashlib
import inspect
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import gradio as gr
import pandas as pd
import torch

from playground.errors import PlaygroundError
from playground.settings import Settings
from playground.spaces import LiveJobs, Spaces, UserSpace, user_key
from playground.ui.signin import username_of
from playground.ui.updates import plain, plain_stream

HEAVY = "heavy"  # lane of training, tokenizer builds and experiments
LIGHT = "light"  # lane of generation, classification and encoding
ANALYSIS = "analysis"  # lane of per-input analysis (seconds each: kept out of the light lane)
log = logging.getLogger("playground.ui")


@dataclass
class AppContext:
    """Shared handles for the tabs.

    - `workspace_version` (gr.State[int]): a handler that saves to the user's space returns
      `version + 1` into it; every function registered with `on_workspace_change` then runs
      (all in one event; also on page load, and each when its own tab is selected), so new
      tokenizers and checkpoints show up in other tabs' choices without a restart.
    - `selection` (gr.State[dict]): what one tab hands another (Generate -> Analyze target).
    - `tabs`: the gr.Tabs. Never make it an event output (the browser would then re-read the
      whole app on every later event); open a tab with `playground.ui.tab_switch` instead.
    - `user` (gr.State[str | None]): this browser's random token (from its localStorage), which
      `per_user` turns into the user's own space; with `--auth` the login name decides instead.
    - `spaces` / `jobs`: the server's user spaces and its register of live jobs.
    - `tab`: the top-level gr.Tab whose build is running (set by `build_app` before each): a
      tab can compute something when it is first opened instead of at start-up.
    """

    settings: Settings
    spaces: Spaces
    workspace_version: gr.State
    selection: gr.State
    tabs: gr.Tabs
    user: gr.State
    jobs: LiveJobs = field(default_factory=LiveJobs)
    refreshers: list[tuple[Callable[..., Any], list[Any], list[Any], str]] = field(default_factory=list)
    restorers: list[tuple[Callable[..., Any], list[Any], list[Any]]] = field(default_factory=list)
    tab: gr.Tab | None = None

    def on_workspace_change(
        self, fn: Callable[..., Any], inputs: Sequence[Any], outputs: Sequence[Any], api_name: str | None = None
    ) -> None:
        """Run `fn(space, *inputs)` into `outputs` whenever the user's space may have changed.

        `fn` takes the user's space first, like a `per_user` handler. The endpoint is exposed
        as `/refresh_<api_name>` (default: the function's name).
        """
        name = api_name or (fn.__name__ if fn.__name__.isidentifier() else f"{len(self.refreshers)}")
        self.refreshers.append((self.per_user(fn), [self.user, *inputs], list(outputs), f"refresh_{name}"))

    def on_page_load(self, fn: Callable[..., Any], inputs: Sequence[Any], outputs: Sequence[Any]) -> None:
        """Run `fn(space, *inputs)` into `outputs` once when a page opens, after the user is known:
        what the user last had on screen comes back after a reload (playground.screen_memory)."""
        self.restorers.append((self.per_user(fn), [self.user, *inputs], list(outputs)))

    # -- who is asking -------------------------------------------------------------------
    def space_for(self, token: str | None, request: gr.Request | None) -> UserSpace:
        """The space of whoever sent `request`: their login (--auth, else Hugging Face: `token` is then
        "hf:<name>", playground.ui.signin), else their browser, else their connection."""
        username = (getattr(request, "username", None) if request is not None else None) or username_of(token)
        session = getattr(request, "session_hash", None) if request is not None else None
        key = user_key(username, token, session)
        return self.spaces.space(key, session)

    def per_user(self, fn: Callable[..., Any], *bound: Any) -> Callable[..., Any]:
        """A listener function `(user_token, *inputs)` that calls `fn(space, *bound, *inputs)`.

        Put `ctx.user` first in the listener's inputs. Generators stay generators (streaming),
        a `progress=gr.Progress()` parameter of `fn` is passed through, and domain errors become
        clear messages (`user_errors`).
        """
        wants_progress = "progress" in inspect.signature(fn).parameters
        resolve = self.space_for
        # gradio injects the request and progress only into leading positional parameters.
        # (named results, playground.ui.updates.Updates, reach gradio as their values)
        if inspect.isgeneratorfunction(fn) and wants_progress:
            def listener(request: gr.Request, progress=gr.Progress(), token=None, *args):  # noqa: B008 - gradio injects it
                yield from plain_stream(fn(resolve(token, request), *bound, *args, progress=progress))
        elif inspect.isgeneratorfunction(fn):
            def listener(request: gr.Request, token=None, *args):
                yield from plain_stream(fn(resolve(token, request), *bound, *args))
        elif wants_progress:
            def listener(request: gr.Request, progress=gr.Progress(), token=None, *args):  # noqa: B008 - gradio injects it
                return plain(fn(resolve(token, request), *bound, *args, progress=progress))
        else:
            def listener(request: gr.Request, token=None, *args):
                return plain(fn(resolve(token, request), *bound, *args))
        listener.__name__ = getattr(fn, "__name__", "handler")
        listener.__doc__ = getattr(fn, "__doc__", None)
        return user_errors(listener)

    # -- lanes ---------------------------------------------------------------------------
    @property
    def heavy_limit(self) -> int:
        """How many heavy jobs (training, tokenizer builds, experiments) the server runs at once."""
        return self.settings.caps.heavy_slots

    def heavy(self) -> dict[str, Any]:
        """Keyword arguments for a heavy listener: the heavy lane's concurrency id and limit."""
        return {"concurrency_id": HEAVY, "concurrency_limit": self.heavy_limit}

    def light(self) -> dict[str, Any]:
        """Keyword arguments for a light listener (generate, classify, encode)."""
        return {"concurrency_id": LIGHT, "concurrency_limit": self.settings.caps.light_slots}

    def analysis(self) -> dict[str, Any]:
        """Keyword arguments for per-input analysis: a lane of its own, beside the light one."""
        return {"concurrency_id": ANALYSIS, "concurrency_limit": self.settings.caps.analysis_slots}

    def notice(self, what: str) -> Callable[[], str]:
        """A no-input listener that writes `queued_notice(what)` into a status (run with queue=False)."""
        text = self.queued_notice(what)

        def show_queued() -> str:
            return text

        return show_queued

    def reset_on_failure(self, event: Any, status: Any, text: str,
                         keep: Callable[[str], bool] = lambda shown: False) -> None:
        """After `event` fails (its message shows as a toast), replace its queued notice by `text`,
        unless `keep(what the status shows)`: a Stop cancels the event, and gradio may report
        that cancellation as a failure after the Stop has already written its own status."""
        def failed(shown: str | None) -> Any:
            return gr.skip() if keep(shown or "") else text

        event.failure(failed, [status], [status], queue=False, show_progress="hidden")

    def queued_notice(self, what: str) -> str:
        """The status line a heavy action shows until a slot frees up (replaced when it starts)."""
        limit = self.heavy_limit
        return (f"⏳ {what}: queued for a heavy slot (this server runs {limit} training / tokenizer-build / "
                f"experiment job{'s' if limit != 1 else ''} at once); the position in line shows here and it "
                "starts by itself. Generate and per-input analysis do not wait for it.")


def user_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn every failure into a gr.Error a person can act on, at the UI boundary.

    PlaygroundError keeps its message; running out of memory says the job is too big for this
    server; anything else is logged with its trace and shown as a short message without paths.
    """
    if inspect.isgeneratorfunction(fn):

        def gen_wrapper(*args: Any, **kwargs: Any):
            try:
                yield from fn(*args, **kwargs)
            except Exception as exc:  # noqa: BLE001 - the UI boundary
                raise as_user_error(exc) from None

        wrapper = gen_wrapper
    else:

        def wrapper(*args: Any, **kwargs: Any):
            try:
                return fn(*args, **kwargs)
            except Exception as exc:  # noqa: BLE001 - the UI boundary
                raise as_user_error(exc) from None

    functools.update_wrapper(wrapper, fn)
    return wrapper


def as_user_error(exc: BaseException) -> gr.Error:
    """The gr.Error for an exception raised by a handler."""
    if isinstance(exc, gr.Error):
        return exc
    if isinstance(exc, PlaygroundError):
        return gr.Error(str(exc))
    if isinstance(exc, (MemoryError, getattr(torch, "OutOfMemoryError", MemoryError))):
        return gr.Error("That is too big for this server: it ran out of memory. Try a smaller model, batch, "
                        "sequence length or text; nothing of yours was lost.")
    log.exception("unexpected error in a handler", exc_info=exc)
    return gr.Error(f"Something went wrong on the server ({type(exc).__name__}); nothing of yours was lost. "
                    "Check the inputs and try again; if it keeps happening, tell the instructor or open an issue.")


def choices_update(names: list[str], current: str | None = None, first: str | None = None) -> dict[str, Any]:
    """A dropdown update that keeps the current value when it still exists, else picks `first`
    (when listed) or the first name.

    The value is sent only when it must change: a value in the answer would undo a pick the
    user made while this refresh was on its way."""
    if current is not None and current in names:
        return gr.update(choices=names)
    return gr.update(choices=names, value=first if first in names else (names[0] if names else None))


def fingerprint(values: Sequence[Any]) -> str:
    """A digest of a handler's outputs (updates, tables, text), equal exactly when they are."""
    digest = hashlib.sha256()

    def feed(value: Any) -> None:
        if isinstance(value, pd.DataFrame):
            digest.update(b"frame:" + value.to_csv().encode())
        elif isinstance(value, dict):
            digest.update(b"{")
            for key in sorted(value, key=str):
                feed(key)
                feed(value[key])
            digest.update(b"}")
        elif isinstance(value, (list, tuple)):
            digest.update(b"[")
            for item in value:
                feed(item)
            digest.update(b"]")
        else:
            digest.update(f"{type(value).__name__}:{value!r};".encode())

    feed(list(values))
    return digest.hexdigest()


def remember_answer(listener: Callable[..., Any], n_outputs: int) -> Callable[..., Any]:
    """`listener` with one more output: the fingerprint of its answer (into a gr.State)."""
    def with_fingerprint(request: gr.Request, *args: Any) -> tuple[Any, ...]:
        answer = listener(request, *args)
        values = tuple(answer) if n_outputs > 1 else (answer,)
        return (*values, fingerprint(values))

    with_fingerprint.__name__ = listener.__name__
    return with_fingerprint


def skip_repeats(listener: Callable[..., Any], n_outputs: int) -> Callable[..., Any]:
    """`listener` that answers gr.skip() when its answer equals what this page last received.

    Its last input and last output are a gr.State holding that answer's fingerprint. A list
    refresher runs on every save and tab switch; re-sending an unchanged table or dropdown
    makes the browser re-render it, which in a tab open for hours adds up."""
    def unless_unchanged(request: gr.Request, *args: Any) -> tuple[Any, ...]:
        *inputs, last = args
        answer = listener(request, *inputs)
        values = tuple(answer) if n_outputs > 1 else (answer,)
        digest = fingerprint(values)
        if digest == last:
            return tuple(gr.skip() for _ in range(n_outputs + 1))
        return (*values, digest)

    unless_unchanged.__name__ = listener.__name__
    return unless_unchanged


def refresh_all(parts: Sequence[tuple[Callable[..., Any], int, int]]) -> Callable[..., Any]:
    """One listener running several `skip_repeats` refreshers, given as (listener, n_inputs,
    n_outputs); its inputs are each one's inputs in order, then each one's memo; its outputs
    each one's outputs, then each one's memo."""
    def refresh(request: gr.Request, *args: Any) -> tuple[Any, ...]:
        n_in = sum(n for _, n, _ in parts)
        values, memos = args[:n_in], args[n_in:]
        answers: list[Any] = []
        new_memos: list[Any] = []
        start = 0
        for (listener, n_inputs, _n_outputs), memo in zip(parts, memos):
            *outputs, new_memo = listener(request, *values[start:start + n_inputs], memo)
            start += n_inputs
            answers += outputs
            new_memos.append(new_memo)
        return (*answers, *new_memos)

    return refresh


def first_on_page(restored: bool, name: str | None) -> tuple[Any, Any]:
    """(restored, pending) for a tab that brings back the user's last work once per page: the
    first checkpoint the page shows goes into `pending` (whose change runs the restore), every
    later choice leaves both alone, so a model switch starts no event at all."""
    return (gr.skip(), gr.skip()) if restored else (True, {"model": name})


def model_choices(workspace: Any, current: str | None, first: str | None = None) -> dict[str, Any]:
    """A checkpoint dropdown's update: every model the user can see (own, shared, library); a new
    page opens on `first` when it is listed (the model the user last used there), else on the demo
    GPT (settings.FIRST_MODEL), the model the README starts with."""
    from playground.settings import FIRST_MODEL

    names = workspace.names("models")
    return choices_update(names, current, first if first in names else FIRST_MODEL)


def text_hint(ctx: AppContext, field: str) -> str | None:
    """'Up to N characters on this server' under a text box a demo server caps (None elsewhere)."""
    value = getattr(ctx.settings.caps, field, None) if ctx.settings.demo else None
    return f"up to {value:,} characters on this server" if value else None
