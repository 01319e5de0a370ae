"""Named handler results: a dataclass whose fields are a listener's outputs, in order.

A handler that updates many components returns one of these instead of a long positional
tuple, so tests and readers say ``result.prompt`` rather than ``result[1]``:

    @dataclass(frozen=True)
    class ModelView(Updates):
        info: Any
        prompt: Any

    model.change(ctx.per_user(select_model), [...], ModelView.wire(info=info, prompt=prompt))

:meth:`Updates.wire` lists the components in field order (and fails at build time if one is
missing or extra); ``AppContext.per_user`` hands gradio :meth:`Updates.values`.
"""
from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from typing import Any


@dataclasses.dataclass(frozen=True)
class Updates:
    """Base of the named results; subclasses are frozen dataclasses with one field per output."""

    def values(self) -> tuple[Any, ...]:
        """The field values in declaration order (a nested Updates spliced in): what gradio
        expects for the wired outputs."""
        out: list[Any] = []
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            out.extend(value.values() if isinstance(value, Updates) else (value,))
        return tuple(out)

    @classmethod
    def wire(cls, **components: Any) -> list[Any]:
        """The listener's outputs in field order; every field needs exactly one component (a
        nested Updates field: the list its own ``wire`` gives, spliced in)."""
        names = [f.name for f in dataclasses.fields(cls)]
        if set(components) != set(names):
            missing, extra = sorted(set(names) - set(components)), sorted(set(components) - set(names))
            raise TypeError(f"{cls.__name__}.wire: missing {missing}, unexpected {extra}")
        out: list[Any] = []
        for n in names:
            c = components[n]
            out.extend(c if isinstance(c, list) else (c,))
        return out


def plain(value: Any) -> Any:
    """What gradio gets from a handler: an :class:`Updates` as its values, anything else as is."""
    return value.values() if isinstance(value, Updates) else value


def plain_stream(stream: Iterator[Any]) -> Iterator[Any]:
    """A streaming handler's results through :func:`plain`. Closing this closes ``stream`` at
    once (a Stop or a closed tab must reach the handler, e.g. so a training saves its step)."""
    with contextlib.closing(stream):  # type: ignore[type-var]
        for value in stream:
            yield plain(value)
