"""Deep links: URL query parameters that reopen the app on a tab with a preset and settings filled.

    /?tab=train&preset=nanogpt-cpu-tiny&set=train.max_steps=300&set=model.n_layer=2

Pure (no gradio). `parse_query` turns the query into a `DeepLink` (tab id, preset name, raw
`section.key=value` settings); `apply_settings` checks each setting against the preset's family
(known key, right type, within the server's caps) and returns the changed preset. Anything
unknown or invalid is skipped with a notice rather than failing the page. Nothing from the URL
reaches the file system: presets are looked up by name among the shipped ones, and values that
look like paths are refused.
"""
from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from playground.config import apply_overrides
from playground.errors import PlaygroundError

TAB_IDS = ("tokenizer", "train", "generate", "analyze", "lessons", "space")
SECTIONS = ("model", "data", "train")
MAX_SETTINGS = 30  # `set=` parameters read from one link
MAX_VALUE_CHARS = 100
_PATH_KEYS = ("path", "file", "dir", "folder")

Query = Mapping[str, str | Sequence[str]] | Iterable[tuple[str, str]]


@dataclass(frozen=True)
class DeepLink:
    """What a link asks for; `notices` says what was skipped and why."""

    tab: str | None = None
    preset: str | None = None
    settings: tuple[tuple[str, str], ...] = ()  # ("train.max_steps", "300"), raw text, in link order
    notices: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        """True when the link asks for nothing (a plain visit)."""
        return self.tab is None and self.preset is None and not self.settings


def _pairs(query: Query) -> list[tuple[str, str]]:
    if isinstance(query, Mapping):
        out = []
        for key, value in query.items():
            values = [value] if isinstance(value, str) else list(value)
            out.extend((str(key), str(v)) for v in values)
        return out
    return [(str(k), str(v)) for k, v in query]


def _short(text: str, limit: int = 40) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "…")


def parse_query(query: Query, presets: Sequence[str], tabs: Sequence[str] = TAB_IDS) -> DeepLink:
    """Read `tab`, `preset` and repeated `set=section.key=value` from a query (mapping or pairs).

    A preset (or a setting) implies the Train tab unless `tab` names another one.
    """
    tab = preset = None
    settings: list[tuple[str, str]] = []
    notices: list[str] = []
    for key, value in _pairs(query):
        value = value.strip()
        if key == "tab":
            if value in tabs:
                tab = value
            else:
                notices.append(f"Link: no tab {_short(value)}; tabs are {', '.join(tabs)}.")
        elif key == "preset":
            if value in presets:
                preset = value
            else:
                notices.append(f"Link: no preset {_short(value)}; the preset shown was kept.")
        elif key == "set":
            dotted, sep, raw = value.partition("=")
            dotted = dotted.strip()
            section, dot, name = dotted.partition(".")
            if not sep or section not in SECTIONS or not dot or not name.isidentifier():
                notices.append(f"Link: skipped set={_short(value)} (expected section.key=value, section one of "
                               f"{', '.join(SECTIONS)}).")
            elif len(settings) >= MAX_SETTINGS:
                notices.append(f"Link: only the first {MAX_SETTINGS} settings were read.")
                break
            else:
                settings.append((dotted, raw.strip()))
        # other parameters (gradio's own, e.g. __theme or view=api) are not ours: ignored quietly
    if tab is None and (preset is not None or settings):
        tab = "train"
    return DeepLink(tab, preset, tuple(settings), tuple(dict.fromkeys(notices)))


def parse_value(raw: str) -> Any:
    """A link's value as TOML would read it: 300 -> int, 3e-4 -> float, true -> bool, else the text."""
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw
    return value if isinstance(value, (bool, int, float, str)) else raw


def _refusal(key: str, raw: str, value: Any) -> str | None:
    """Why a setting is refused before any checking (too long, a path, a path-like key), else None."""
    if len(raw) > MAX_VALUE_CHARS:
        return f"the value is longer than {MAX_VALUE_CHARS} characters"
    name = key.split(".", 1)[1]
    if any(part in name for part in _PATH_KEYS):
        return "files cannot be chosen by a link"
    if isinstance(value, str) and (any(c in value for c in "/\\\0") or value.startswith(("~", ".")) or ":" in value):
        return "paths cannot be given by a link"
    return None


def apply_settings(preset: Any, settings: Iterable[tuple[str, str]], caps: Any = None) -> tuple[Any, dict[str, Any], list[str]]:
    """`preset` with each valid setting applied: (new preset, {key: value applied}, notices).

    Each setting is checked on top of those before it with the training config checks
    (unknown key, wrong type or choice, over the server's caps); a failing one is skipped.
    """
    # function-level: the training modules pull in torch and the families (~1.5 s); parsing a link stays light
    from playground.training.config import build_model_config
    from playground.training.spec import get_family_config, resolve_run

    def model_checks(candidate: Any) -> None:  # whole-config checks (choices, d_model % n_head)
        build_model_config(get_family_config(candidate.family), candidate.model, {})

    try:  # the whole [model] is checked when the preset's own one passes without the data
        model_checks(preset)
        whole = True
    except PlaygroundError:
        whole = False
    applied: dict[str, Any] = {}
    notices: list[str] = []
    for key, raw in settings:
        value = parse_value(raw)
        why = _refusal(key, raw, value)
        if why is None:
            try:
                candidate = apply_overrides(preset, {key: value})
                resolve_run(candidate, None, caps)
                if whole and key.startswith("model."):
                    model_checks(candidate)
            except PlaygroundError as exc:
                why = str(exc)
            else:
                preset = candidate
                applied[key] = value
                continue
        notices.append(f"Link: skipped {key}={_short(raw)}: {why}")
    return preset, applied, notices


def exercise_query(preset_name: str | None, current: Any, original: Any, shown: Any = None) -> str:
    """The query string (`?tab=train&preset=...&set=...`) that reopens `current` from `original`.

    Only scalar settings that differ from the named preset are written (in section order). `shown`
    is the preset as its form first showed it: a setting the preset leaves out, at the default the
    form showed for it, is no change of the user's (the form writes every field it has).
    """
    params: list[tuple[str, str]] = [("tab", "train")]
    if preset_name:
        params.append(("preset", preset_name))
    for section in SECTIONS:
        now, before = current.section(section), (original.section(section) if original is not None else {})
        as_shown = shown.section(section) if shown is not None else {}
        for key, value in now.items():
            if not isinstance(value, (bool, int, float, str)):
                continue
            changed = before[key] != value if key in before else (key not in as_shown or as_shown[key] != value)
            if changed:
                params.append(("set", f"{section}.{key}={_literal(value)}"))
    return "?" + urlencode(params, safe=".=")


def _literal(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


__all__ = ["TAB_IDS", "DeepLink", "apply_settings", "exercise_query", "parse_query", "parse_value"]
