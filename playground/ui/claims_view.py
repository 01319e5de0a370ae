""""Claims, reproduced" (inside the Lessons tab): a claim of the lecture notes, our shipped
figure beside the paper's, the verdict, and a Re-run that trains the claim's runs again.

Thin: the numbers, table, chart data and verdict come from playground.reproduce; the chart from
playground.charts.reproduce. A re-run is a heavy job like a training: it runs in the user's own
space, one at a time per user (the "train" lane of ctx.jobs), in the server's heavy lane (its
cap on jobs at once), in a child process when the server isolates jobs, and only its owner's
Stop (which cancels this session's event) stops it. The user picks a claim by name; no path
is typed anywhere.
"""
from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import gradio as gr

from playground.charts.reproduce import claim_chart
from playground.child import iter_in_child
from playground.data.policy import data_policy
from playground.errors import PlaygroundError
from playground.reproduce import ClaimProgress, ClaimResult, all_claims, get_claim, run_claim
from playground.ui.components import Chart
from playground.ui.context import AppContext, user_errors
from playground.ui.tables import Table
from playground.ui.train_tab import progress_html
from playground.ui.updates import Updates, plain

TARGET = "playground.reproduce:run_claim"
UI_INTERVAL_S = 1.0


@dataclass(frozen=True)
class ClaimView(Updates):
    """What the view shows (a field left at gr.skip() keeps what is on screen)."""

    status: Any
    about: Any = field(default_factory=gr.skip)
    chart: Any = field(default_factory=gr.skip)
    table: Any = field(default_factory=gr.skip)
    verdict: Any = field(default_factory=gr.skip)


def claim_choices() -> list[tuple[str, str]]:
    """(title, name) of every claim, for the dropdown."""
    return [(c.title, name) for name, c in all_claims().items()]


def about_markdown(name: str) -> str:
    """The claim in our words, the paper's figure and its citation, and how our recipe differs."""
    c = get_claim(name)
    parts = [f"**Claim.** {c.claim}", f"**Paper.** {c.paper}", f"*{c.citation}*"]
    if c.note:
        parts.append(f"**Our recipe.** {c.note} (`presets/experiments/{c.name}.toml`)")
    return "\n\n".join(parts)


# Plain text symbols: colour emoji are missing from many fonts (a box on a bare Linux browser).
VERDICT_MARKS = {True: "✓", False: "✗", None: "?"}


def verdict_markdown(result: ClaimResult, origin: str) -> str:
    """The verdict line and where the numbers come from (shipped or re-run, machine, time)."""
    mark = VERDICT_MARKS[result.holds]
    m = result.meta
    machine = m.get("machine", {})
    where = (f"{origin}: {m.get('wall_s', '?')} s on {machine.get('cpu', '?')} ({machine.get('threads', '?')} "
             f"thread{'s' if machine.get('threads') != 1 else ''}, {machine.get('device', 'cpu')}), "
             f"{str(m.get('date', '?'))[:10]}, recipe {m.get('recipe_hash', '?')}")
    if m.get("quick"):
        where += " · a quick smoke run: the numbers mean nothing"
    return f"{mark} **{result.verdict[:1].upper()}{result.verdict[1:]}**\n\n<small>{where}</small>"


def result_view(name: str, result: ClaimResult, origin: str, status: str) -> ClaimView:
    """The whole view for one result."""
    c = get_claim(name)
    return ClaimView(status=status, about=about_markdown(name), chart=claim_chart(result.chart, c.chart, c.title),
                     table=result.table, verdict=verdict_markdown(result, origin))


@user_errors
def show_claim(name: str) -> ClaimView:
    """The shipped result of claim `name`, at once (no training)."""
    try:
        result = get_claim(name).shipped()
    except PlaygroundError as exc:
        return ClaimView(status=progress_html(0, 1, str(exc), None, "idle"), about=about_markdown(name), chart=None,
                         table=None, verdict="")
    return result_view(name, result, "shipped result", progress_html(1, 1, "shipped result · Re-run trains it again",
                                                                      None, "done"))


def rerun_claim(workspace: Any, settings: Any, name: str, quick: bool = False) -> Iterator[ClaimView]:
    """Train the claim's runs again in the user's space; progress, then the new result."""
    get_claim(name)  # a clear error for an unknown name before any job starts
    caps = settings.caps
    job = {"name": name, "workspace": workspace, "quick": quick, "device": "cpu", "limits": caps,
           "max_steps_cap": caps.max_train_steps, "policy": data_policy(settings, workspace)}
    events = iter_in_child(TARGET, job, stop_kw="stop") if settings.isolate_jobs else _in_process(job)
    last = 0.0
    try:
        for ev in events:
            if isinstance(ev, ClaimResult):
                text = f"re-run finished in {ev.meta.get('wall_s', '?')} s · runs kept in your space as reproduce-{name}-*"
                yield result_view(name, ev, "your re-run", progress_html(1, 1, text, None, "done"))
            elif isinstance(ev, ClaimProgress):
                if ev.stopped:
                    yield ClaimView(status=progress_html(ev.index, ev.n_runs, ev.message, None, "stopped"))
                    return
                if time.monotonic() - last >= UI_INTERVAL_S:
                    last = time.monotonic()
                    text = f"run {ev.index + 1} of {ev.n_runs} · step {ev.step}/{ev.max_steps} · {ev.message}"
                    yield ClaimView(status=progress_html(round(1000 * ev.fraction), 1000, text))
    finally:
        events.close()  # a Stop closes this generator: the child (or the engine) stops its run


def _in_process(job: dict[str, Any]) -> Iterator[ClaimProgress | ClaimResult]:
    return run_claim(**job)


def build(ctx: AppContext) -> None:
    """Lay the view out inside the open container (a tab of the Lessons tab)."""
    st = ctx.settings
    names = list(all_claims())
    gr.Markdown("Each claim below is a small experiment: the runs it needs, trained on this kind of machine, "
                "our figure beside the published one, and a verdict computed from the numbers. The result "
                "that ships shows at once; **Re-run** trains it again (a few minutes on two CPU cores). "
                "Terminal twin: `python -m playground reproduce NAME`.")
    first = show_claim(names[0])
    with gr.Row():
        pick = gr.Dropdown(claim_choices(), value=names[0], label="Claim", elem_id="claims-pick", scale=3)
        rerun_btn = gr.Button("Re-run", variant="primary", elem_id="claims-rerun", scale=1)
        stop_btn = gr.Button("Stop", variant="stop", elem_id="claims-stop", scale=1)
    status = gr.HTML(first.status, elem_id="claims-status")
    verdict = gr.Markdown(first.verdict, elem_id="claims-verdict")
    with gr.Row():
        with gr.Column(scale=3):
            chart = Chart(first.chart, label="Our figure", elem_id="claims-chart")
        with gr.Column(scale=2):
            about = gr.Markdown(first.about, elem_id="claims-about")
    table = Table(first.table, label="Our numbers", elem_id="claims-table", interactive=False)
    outputs = ClaimView.wire(status=status, about=about, chart=chart, table=table, verdict=verdict)
    def _show(name: str) -> tuple[Any, ...]:
        return plain(show_claim(name))

    pick.change(_show, [pick], outputs, api_name="claims_show", queue=False, show_progress="hidden")

    def _rerun(space: Any, name: str) -> Iterator[ClaimView]:
        with ctx.jobs.claim(space.key, "train", f"reproduce-{name}", st.caps.max_trainings_per_user, "training"):
            yield from rerun_claim(space, st, name)

    run_event = rerun_btn.click(None, None, [status], js=f"() => {json.dumps(ctx.queued_notice('Re-run'))}",
                                queue=False, show_progress="hidden").then(
        ctx.per_user(_rerun), [ctx.user, pick], outputs, api_name="claims_rerun", **ctx.heavy())
    ctx.reset_on_failure(run_event, status, "Not run: see the message above.")
    stop_btn.click(lambda: progress_html(0, 1, "stopped: nothing of this re-run is shown; the shipped result stays",
                                         None, "stopped"),
                   None, [status], cancels=[run_event], api_name="claims_stop", queue=False)
