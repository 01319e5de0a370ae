"""The Lessons tab's topics, in the order they are shown (pure logic, no gradio)."""
from __future__ import annotations

import importlib

from playground.lessons.base import Lesson, LessonInputError, LessonView, Param

# Each module defines LESSON (a playground.lessons.base.Lesson).
LESSON_MODULES: tuple[str, ...] = ("attention_steps", "scaling", "positions", "block_parts", "bpe_by_hand", "sampling", "bottleneck")


def all_lessons() -> dict[str, Lesson]:
    """name -> Lesson, in display order."""
    lessons = [importlib.import_module(f"playground.lessons.{m}").LESSON for m in LESSON_MODULES]
    return {lesson.name: lesson for lesson in lessons}


def get_lesson(name: str) -> Lesson:
    """The lesson called `name`, or LessonInputError listing the names."""
    lessons = all_lessons()
    if name not in lessons:
        raise LessonInputError(f"No lesson {name!r}; choose one of {', '.join(lessons)}.")
    return lessons[name]


__all__ = ["Lesson", "LessonInputError", "LessonView", "Param", "all_lessons", "get_lesson"]
