"""`python -m playground lesson NAME [--set key=value ...] [--example PRESET] [--json]`: one lesson
of the Lessons tab, its numbers and tables printed (the same `LessonView` the tab shows);
`python -m playground lesson --list` names the lessons, their settings and examples."""
from __future__ import annotations

import argparse
import json
import sys

import pandas as pd

from playground.lessons import (
    Lesson,
    LessonInputError,
    LessonView,
    all_lessons,
    get_lesson,
)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("lesson", help="print the numbers of one lesson of the Lessons tab")
    parser.add_argument("name", nargs="?", help="the lesson (see --list)")
    parser.add_argument("--list", action="store_true", help="list the lessons, their settings and examples")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="change one setting (repeatable), e.g. --set temperature=0.5")
    parser.add_argument("--example", default=None, help="start from one of the lesson's examples (presets)")
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    parser.set_defaults(func=run)


def parse_sets(pairs: list[str]) -> dict[str, str]:
    """['key=value', ...] -> {key: value}; the lesson's params convert and check the values."""
    given = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise LessonInputError(f"--set needs KEY=VALUE, got {pair!r}.")
        given[key.strip()] = value
    return given


def describe(lesson: Lesson) -> dict[str, object]:
    """A lesson's name, title, settings (with default and bounds) and examples, for --list."""
    params = []
    for p in lesson.params:
        bounds = ("/".join(p.choices) if p.choices else
                  f"{p.minimum:g}..{p.maximum:g}" if p.minimum is not None and p.maximum is not None else p.kind)
        params.append({"name": p.name, "kind": p.kind, "default": p.default, "range": bounds})
    return {"name": lesson.name, "title": lesson.title, "settings": params, "examples": list(lesson.presets)}


def _table_text(frame: pd.DataFrame) -> str:
    return frame.to_string(index=False, float_format=lambda v: f"{v:.4g}")


def print_view(lesson: Lesson, view: LessonView) -> None:
    """The view as text: title, tables, notes, then the numbers as JSON."""
    print(f"# {lesson.title}")
    for name, frame in view.tables.items():
        print(f"\n## {name}\n{_table_text(frame)}")
    if view.notes:
        print("\n## Notes")
        for note in view.notes:
            print(f"- {note}")
    print("\n## Numbers")
    print(json.dumps(view.numbers, indent=1, ensure_ascii=False))


def run(args: argparse.Namespace) -> int:
    if args.list:
        rows = [describe(lesson) for lesson in all_lessons().values()]
        if args.json:
            print(json.dumps(rows, indent=2, ensure_ascii=False))
            return 0
        for row in rows:
            settings = ", ".join(f"{p['name']}={p['default']}" for p in row["settings"])
            print(f"{row['name']:<16} {row['title']}\n{'':<16} settings: {settings}\n"
                  f"{'':<16} examples: {' | '.join(row['examples'])}")
        return 0
    if not args.name:
        print("error: name a lesson (python -m playground lesson --list shows them).", file=sys.stderr)
        return 2
    lesson = get_lesson(args.name)
    view = lesson.run(parse_sets(args.set), preset=args.example)
    if args.json:
        print(json.dumps({"lesson": lesson.name, "numbers": view.numbers, "notes": view.notes},
                         indent=1, ensure_ascii=False))
    else:
        print_view(lesson, view)
    return 0
