"""The server freezes its start-up heap: full collections no longer walk it, later garbage is
still collected, and launch.serve freezes once the app is launched, before it blocks."""
from __future__ import annotations

import gc
import weakref

import pytest

from playground.gc_pauses import freeze_startup_heap, frozen_heap


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


@pytest.fixture
def unfrozen():
    """Leave the process as it was: nothing frozen after the test."""
    gc.unfreeze()
    yield
    gc.unfreeze()


def _cycle() -> tuple[weakref.ref, weakref.ref]:
    a, b = _Node(), _Node()
    a.other, b.other = b, a  # only the cyclic collector can free these
    return weakref.ref(a), weakref.ref(b)


def test_frozen_objects_are_not_walked_and_later_cycles_are_still_freed(unfrozen):
    before = _Node()
    assert freeze_startup_heap() > 0
    assert not any(o is before for o in gc.get_objects())  # no generation (so no collection) holds it
    refs = _cycle()  # garbage made after the freeze
    gc.collect()
    assert all(r() is None for r in refs)


def test_serve_freezes_after_launching_and_before_blocking(unfrozen, monkeypatch):
    import launch

    calls: list[tuple[str, int]] = []

    class LaunchedApp:  # the two calls serve makes on a gradio app, recording the freeze count at each
        share_url = None
        local_url = "http://127.0.0.1:0/"

        def launch(self, **kwargs) -> None:
            calls.append(("launch", gc.get_freeze_count()))

        def block_thread(self) -> None:
            calls.append(("block", gc.get_freeze_count()))

    launch.serve(LaunchedApp(), "127.0.0.1", 0, False, None, None)
    assert [name for name, _ in calls] == ["launch", "block"]
    assert calls[0][1] == 0 and calls[1][1] > 0


def test_frozen_heap_unfreezes_after_the_block(unfrozen):
    with frozen_heap() as frozen:
        assert frozen > 0 and gc.get_freeze_count() > 0  # (a frozen object freed meanwhile lowers the count)
    assert gc.get_freeze_count() == 0
