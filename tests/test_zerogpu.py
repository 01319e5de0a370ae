"""playground.zerogpu: a no-op without `spaces`, `spaces.GPU(duration=...)` with it."""
from __future__ import annotations

import inspect
import sys
import types

import pytest

from playground import zerogpu


def test_without_spaces_the_decorator_returns_the_function(monkeypatch):
    monkeypatch.setitem(sys.modules, "spaces", None)  # `import spaces` raises ImportError
    assert zerogpu.spaces_module() is None

    def fn(x: int) -> int:
        return x + 1

    assert zerogpu.gpu(duration=30)(fn) is fn


def test_with_spaces_the_decorator_is_spaces_gpu_with_the_duration(monkeypatch):
    calls: list[int] = []

    def GPU(*, duration: int):  # the shape of spaces.GPU(duration=...)
        calls.append(duration)

        def wrap(fn):
            def wrapped(*args, **kwargs):
                return ("on gpu", fn(*args, **kwargs))
            wrapped.zerogpu = duration
            return wrapped
        return wrap

    fake = types.ModuleType("spaces")
    fake.GPU = GPU
    fake.__spec__ = types.SimpleNamespace(name="spaces", loader=None, submodule_search_locations=None,
                                          parent="", origin=None, has_location=False, cached=None)
    monkeypatch.setitem(sys.modules, "spaces", fake)
    assert zerogpu.spaces_module() is fake

    decorated = zerogpu.gpu(duration=45)(lambda x: x * 2)
    assert calls == [45] and decorated.zerogpu == 45 and decorated(3) == ("on gpu", 6)


def test_bad_duration_is_refused():
    with pytest.raises(ValueError, match="positive number of seconds"):
        zerogpu.gpu(duration=0)


def test_heavy_entry_points_are_decorated_and_unchanged_without_spaces():
    """Off ZeroGPU the decorated entry points are the plain functions (generators stay generators)."""
    from playground.analysis.explain.per_input import analyze_checkpoint
    from playground.training.engine import train
    from playground.ui.experiments_view import run_experiment

    assert inspect.isgeneratorfunction(train) and inspect.isgeneratorfunction(run_experiment)
    assert not inspect.isgeneratorfunction(analyze_checkpoint)
    for fn, name in ((train, "train"), (run_experiment, "run_experiment"), (analyze_checkpoint, "analyze_checkpoint")):
        assert fn.__name__ == name
        src = inspect.getsource(inspect.getmodule(fn))
        assert f"\ndef {name}(" in src and "@gpu(duration=" in src.split(f"\ndef {name}(")[0].rsplit("\n\n\n", 1)[-1]
