"""How long-running work (training, dataset experiments) is asked to stop."""
from __future__ import annotations

import threading
from collections.abc import Callable

StopFlag = threading.Event | Callable[[], bool] | None


def is_stopped(stop: StopFlag) -> bool:
    """True when the run was asked to stop (an Event that is set, or a callable returning True)."""
    if stop is None:
        return False
    if isinstance(stop, threading.Event):
        return stop.is_set()
    return bool(stop())
