"""What a lesson is: a small, pure computation with its own words, formula and knobs.

A lesson never imports gradio. The Lessons tab renders `Lesson.params` as widgets and a
`LessonView` as charts, tables and notes; `python -m playground lesson NAME [--json]` prints
the same `LessonView.numbers`. Every size a user can change is capped by its `Param` bounds,
checked by `Lesson.run` before anything is allocated.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import altair as alt
import pandas as pd

from playground.charts.layout import chart_frames

from playground.errors import PlaygroundError

ParamKind = Literal["int", "float", "choice", "text", "bool"]


class LessonInputError(PlaygroundError):
    """A lesson input that cannot be used; the message says what to change.

    A PlaygroundError (so a ValueError): the tabs show its message as is, the CLI prints it and exits 2.
    """


@dataclass(frozen=True)
class Param:
    """One knob of a lesson: its widget kind, default and bounds (the bounds are the caps)."""

    name: str
    label: str
    kind: ParamKind
    default: Any
    minimum: float | None = None
    maximum: float | None = None
    step: float | None = None
    choices: tuple[str, ...] = ()
    max_chars: int = 2000  # text params: longest accepted input
    help: str = ""

    def coerce(self, value: Any) -> Any:
        """`value` checked and converted to this param's type, or LessonInputError saying why."""
        if value is None:
            return self.default
        if self.kind == "bool":
            return bool(value)
        if self.kind == "choice":
            if str(value) not in self.choices:
                raise LessonInputError(f"{self.label}: choose one of {', '.join(self.choices)}.")
            return str(value)
        if self.kind == "text":
            text = str(value)
            if len(text) > self.max_chars:
                raise LessonInputError(f"{self.label}: at most {self.max_chars:,} characters "
                                       f"(got {len(text):,}); shorten it.")
            return text
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise LessonInputError(f"{self.label}: expected a number, got {value!r}.") from None
        if math.isnan(number):
            raise LessonInputError(f"{self.label}: expected a number, got NaN.")
        if self.kind == "int":
            if number != int(number):
                raise LessonInputError(f"{self.label}: expected a whole number, got {value}.")
            number = int(number)
        if self.minimum is not None and number < self.minimum:
            raise LessonInputError(f"{self.label}: at least {self.minimum:g} (got {number:g}).")
        if self.maximum is not None and number > self.maximum:
            raise LessonInputError(f"{self.label}: at most {self.maximum:g} (got {number:g}).")
        return number


@dataclass
class LessonView:
    """What one run of a lesson shows.

    numbers: JSON-able figures (the CLI's --json output; tests pin them).
    tables: named DataFrames, shown in order.
    charts: altair charts, shown in order.
    notes: short markdown lines shown under the charts (e.g. where the notes' printed value differs).
    """

    numbers: dict[str, Any] = field(default_factory=dict)
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    charts: list[alt.TopLevelMixin] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


    def data(self) -> pd.DataFrame:
        """Every chart's data and every table in one long frame (the tab's CSV download);
        `shown_in` names the chart (by its title) or table each row comes from."""
        parts = []
        for i, chart in enumerate(self.charts):
            title = getattr(chart, "title", None)
            name = title if isinstance(title, str) and title else f"chart {i + 1}"
            parts += [frame.assign(shown_in=name) for frame in chart_frames(chart)]
        parts += [frame.assign(shown_in=name) for name, frame in self.tables.items()]
        if not parts:
            return pd.DataFrame({"shown_in": []})
        long = pd.concat(parts, ignore_index=True, sort=False)
        return long[["shown_in", *[c for c in long.columns if c != "shown_in"]]]


@dataclass(frozen=True)
class Lesson:
    """One topic of the Lessons tab (and of `python -m playground lesson NAME`).

    text: two or three sentences in our own words; formula: markdown with LaTeX ($...$);
    see_also: where the idea matters in the other tabs; presets: one-click inputs (name -> values);
    compute: the pure computation, called with every param by name, already coerced.
    max_charts / max_tables: how many slots the tab reserves for this lesson's view.
    short: the tab's label (every lesson's tab and the claims' fit one row at a desktop width).
    """

    name: str
    title: str
    text: str
    formula: str
    see_also: str
    params: tuple[Param, ...]
    compute: Callable[..., LessonView]
    presets: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    max_charts: int = 2
    max_tables: int = 2
    short: str = ""  # the tab's label when the title is too long for a row of tabs

    @property
    def label(self) -> str:
        """What the lesson's tab says: `short`, else the title."""
        return self.short or self.title

    def values(self, given: Mapping[str, Any] | None = None, preset: str | None = None) -> dict[str, Any]:
        """Every param's value: defaults, then the preset's, then `given`, each checked."""
        merged: dict[str, Any] = {p.name: p.default for p in self.params}
        if preset is not None:
            if preset not in self.presets:
                raise LessonInputError(f"Unknown example {preset!r}; choose one of {', '.join(self.presets)}.")
            merged.update(self.presets[preset])
        for key, value in (given or {}).items():
            if key not in merged:
                raise LessonInputError(f"{self.title} has no setting {key!r}; it has {', '.join(merged)}.")
            merged[key] = value
        by_name = {p.name: p for p in self.params}
        return {key: by_name[key].coerce(value) for key, value in merged.items()}

    def run(self, given: Mapping[str, Any] | None = None, preset: str | None = None) -> LessonView:
        """Check the inputs against the caps, then compute."""
        return self.compute(**self.values(given, preset))
