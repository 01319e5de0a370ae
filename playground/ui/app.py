"""`build_app(settings)`: the tabs in one gr.Blocks, with no side effects (`prepare_server` has them).

Every user works in their own space (per login with `--auth`, else per browser, kept across
reloads by a random token in the browser's localStorage); see playground/spaces.py.
"""
from __future__ import annotations

import hashlib
import hmac
import inspect
import logging
import secrets
from pathlib import Path
from typing import Any

import gradio as gr
from starlette.middleware import Middleware
from starlette.middleware.gzip import GZipMiddleware

from playground.auth import LoginClients
from playground.child import warm_up
from playground.memory import limit_arenas, release_free_memory
from playground.persistence import check_writable, persistence
from playground.settings import Settings
from playground.spaces import LiveJobs, Spaces
from playground.ui import (
    analyze_tab,
    deeplink_view,
    generate_tab,
    lessons_tab,
    signin,
    space_panel,
    tokenizer_tab,
    train_tab,
)
from playground.ui import gradio_patches
from playground.ui.context import AppContext, refresh_all, remember_answer, skip_repeats
from playground.ui.page_cache import PageCache
from playground.ui.signin import identity, space_note

log = logging.getLogger("playground.app")
TABS = (
    ("tokenizer", "Tokenizer", tokenizer_tab),
    ("train", "Train", train_tab),
    ("generate", "Generate", generate_tab),
    ("analyze", "Analyze", analyze_tab),
    ("lessons", "Lessons", lessons_tab),
    ("space", "My space", space_panel),
)
# gradio's own copies of files offered for download: swept every 10 minutes, kept for an hour.
DELETE_CACHE = (600, 3600)
BROWSER_KEY = "transformer-playground-user"
# gr.Plot centres a chart wider than its box and clips both sides (the y axis goes first). Charts
# are drawn to fit their boxes at a desktop width (playground.charts.layout); in a narrower
# window they start at the left edge and scroll instead of losing an axis.
APP_CSS = (".altair { align-items: flex-start !important; overflow-x: auto; }"
           # A chart's label badge floats over the top-left corner of its box, where the chart's own
           # title starts ("…tance of each input token"): the chart starts below the badge.
           " .block:has(> label[data-testid='block-label'].float) > .altair { padding-top: 28px; }")
# The page (~570 KB of HTML) and /config (~380 KB of JSON) carry every component and event:
# gzip sends about a twelfth to each browser (Starlette leaves the queue's event streams alone),
# and PageCache answers the same request again from memory instead of rebuilding both.
GZIP_MIN_BYTES = 4096


# Gradio's run history keeps the last 100 runs of every public endpoint, outputs and all, in the
# browser's localStorage, and re-reads and rewrites the whole list on each event: clicks got
# slower with every run, in every tab of the app. Workspaces keep what a user makes; no copy of
# a student's results is left in a shared browser. (Older gradio releases, such as the 6.0.1
# floor, have no `run_history` argument to pass.)
RUN_HISTORY_OFF = {"run_history": False} if "run_history" in inspect.signature(gr.Blocks.launch).parameters else {}
# gradio's launch() sends the local URL one HEAD with a 3 s timeout and, when it times out, raises
# with the server already started: on a loaded machine (a workshop server started beside running
# trainings; measured: the first page answer took longer at load 15) the app dies at start. The
# check is for notebooks whose localhost is unreachable (Colab); a served playground skips it.
NO_SELF_CHECK = {"_frontend": False} if "_frontend" in inspect.signature(gr.Blocks.launch).parameters else {}


def launch_options() -> dict[str, Any]:
    """Keyword arguments for `app.launch` that every way of serving the app shares (a fresh dict:
    gradio adds to `app_kwargs`)."""
    return {"css": APP_CSS, **RUN_HISTORY_OFF, **NO_SELF_CHECK,
            "app_kwargs": {"middleware": [Middleware(PageCache),  # outermost: it keeps the gzipped answer
                                          Middleware(GZipMiddleware, minimum_size=GZIP_MIN_BYTES, compresslevel=6),
                                          gradio_patches.frontend_middleware(),  # it edits the plain asset
                                          Middleware(LoginClients)]}}  # who is logging in (per-address limits)


def header_markdown(settings: Settings, notes: tuple[str, ...] = ()) -> str:
    """The header line: product name, device in use, whose space, demo mode (no server paths);
    `notes` (whether work persists, how long an anonymous space lives) follow on a line of their own."""
    demo = " · **demo mode** (capped for a shared server)" if settings.demo else ""
    extra = "\n\n" + " ".join(n for n in notes if n) if any(notes) else ""
    return (
        "## Transformer Playground\n"
        f"Device: **{settings.resolved_device}** · Your tokenizers and models are private to you "
        f"(shipped and library ones are read-only){demo}{extra}"
    )


SECRET_FILE = ".browser-secret"


def prepare_server(settings: Settings) -> dict[str, int]:
    """Start-up housekeeping, run once before serving (launch.py does): recover entries of saves
    killed mid-replace, drop stale temp folders, and make the secret that encrypts browser tokens
    (so a student who reloads, even after a server restart, keeps their space); start the fork
    server that job children come from, so the first Start does not wait for its imports."""
    limit_arenas(2)  # before gradio's worker threads exist: freed memory can go back to the OS
    if settings.isolate_jobs:
        warm_up()
    check_writable(settings.workspace)  # a read-only mount fails here, with its name, not at a first save
    log.warning("%s", persistence(settings.workspace).log_line)
    counts = Spaces(settings.workspace, settings.library).clean_on_start()
    if read_secret(settings.workspace) is None:
        root = settings.workspace
        root.mkdir(parents=True, exist_ok=True)
        tmp = root / f"{SECRET_FILE}.{secrets.token_hex(4)}"
        tmp.write_text(secrets.token_urlsafe(32), encoding="utf-8")
        tmp.chmod(0o600)
        tmp.replace(root / SECRET_FILE)
    return counts


def read_secret(root: Path) -> str | None:
    """The install's browser-token secret, or None before `prepare_server` made one."""
    try:
        text = (root / SECRET_FILE).read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return text if len(text) >= 32 else None


def browser_state_key(secret: str | None) -> str | None:
    """The key gr.BrowserState encrypts the browser token with, derived one way from the install's secret.

    gradio sends this key to every browser in /config (the encryption happens in the browser),
    so it is public: a one-way derivation keeps it stable across restarts (a reloading student
    keeps their space) while the secret itself never leaves the server."""
    if secret is None:
        return None
    return hmac.new(secret.encode("utf-8"), b"gradio-browser-state", hashlib.sha256).hexdigest()[:32]


def build_app(settings: Settings) -> gr.Blocks:
    """Build (not launch) the app for these settings."""
    spaces = Spaces(settings.workspace, settings.library, max_entries=settings.caps.max_entries_per_user)
    with gradio_patches.Blocks(title="Transformer Playground", delete_cache=DELETE_CACHE,
                analytics_enabled=settings.analytics) as app:
        signed_in = signin.enabled()
        notes = (persistence(settings.workspace).page_note, space_note(signed_in) if settings.demo or signed_in else "")
        gr.Markdown(header_markdown(settings, notes), elem_id="header")
        signin.login_button()
        browser = gr.BrowserState(None, storage_key=BROWSER_KEY, secret=browser_state_key(read_secret(spaces.root)))
        user = gr.State(None)
        workspace_version = gr.State(0)
        selection = gr.State({})
        with gr.Tabs() as tabs:
            ctx = AppContext(settings, spaces, workspace_version, selection, tabs, user,
                             jobs=LiveJobs(on_release=release_free_memory))
            owner: list[gr.Tab] = []  # the tab whose build registered each refresher
            for tab_id, label, module in TABS:
                with gr.Tab(label, id=tab_id, elem_id=f"tab-{tab_id}") as tab:
                    ctx.tab = tab
                    module.build(ctx)
                owner += [tab] * (len(ctx.refreshers) - len(owner))
        # The token must be in place before the refreshers list the user's entries.
        loaded = app.load(identity, [browser], [browser, user], queue=False, show_progress="hidden")
        memos: list[gr.State] = []
        for (fn, inputs, outputs, api_name), tab in zip(ctx.refreshers, owner):
            # The page load answers in full (and is the API endpoint); opening the refresher's own
            # tab asks again (another session may have changed the space), and an answer this
            # page already has is skipped, not re-rendered.
            last = gr.State(None)  # fingerprint of the answer this page last received
            loaded.then(remember_answer(fn, len(outputs)), inputs, [*outputs, last], queue=False,
                        show_progress="hidden", api_name=api_name)
            tab.select(skip_repeats(fn, len(outputs)), [*inputs, last], [*outputs, last], queue=False,
                       show_progress="hidden", api_visibility="undocumented")
            memos.append(last)
        for fn, inputs, outputs in ctx.restorers:  # what the user last had on screen (a reload)
            loaded.then(fn, inputs, outputs, queue=False, show_progress="hidden", api_visibility="undocumented")
        # A save anywhere asks every refresher, in one event: the browser's cost of an event grows
        # with every component any earlier event updated (gradio re-reads each one's value), so
        # one event is far cheaper than one per list.
        all_inputs = [x for _, inputs, _, _ in ctx.refreshers for x in inputs]
        all_outputs = [x for _, _, outputs, _ in ctx.refreshers for x in outputs]
        workspace_version.change(
            refresh_all([(skip_repeats(fn, len(outputs)), len(inputs), len(outputs))
                         for fn, inputs, outputs, _ in ctx.refreshers]),
            [*all_inputs, *memos], [*all_outputs, *memos], queue=False, show_progress="hidden",
            api_visibility="undocumented")

        def end_session(request: gr.Request) -> None:
            if request is not None and request.session_hash:
                spaces.end_session(request.session_hash)
                ctx.jobs.stop_session(request.session_hash)  # its trainings save and end: their owner has gone
            release_free_memory()
            spaces.sweep_idle_spaces()  # at most hourly: anonymous spaces idle for weeks go

        app.unload(end_session)
        deeplink_view.wire(app, ctx)  # ?tab=train&preset=...&set=key=value links open an exercise
        gradio_patches.apply(app)  # last: every event is registered, the config not yet frozen
    app.queue(default_concurrency_limit=settings.caps.light_slots)
    return app
