"""Named handler results: field order is the wiring order, nesting splices, streams close through."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from playground.ui.updates import Updates, plain, plain_stream


@dataclass(frozen=True)
class Inner(Updates):
    x: Any
    y: Any


@dataclass(frozen=True)
class Outer(Updates):
    a: Any
    inner: Inner
    b: Any


def test_values_and_wire_follow_field_order_with_nesting_spliced() -> None:
    assert Outer(1, Inner(2, 3), 4).values() == (1, 2, 3, 4)
    assert Outer.wire(b="B", a="A", inner=Inner.wire(y="Y", x="X")) == ["A", "X", "Y", "B"]
    assert plain(Outer(1, Inner(2, 3), 4)) == (1, 2, 3, 4) and plain((5, 6)) == (5, 6)


def test_wire_refuses_a_missing_or_unknown_component() -> None:
    with pytest.raises(TypeError, match=r"missing \['y'\], unexpected \['z'\]"):
        Inner.wire(x=1, z=2)


def test_closing_a_plain_stream_closes_the_handler_at_once() -> None:
    """A Stop (gradio closes the listener's generator) must reach the handler, e.g. so that a
    training saves the step it is at."""
    closed = []

    def handler():
        try:
            yield Inner(1, 2)
            yield Inner(3, 4)
        finally:
            closed.append(True)

    stream = plain_stream(handler())
    assert next(stream) == (1, 2)
    stream.close()
    assert closed == [True]
