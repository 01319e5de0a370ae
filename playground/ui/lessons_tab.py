"""The Lessons tab: one inner tab per lesson of `playground.lessons`, drawn from its `Lesson` alone
(text, formula, one widget per Param, examples, chart and table slots), so a new lesson needs no
code here. Handlers only turn widget values into `Lesson.run(...)` and its view into updates."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gradio as gr

from playground.lessons import Lesson, LessonInputError, LessonView, all_lessons
from playground.scratch import download_dir
from playground.ui import claims_view
from playground.ui.components import Chart, Slider
from playground.ui.context import AppContext, user_errors
from playground.ui.tables import Table, column_widths

LANE = "lessons"  # the lessons' own queue lane: many students pressing at once wait here, not elsewhere
LANE_SLOTS = 2
LATEX = [{"left": "$$", "right": "$$", "display": True}, {"left": "$", "right": "$", "display": False}]
SLIDER_MAX_STEPS = 2000  # a numeric range with more steps than this gets a number box, not a slider
INTRO = ("Each lesson is a small live calculation: change a setting or pick an example and the pictures and "
         "tables follow. Where the lecture notes print a number that is off, the notes under the charts say so "
         "and give the exact value. The same numbers from a terminal: `python -m playground lesson NAME --json`.")


def widget(param: Any) -> gr.components.Component:
    """The input component for one Param (its bounds are the component's bounds)."""
    info = param.help or None
    if param.kind == "choice":
        return gr.Dropdown(list(param.choices), value=param.default, label=param.label, info=info, min_width=220)
    if param.kind == "bool":
        return gr.Checkbox(value=bool(param.default), label=param.label, info=info)
    if param.kind == "text":
        return gr.Textbox(value=str(param.default), label=param.label, info=info, max_length=param.max_chars,
                          lines=1, scale=2, min_width=240)
    step = param.step or (1 if param.kind == "int" else 0.01)
    bounded = param.minimum is not None and param.maximum is not None
    if bounded and (param.maximum - param.minimum) / step <= SLIDER_MAX_STEPS:
        return Slider(param.minimum, param.maximum, value=param.default, step=step, label=param.label, info=info,
                      min_width=200)
    return gr.Number(value=param.default, label=param.label, info=info, minimum=param.minimum,
                     maximum=param.maximum, precision=0 if param.kind == "int" else None)


def header_markdown(lesson: Lesson) -> str:
    """Title, our explanation, the formula and where the idea matters elsewhere in the app."""
    return f"### {lesson.title}\n{lesson.text}\n\n{lesson.formula}\n\n*Where it matters:* {lesson.see_also}"


def notes_markdown(view: LessonView) -> str:
    """The view's notes as a bullet list (empty when there are none)."""
    return "\n".join(f"- {note}" for note in view.notes)


def preset_values(lesson: Lesson, preset: str | None) -> list[Any]:
    """Every param's value for an example (defaults where the example says nothing), in param order."""
    values = {p.name: p.default for p in lesson.params}
    if preset in lesson.presets:
        values.update(lesson.presets[preset])
    return [values[p.name] for p in lesson.params]


def data_csv(lesson: Lesson, view: LessonView) -> str | None:
    """Every chart's data and table of `view` as one CSV for the download button (None if empty)."""
    frame = view.data()
    if frame.empty:
        return None
    path = download_dir("playground-lesson-") / f"lesson-{lesson.name}.csv"
    frame.to_csv(path, index=False)
    return str(path)


def view_updates(lesson: Lesson, view: LessonView) -> list[Any]:
    """Notes, then one update per chart slot, then one per table slot (unused slots hidden), then
    the CSV of the view's data."""
    charts = list(view.charts)[: lesson.max_charts]
    tables = list(view.tables.items())[: lesson.max_tables]
    out: list[Any] = [notes_markdown(view)]
    out += [gr.update(value=c, visible=True) for c in charts]
    out += [gr.update(value=None, visible=False)] * (lesson.max_charts - len(charts))
    out += [gr.update(value=frame, label=name, visible=True, column_widths=column_widths(frame))
            for name, frame in tables]
    out += [gr.update(value=None, visible=False)] * (lesson.max_tables - len(tables))
    out.append(data_csv(lesson, view))
    return out


def run_lesson(lesson: Lesson, *values: Any) -> list[Any]:
    """Run `lesson` on the widgets' values (checked against the caps) and return the slot updates."""
    given = {p.name: v for p, v in zip(lesson.params, values)}
    return view_updates(lesson, lesson.run(given))


def input_problem(lesson: Lesson, error: LessonInputError) -> list[Any]:
    """What a run with unusable input shows: the message where the notes go (and as a toast), and
    everything else as it was. (A raised gr.Error would blank every chart and table of the lesson.)"""
    gr.Warning(str(error))
    return [f"**Cannot run this:** {error}", *[gr.skip()] * (lesson.max_charts + lesson.max_tables + 1)]


def _runner(lesson: Lesson) -> Callable[..., list[Any]]:
    def run(*values: Any) -> list[Any]:
        try:
            return run_lesson(lesson, *values)
        except LessonInputError as exc:
            return input_problem(lesson, exc)

    run.__name__ = f"lesson_{lesson.name}"
    return user_errors(run)


def _filler(lesson: Lesson) -> Callable[[str | None], list[Any]]:
    def fill(preset: str | None) -> list[Any]:
        return preset_values(lesson, preset)

    return fill


def _once(handler: Callable[..., list[Any]], n_outputs: int) -> Callable[..., list[Any]]:
    """`handler` the first time in a page (its outputs, then True for the page's flag); after
    that nothing is recomputed (skips)."""
    def run(done: bool, *values: Any) -> list[Any]:
        if done:
            return [gr.skip()] * n_outputs + [True]
        return [*handler(*values), True]

    return run


def lesson_view(lesson: Lesson) -> tuple[list[Any], list[Any], Callable[..., Any]]:
    """Lay out one lesson (empty until it runs) and wire its events; returns (widgets, output
    slots, run handler)."""
    lane = {"concurrency_id": LANE, "concurrency_limit": LANE_SLOTS}
    gr.Markdown(header_markdown(lesson), latex_delimiters=LATEX, elem_id=f"lesson-{lesson.name}-about")
    # Examples and Run above the settings: a lesson with many settings (Attention's Q, K, V, score,
    # mask and temperature) pushed Run below a laptop's window (y = 651 of 625).
    with gr.Row(equal_height=True):
        example = gr.Dropdown(list(lesson.presets), value=None, label="Examples (fill the settings)", scale=3,
                              elem_id=f"lesson-{lesson.name}-example")
        button = gr.Button("Run", variant="primary", scale=1, elem_id=f"lesson-{lesson.name}-run")
    with gr.Row(equal_height=False):
        widgets = [widget(p) for p in lesson.params]
    notes = gr.Markdown("", elem_id=f"lesson-{lesson.name}-notes")
    with gr.Row(equal_height=False):
        charts = [Chart(label=f"{lesson.title}: chart {i + 1}", show_label=False, min_width=560, visible=False)
                  for i in range(lesson.max_charts)]
    tables = [Table(value=None, label=f"table {i + 1}", visible=False, interactive=False, max_height=360, wrap=True)
              for i in range(lesson.max_tables)]
    csv = gr.DownloadButton("Data of these charts and tables (CSV)", value=None, size="sm",
                            elem_id=f"lesson-{lesson.name}-csv")
    outputs = [notes, *charts, *tables, csv]
    handler = _runner(lesson)
    # One event for every way of asking (a click, a slider let go, a choice, Enter in a box): each
    # event is a dependency in the page config every browser downloads, so they are not one per widget.
    triggers = [button.click]
    for w in widgets:
        if isinstance(w, gr.Slider):
            triggers.append(w.release)
        elif isinstance(w, (gr.Dropdown, gr.Checkbox)):
            triggers.append(w.input)
        elif isinstance(w, (gr.Textbox, gr.Number)):
            triggers.append(w.submit)
    gr.on(triggers, handler, widgets, outputs, api_name=f"lesson_{lesson.name}", **lane)
    example.input(_filler(lesson), [example], widgets, queue=False, show_progress="hidden").then(
        handler, widgets, outputs, api_visibility="undocumented", **lane)
    return widgets, outputs, handler


def build(ctx: AppContext) -> None:
    """Lay out the Lessons tab: an intro line, one inner tab per lesson, then the claims reproduced."""
    gr.Markdown(INTRO)
    lessons = list(all_lessons().values())
    # Only gr.Tab children inside the gr.Tabs: gradio's frontend numbers a tab by its position
    # among *all* the Tabs' children and files it at that index of its tab list, so one State in
    # between made each later tab overwrite its right neighbour when clicked (issue #30).
    drawn = gr.State(False)  # the first lesson has been drawn in this page
    with gr.Tabs(elem_id="lessons-tabs"):
        for i, lesson in enumerate(lessons):
            with gr.Tab(lesson.label, id=f"lesson-{lesson.name}", elem_id=f"lesson-tab-{lesson.name}") as tab:
                widgets, outputs, handler = lesson_view(lesson)
            # Each lesson computes when its tab opens; the first (open by default) when the Lessons
            # tab is first opened in a page, not at start-up (a quarter of a second of every start).
            if i:
                tab.select(handler, widgets, outputs, api_visibility="undocumented",
                           concurrency_id=LANE, concurrency_limit=LANE_SLOTS)
            elif ctx.tab is not None:
                ctx.tab.select(_once(handler, len(outputs)), [drawn, *widgets], [*outputs, drawn],
                               api_visibility="undocumented", concurrency_id=LANE, concurrency_limit=LANE_SLOTS)
        with gr.Tab("Claims, reproduced", id="lesson-claims", elem_id="lesson-tab-claims"):
            claims_view.build(ctx)
