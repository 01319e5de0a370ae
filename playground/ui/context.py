"""What every tab's `build(ctx)` receives: settings, workspace and the app-wide events."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import gradio as gr

from playground.errors import PlaygroundError
from playground.settings import Settings
from playground.workspace import Workspace

HEAVY = "heavy"  # concurrency id shared by training, generation and analysis listeners


@dataclass
class AppContext:
    """Shared handles for the tabs.

    - `workspace_version` (gr.State[int]): a handler that saves to the workspace returns
      `version + 1` into it; every function registered with `on_workspace_change` then runs
      (also on page load and whenever a tab is selected), so new tokenizers and checkpoints
      show up in other tabs' choices without a restart.
    - `selection` (gr.State[dict]): what one tab hands another (Generate -> Analyze target).
    - `tabs`: the gr.Tabs; a handler may return `gr.Tabs(selected="analyze")` into it.
    """

    settings: Settings
    workspace: Workspace
    workspace_version: gr.State
    selection: gr.State
    tabs: gr.Tabs
    refreshers: list[tuple[Callable[..., Any], list[Any], list[Any], str]] = field(default_factory=list)

    def on_workspace_change(
        self, fn: Callable[..., Any], inputs: Sequence[Any], outputs: Sequence[Any], api_name: str | None = None
    ) -> None:
        """Run `fn(*inputs)` into `outputs` whenever the workspace may have changed.

        The endpoint is exposed as `/refresh_<api_name>` (default: the function's name).
        """
        name = api_name or (fn.__name__ if fn.__name__.isidentifier() else f"{len(self.refreshers)}")
        self.refreshers.append((fn, list(inputs), list(outputs), f"refresh_{name}"))

    @property
    def heavy_limit(self) -> int:
        """How many heavy jobs (train, generate, analyze) the server runs at once."""
        return self.settings.caps.heavy_slots

    def heavy(self) -> dict[str, Any]:
        """Keyword arguments for a heavy listener: shared concurrency id and limit."""
        return {"concurrency_id": HEAVY, "concurrency_limit": self.heavy_limit}


def user_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn PlaygroundError into gr.Error at the UI boundary (message only, no trace or paths)."""
    import functools
    import inspect

    if inspect.isgeneratorfunction(fn):

        @functools.wraps(fn)
        def gen_wrapper(*args: Any, **kwargs: Any):
            try:
                yield from fn(*args, **kwargs)
            except PlaygroundError as exc:
                raise gr.Error(str(exc)) from None

        return gen_wrapper

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any):
        try:
            return fn(*args, **kwargs)
        except PlaygroundError as exc:
            raise gr.Error(str(exc)) from None

    return wrapper


def choices_update(names: list[str], current: str | None = None) -> dict[str, Any]:
    """A dropdown update that keeps the current value when it still exists."""
    value = current if current in names else (names[0] if names else None)
    return gr.update(choices=names, value=value)
