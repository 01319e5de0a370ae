"""Train tab: pick a preset, edit it (form or TOML), train with live curves, compare runs.

Layout and wiring only: training is playground.training.engine.train (a generator of events),
run tables are playground.training.runs, charts playground.charts.training. Per-session state is
a gr.State holding the run name; the engine's generator lives only inside the start handler,
so the Stop button (cancels=[...]) closes this session's run and nobody else's. Closing the
engine's generator writes a "stopped" checkpoint; Resume continues it.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import html
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import gradio as gr
import pandas as pd

from playground.charts.training import (
    bottleneck_chart,
    confusion_chart,
    loss_chart,
    lr_chart,
    metric_chart,
    throughput_chart,
)
from playground.child import iter_in_child
from playground.config import Preset, list_presets, load_preset, parse_preset
from playground.data.policy import data_policy
from playground.errors import ConfigError, PlaygroundError
from playground.families import FAMILIES, Family, get_family
from playground.limits import cap_hint
from playground.scratch import download_dir
from playground.screen_memory import recall, remember, text_field
from playground.settings import Settings
from playground.spaces import LiveJobs
from playground.training.config import TrainConfig, preset_from_sections, preset_to_toml
from playground.training.runs import run_history
from playground.training.spec import resolve_run
from playground.ui import gpu_calls
from playground.ui.components import Chart
from playground.ui.context import AppContext, user_errors
from playground.ui.job_checks import checked_start, start_validator
from playground.ui.tables import Table
from playground.ui.updates import Updates
from playground.workspace import Workspace, validate_name

INTRO = (
    "Train a small model from a **preset**: pick one, change its key settings in the form (or edit the full "
    "TOML below it), choose the tokenizer and data, and press **Start**. Curves update live; at each evaluation "
    "the run is saved to the workspace (so **Generate** and **Analyze** can use it) and a preview shows what the "
    "model does now. **Stop** saves where it is; **Resume** continues a saved run (raise `max_steps` to train longer)."
)
CORPUS_CHOICES = ["tinyshakespeare", "python-docs", "python-code"]
TOKENIZER_INFO = "char/auto: built from the data; or one saved in the Tokenizer tab"
UI_INTERVAL_S = 1.0  # at most one live update per second between evaluations
SIDE_INTERVAL_S = 5.0  # learning-rate and throughput charts: at most one redraw per 5 s between evaluations


@dataclass(frozen=True)
class FormField:
    """A preset key shown as a widget for the families that have it (see :func:`applies`)."""

    key: str  # "section.name"
    label: str
    kind: str  # "int" | "float" | "choice" | "bool" | "text"
    choices: tuple[str, ...] = ()
    info: str | None = None


def _form_fields() -> list[FormField]:
    from playground.data.images import IMAGE_SETS
    from playground.data.pairs import PAIR_SETS
    from playground.families.imagegpt.pixels import MAX_LEVELS, MIN_LEVELS
    from playground.families.text_classifier.training import TEXT_SETS
    from playground.models.layers import FFNS, NORM_PLACEMENTS, NORMS
    from playground.models.local_attention import LOCAL_KINDS
    from playground.models.positional import POS_ENCODINGS
    from playground.models.rnn_seq2seq import CELLS, RNN_ATTENTIONS
    from playground.models.text_classifier import ENCODERS
    from playground.training.config import SCHEDULES

    return [
        FormField("train.max_steps", "Steps", "int"),
        FormField("train.batch_size", "Batch size", "int"),
        FormField("train.lr", "Learning rate", "float", info="inverse_sqrt: the scale factor"),
        FormField("train.schedule", "LR schedule", "choice", SCHEDULES),
        FormField("train.warmup_steps", "Warmup steps", "int"),
        FormField("train.eval_interval", "Evaluate every", "int"),
        FormField("train.seed", "Seed", "int"),
        FormField("model.block_size", "Context (block size)", "int"),
        FormField("model.n_layer", "Layers", "int"),
        FormField("model.n_encoder_layers", "Encoder layers", "int"),
        FormField("model.n_decoder_layers", "Decoder layers", "int"),
        FormField("model.n_head", "Heads", "int"),
        FormField("model.d_model", "Width (d_model)", "int"),
        FormField("model.patch_size", "Patch size", "int"),
        FormField("model.encoder", "Encoder", "choice", ENCODERS,
                  info="J&W: bilstm / cnn / avg + one attention layer; transformer: [CLS] or mean pooling"),
        FormField("model.cell", "RNN cell", "choice", CELLS),
        FormField("model.attention", "Attention", "choice", RNN_ATTENTIONS,
                  info="none = the fixed-vector bottleneck; additive = Bahdanau; dot / general = Luong"),
        FormField("model.local", "Local attention", "choice", LOCAL_KINDS,
                  info="Luong: monotonic (local-m) looks around source position t, predictive (local-p) around "
                       "a position it learns to guess; none = every source token"),
        FormField("model.local_d", "Window half-width D", "int",
                  info="local attention sees 2D+1 source tokens; 0 when Local attention is none"),
        FormField("model.coverage", "Coverage", "bool",
                  info="See et al.: the attention each source token already got feeds the score, and a loss "
                       "penalises attending to it again"),
        FormField("model.coverage_weight", "Coverage loss weight", "float"),
        FormField("model.hidden", "Hidden size", "int"),
        FormField("model.dropout", "Dropout", "float"),
        FormField("model.pos_encoding", "Positions", "choice", POS_ENCODINGS),
        FormField("model.norm_placement", "Norm placement", "choice", NORM_PLACEMENTS),
        FormField("model.norm", "Norm", "choice", NORMS),
        FormField("model.ffn", "FFN", "choice", FFNS),
        FormField("model.attn_scale", "Scale scores by 1/sqrt(d_k)", "bool"),
        FormField("model.n_kv_heads", "Key/value heads", "int",
                  info="0 = one per head; 1 = all heads share one; fewer = a smaller KV cache (must divide Heads)"),
        FormField("model.attn_window", "Attention window", "int",
                  info="0 = the whole context; W = each token sees itself and the W - 1 tokens before it"),
        FormField("model.ffn_experts", "FFN experts", "int",
                  info="0 or 1 = one FFN; more = a router sends each token to a few of these expert FFNs"),
        FormField("model.ffn_top_k", "Experts per token", "int",
                  info="how many experts each token goes to (when FFN experts is more than 1)"),
        FormField("data.corpus", "Corpus", "text", tuple(CORPUS_CHOICES),
                  info="a built-in corpus, or upload a .txt below"),
        FormField("data.pairs", "Pair set", "choice", tuple(PAIR_SETS)),
        FormField("data.dataset", "Image set", "choice", tuple(IMAGE_SETS)),
        FormField("data.texts", "Text set", "choice", TEXT_SETS,
                  info="reviews: generated, with rationales; csv: upload text,label rows below; sst2: download"),
        FormField("data.n", "Examples", "int", info="0 = all / default"),
        FormField("data.levels", "Grey levels", "int",
                  info=f"{MIN_LEVELS} to {MAX_LEVELS}: each pixel becomes one of these levels, one token each "
                       "(more = finer pictures, more to predict)"),
    ]


FORM_FIELDS = _form_fields()


# -- preset text <-> form ----------------------------------------------------------------------

def _family(name: str | None) -> Family | None:
    """The registered family a preset names (None when it names none we know)."""
    return FAMILIES.get(name or "")


def _sections(family: Family | None) -> dict[str, type]:
    """The dataclass behind each preset section of `family`: [train], [model], [data]."""
    if family is None:
        return {}
    return {"train": TrainConfig, "model": family.config_cls, "data": family.adapter.data_config_cls}


def applies(field: FormField, family: Family | None) -> bool:
    """Whether the form shows `field` for `family`: when its section's dataclass has the key."""
    section, name = field.key.split(".", 1)
    cls = _sections(family).get(section)
    return cls is not None and any(f.name == name for f in dataclasses.fields(cls))


def _defaults(family: str) -> dict[str, Any]:
    """Default values of every `section.key` of a family (from the dataclasses)."""
    out: dict[str, Any] = {}
    for section, cls in _sections(_family(family)).items():
        for f in dataclasses.fields(cls):
            if f.default is not dataclasses.MISSING:
                out[f"{section}.{f.name}"] = f.default
            elif f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
                out[f"{section}.{f.name}"] = f.default_factory()  # type: ignore[misc]
    return out


def _parse(toml_text: str, name: str = "custom") -> Preset:
    if not toml_text or not toml_text.strip():
        raise ConfigError("The preset is empty: choose a preset first.")
    return parse_preset(toml_text, name=name or "custom")


def form_updates(toml_text: str) -> list[dict[str, Any]]:
    """One gr.update per FORM_FIELDS entry: the TOML's value (or the default), visible for its family."""
    try:
        preset = _parse(toml_text)
    except PlaygroundError:
        return [gr.update() for _ in FORM_FIELDS]
    defaults = _defaults(preset.family)
    family = _family(preset.family)
    out = []
    for f in FORM_FIELDS:
        section, key = f.key.split(".", 1)
        value = preset.section(section).get(key, defaults.get(f.key))
        if f.kind == "float" and value is not None:
            value = float(value)
        out.append(gr.update(value=value, visible=applies(f, family)))
    return out


def _empty(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _assign(preset: Preset, field: FormField, value: Any) -> None:
    """Set one form field's value in the preset (an empty value removes the key: its default)."""
    section, name = field.key.split(".", 1)
    table = preset.section(section)
    if _empty(value):
        table.pop(name, None)
    elif field.kind == "int":
        table[name] = int(value)
    elif field.kind == "float":
        table[name] = float(value)
    elif field.kind == "bool":
        table[name] = bool(value)
    else:
        table[name] = str(value)


def set_field(key: str, toml_text: str, value: Any) -> str:
    """The TOML text with `key` set to a form widget's value (None removes the key)."""
    preset = _parse(toml_text)
    _assign(preset, next(f for f in FORM_FIELDS if f.key == key), value)
    return preset_to_toml(preset)


def apply_form(toml_text: str, values: Sequence[Any], tokenizer: str | None = None, strict: bool = True) -> str:
    """The TOML text with every form field of its family set to the value the form shows.

    What a person sees in the form is what runs: Start and Resume read the fields themselves
    instead of trusting that every keystroke reached the TOML (on a busy server some do not).
    `values` follow FORM_FIELDS. A field the user emptied is refused when `strict` (Start), and
    left alone otherwise (the on-blur sync of the TOML panel)."""
    preset = _parse(toml_text)
    family = _family(preset.family)
    for field, value in zip(FORM_FIELDS, values):
        if not applies(field, family):
            continue
        section, name = field.key.split(".", 1)
        if _empty(value):
            if strict and name in preset.section(section):
                raise ConfigError(f"{field.label} is empty: type a value, or pick the preset again to restore "
                                  "its settings.")
            continue
        try:
            _assign(preset, field, value)
        except (TypeError, ValueError):
            raise ConfigError(f"{field.label} must be a number, not {str(value)[:20]!r}.") from None
    if tokenizer and _uses_tokenizer(family):
        preset.data["tokenizer"] = str(tokenizer)
    return preset_to_toml(preset)


def form_to_run(toml_text: str, tokenizer: str | None, *values: Any) -> tuple[str, dict[str, Any]]:
    """Start / Resume, first step: the TOML the run will use, written from the form as the user
    sees it (a client-side value at the click, never a keystroke still in flight), and a clean
    run state. The next step (the `train_start` API: the TOML is the whole spec) reads it."""
    if not toml_text or not toml_text.strip():
        return toml_text, {}  # Resume of a run with no preset shown: its own settings
    return apply_form(toml_text, values, tokenizer), {}


def sync_form(toml_text: str, tokenizer: str | None, *values: Any) -> Any:
    """The TOML panel after a field lost focus: every field's value written in (one round trip
    per edit, not per keystroke); unparsable TOML is left as it is for the user to fix."""
    try:
        return apply_form(toml_text, values, tokenizer, strict=False)
    except PlaygroundError:
        return gr.update()


def preset_selected(name: str | None) -> tuple[Any, ...]:
    """Preset chosen: its TOML, description, a default run name and the form values."""
    if not name:
        return ("", "", gr.update(), *[gr.update() for _ in FORM_FIELDS])
    preset = load_preset(name, allow_paths=False)  # a listed preset only, never a path
    text = preset_to_toml(preset)
    return (text, _describe(preset), gr.update(value=name), *form_updates(text))


def _describe(preset: Preset) -> str:
    return f"**{html.escape(preset.name)}** · family `{preset.family}` — {html.escape(preset.description)}"


def _uses_tokenizer(family: Family | None) -> bool:
    """Whether the Tokenizer dropdown applies (shown, and written to data.tokenizer); unknown: yes."""
    return family is None or family.train_ui.uses_tokenizer


def tokenizer_choices(workspace: Workspace, toml_text: str | None, current: str | None) -> dict[str, Any]:
    """Tokenizer dropdown: the family's built-in choice plus the workspace's tokenizers."""
    family = None
    try:
        family = _family(_parse(toml_text or "").family)
    except PlaygroundError:
        pass
    builtin = list(family.train_ui.tokenizers) if family is not None else []
    names = builtin + workspace.names("tokenizers")
    info = TOKENIZER_INFO
    if current and current not in names:  # named in the preset but not (yet) in the space: say so now
        names.append(current)
        info = (f"⚠ no tokenizer named {current!r} yet: build it in the Tokenizer tab (and Save under that name), "
                "or pick another here")
    value = current if current in names else (names[0] if names else None)
    return gr.update(choices=names, value=value, visible=_uses_tokenizer(family), info=info)


def tokenizer_refresh(workspace: Workspace, current: str | None, toml_text: str | None) -> dict[str, Any]:
    """on_workspace_change: new tokenizers show up without a restart."""
    return tokenizer_choices(workspace, toml_text, current)


def toml_tokenizer(workspace: Workspace, toml_text: str) -> dict[str, Any]:
    """After the TOML changes: the dropdown shows its data.tokenizer (and the family's choices)."""
    try:
        preset = _parse(toml_text)
    except PlaygroundError:
        return gr.update()
    family = _family(preset.family)
    default = family.train_ui.default_tokenizer if family is not None else "auto"
    return tokenizer_choices(workspace, toml_text, str(preset.data.get("tokenizer", default)))


def use_upload(workspace: Workspace, settings: Settings, toml_text: str, upload: Any) -> str:
    """Point the preset's data at an uploaded file, as its family reads one (a .txt corpus, a .tsv
    pair file, a .zip of class folders: ``Family.train_ui.upload``). In the app the file is copied into the user's upload folder
    and named `upload:<name>` (playground.data.policy); the CLI's settings keep the plain path."""
    if not upload:
        return toml_text
    path = str(getattr(upload, "name", upload))
    preset = _parse(toml_text)
    policy = data_policy(settings, workspace)
    if not policy.allow_paths:
        path = policy.store_upload(path)
    preset.data.update(get_family(preset.family).train_ui.upload(path))
    return preset_to_toml(preset)


# -- training ----------------------------------------------------------------------------------

IDLE_TEXT = "ready: pick a preset, check the form and press Start"


def progress_html(step: int, max_steps: int, text: str, eta_s: float | None = None, state: str = "running") -> str:
    """A progress bar with the step count and ETA, and a status line (states "idle": no run yet,
    and "starting": the run's process is starting; the line alone)."""
    pct = 100.0 * step / max(1, max_steps)
    colour = {"running": "#3b82f6", "done": "#16a34a", "stopped": "#f59e0b", "error": "#dc2626"}.get(state, "#3b82f6")
    eta = f" · ETA {_fmt_time(eta_s)}" if eta_s is not None and state == "running" else ""
    return (
        f'<div id="train-progress" data-step="{step}" data-state="{state}">'
        f'<div style="background:#e5e7eb;border-radius:6px;height:14px;overflow:hidden">'
        f'<div style="width:{pct:.1f}%;background:{colour};height:100%"></div></div>'
        + (f"<div style='margin-top:4px'>{html.escape(text)}</div></div>" if state in ("idle", "starting") else
           f"<div style='margin-top:4px'>step {step}/{max_steps} ({pct:.0f}%){eta} — {html.escape(text)}</div></div>")
    )


def _fmt_time(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    s = round(seconds)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else (f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s")


@dataclass
class LiveRun:
    """What one start handler accumulates to draw (local to that handler call)."""

    unit: str = "tokens"
    steps: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    evals: list[dict[str, Any]] = dataclasses.field(default_factory=list)

    def add(self, ev: Any) -> None:
        self.unit = ev.unit
        if ev.kind == "step":
            self.steps.append({"step": ev.step, "loss": ev.train_loss, "lr": ev.lr, "throughput": ev.throughput,
                               "grad_norm": ev.grad_norm})
        elif ev.kind == "eval":
            self.evals.append({"step": ev.step, "train_loss": ev.train_loss, "val_loss": ev.val_loss, **ev.metrics})

    def seed(self, log: Sequence[dict[str, Any]], evals: Sequence[dict[str, Any]]) -> None:
        """Start from a saved run (Resume): its step events as drawn live (train_log.csv) and its
        evaluations (metrics.csv), so the curves continue from the first step."""
        for row in log:
            self.steps.append({"step": row.get("step"), "loss": row.get("train_loss"), "lr": row.get("lr"),
                               "throughput": row.get("throughput"), "grad_norm": row.get("grad_norm")})
        self.evals.extend(dict(row) for row in evals)

    def curves(self) -> pd.DataFrame:
        train = [{"step": s["step"], "split": "train", "loss": s["loss"]} for s in self.steps if s["loss"] is not None]
        val = [{"step": e["step"], "split": "val", "loss": e["val_loss"]} for e in self.evals]
        return pd.DataFrame(train + val, columns=["step", "split", "loss"])

    def step_frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.steps, columns=["step", "loss", "lr", "throughput", "grad_norm"])

    def charts(self) -> tuple[Any, Any, Any]:
        steps = self.step_frame()
        return loss_chart(self.curves()), lr_chart(steps), throughput_chart(steps.dropna(subset=["throughput"]), self.unit)


@dataclass(frozen=True)
class Preview(Updates):
    """The three preview widgets; the family's evaluations fill one of them."""

    sample: Any = dataclasses.field(default_factory=gr.skip)  # a generated text (GPT)
    confusion: Any = dataclasses.field(default_factory=gr.skip)  # a confusion matrix (ViT)
    translations: Any = dataclasses.field(default_factory=gr.skip)  # a few translations (seq2seq)


@dataclass(frozen=True)
class RunView(Updates):
    """What a run shows as it goes (a field left at gr.skip() keeps what is on screen)."""

    status: Any
    loss_plot: Any = dataclasses.field(default_factory=gr.skip)
    lr_plot: Any = dataclasses.field(default_factory=gr.skip)
    tput_plot: Any = dataclasses.field(default_factory=gr.skip)
    preview: Preview = dataclasses.field(default_factory=Preview)
    metrics_csv: Any = dataclasses.field(default_factory=gr.skip)
    run_state: Any = dataclasses.field(default_factory=gr.skip)
    version: Any = dataclasses.field(default_factory=gr.skip)  # the workspace version: other tabs refresh their lists


def _preview_outputs(preview: Any) -> Preview:
    """The preview widget an evaluation's preview fills."""
    if preview is None:
        return Preview()
    if preview.kind == "text":
        return Preview(sample=preview.text)
    if preview.kind == "confusion":
        return Preview(confusion=confusion_chart(preview.matrix, preview.labels))
    return Preview(translations=pd.DataFrame(preview.rows or [], columns=["source", "reference", "prediction", "correct"]))


def _preview_visibility(family: str) -> Preview:
    """Show the one preview widget the family's evaluations fill, empty."""
    kind = get_family(family).train_ui.preview
    return Preview(gr.update(visible=kind == "text", value=""), gr.update(visible=kind == "confusion", value=None),
                   gr.update(visible=kind == "translations", value=None))


def _csv(frame: pd.DataFrame, stem: str) -> str:
    folder = download_dir("playground-train-")
    path = folder / f"{stem}.csv"
    frame.to_csv(path, index=False)
    return str(path)


TRAIN_TARGET = "playground.training.engine:train"
STARTING_TEXT = "starting: the training process is loading the data and building the model…"


def _saved_family(workspace: Workspace, name: str) -> str | None:
    """The family of the saved run `name` (None when there is none: Resume then says so)."""
    return workspace.get("models", name).meta.get("family") if workspace.exists("models", name) else None


def stopped_text(name: str, step: int, saved: bool) -> str:
    """What a stopped run's status says, from its stream and from Stop alike."""
    if not saved:
        return f"stopped {name} before its first step: nothing was saved"
    return f"stopped · saved as {name} at step {step}; Resume continues it"


def _run_events(workspace: Workspace, settings: Settings, preset: Preset | None, name: str, resume: bool,
                overrides: dict[str, Any] | None, version: int, stop: threading.Event | None = None
                ) -> Iterator[RunView]:
    """Drive the engine and turn its events into this tab's outputs (throttled); a set `stop`
    (the user's Stop, `stop_status`) makes the run save and end, as closing this generator does."""
    from playground.training.engine import train

    live = LiveRun()
    if resume:  # Resume shows the whole curve, not only what follows
        live.seed(*run_history(workspace, name))
    started = time.time()
    family = preset.family if preset is not None else _saved_family(workspace, name)
    # At once: the run has its slot and its process is starting (seconds); the last run's curves go.
    yield RunView(progress_html(0, 1, STARTING_TEXT, None, "starting"), *live.charts(),
                  preview=_preview_visibility(family) if family else Preview(),
                  run_state={"name": name, "started": started}, version=version)
    caps = settings.caps
    job = {"preset": preset, "workspace": workspace, "name": name, "overrides": overrides, "device": settings.device,
           "resume": resume, "max_steps_cap": caps.max_train_steps, "limits": caps,
           "policy": data_policy(settings, workspace)}
    # The served app trains in a child process (its own GIL and heap); tests and a laptop may not.
    # On ZeroGPU the GPU exists only inside a decorated call from this (the request's) thread.
    if settings.zerogpu:
        events = gpu_calls.train_events(job)
    elif settings.isolate_jobs:
        events = iter_in_child(TRAIN_TARGET, job, stop_kw="stop", stop_requested=stop.is_set if stop else None,
                               max_s=caps.max_job_s)  # a demo server's time cap: the run saves and ends
    else:
        events = train(**job, stop=stop)
    last_yield = last_side = 0.0
    try:
        for ev in events:
            if settings.zerogpu and stop is not None and stop.is_set():
                break  # closing the call's generator stops the GPU worker's run, which saves
            live.add(ev)
            if ev.kind == "start":
                if family is None:  # Resume: the run's checkpoint (already loaded by the engine) says
                    family = workspace.get("models", name).meta["family"]
                yield RunView(progress_html(ev.step, ev.max_steps, ev.message), *live.charts(),
                              preview=_preview_visibility(family))
                continue
            if ev.kind == "step" and time.monotonic() - last_yield < UI_INTERVAL_S:
                continue
            last_yield = time.monotonic()
            if ev.kind == "step":
                text = f"loss {ev.train_loss:.4f} · lr {ev.lr:.2e} · {ev.throughput or 0:,.0f} {ev.unit}/s"
                loss, lr, tput = live.charts()
                if last_yield - last_side < SIDE_INTERVAL_S:  # the slow-moving side charts redraw less often
                    lr, tput = gr.skip(), gr.skip()
                else:
                    last_side = last_yield
                yield RunView(progress_html(ev.step, ev.max_steps, text, ev.eta_s), loss, lr, tput)
            elif ev.kind == "eval":
                version += 1  # a checkpoint was written: Generate / Analyze refresh their lists
                extra = " · ".join(f"{k} {v:.3f}" for k, v in ev.metrics.items() if k in ("accuracy", "exact_match"))
                text = f"val loss {ev.val_loss:.4f}" + (f" · {extra}" if extra else "") + f" · saved as {name}"
                yield RunView(progress_html(ev.step, ev.max_steps, text, ev.eta_s), *live.charts(),
                              preview=_preview_outputs(ev.preview),
                              metrics_csv=_csv(pd.DataFrame(live.evals), f"{name}-metrics"), version=version)
            elif ev.kind in ("done", "stopped"):
                state = "done" if ev.kind == "done" else "stopped"
                text = (f"finished · val loss {ev.val_loss:.4f} · saved as {name}" if ev.kind == "done"
                        else stopped_text(name, ev.step, ev.checkpoint is not None)
                             + time_cap_note(caps.max_job_s, time.time() - started))
                yield RunView(progress_html(ev.step, ev.max_steps, text, None, state), *live.charts(),
                              version=version + (ev.kind == "stopped"))
    finally:
        events.close()  # a Stop (gradio closes this generator) closes the engine, which saves a checkpoint


def gpu_time_note(workspace: Workspace, settings: Settings, toml_text: str) -> str:
    """On ZeroGPU: the GPU seconds a Start of this TOML asks for, against the visitor's quota."""
    try:
        preset = _parse(toml_text)
        return gpu_calls.planned_training(preset, settings.caps.max_train_steps, getattr(workspace, "key", None)).note()
    except PlaygroundError:
        return ""


def time_cap_note(max_s: float | None, elapsed_s: float) -> str:
    """Why a run stopped by itself: this server's time limit per run (empty when under it)."""
    if max_s is None or elapsed_s < max_s:
        return ""
    return f" (this server stops a run after {max_s / 60:g} minutes; Resume continues it)"


@user_errors
def start_training(workspace: Workspace, settings: Settings, preset_name: str | None, toml_text: str,
                   name: str | None, overwrite: bool, version: int, *, jobs: LiveJobs | None = None
                   ) -> Iterator[tuple[Any, ...]]:
    """Start a new run from the TOML shown; yields progress, charts, previews, CSV, run state, version."""
    preset = _parse(toml_text, preset_name or "custom")
    name = validate_name(name or preset.name)
    check_before_start(settings, preset)
    with _live_run(workspace, settings, jobs, name) as stop:
        if workspace.exists("models", name) and not overwrite:
            raise PlaygroundError(f"A model named {name!r} exists; choose another run name, tick Overwrite, "
                                  "or press Resume to continue it.")
        workspace.check_writable("models", name)
        remember(workspace.root, "train", {"run": name, "preset": preset_name, "toml": toml_text})
        yield from _run_events(workspace, settings, preset, name, False, None, version, stop)


@user_errors
def resume_training(workspace: Workspace, settings: Settings, toml_text: str, name: str | None,
                    version: int, *, jobs: LiveJobs | None = None) -> Iterator[tuple[Any, ...]]:
    """Resume the run `name` with the [train] settings shown (e.g. more steps)."""
    name = validate_name(name or "")
    overrides = None
    try:
        preset = _parse(toml_text)
        overrides = {f"train.{k}": v for k, v in preset.train.items()}
    except PlaygroundError:
        pass
    if workspace.exists("models", name) and (saved := workspace.get("models", name).meta.get("sections")):
        check_before_start(settings, preset_from_sections(saved, name), overrides)
    with _live_run(workspace, settings, jobs, name) as stop:
        workspace.check_writable("models", name)
        last = recall(workspace.root, "train")
        remember(workspace.root, "train", {"run": name, "toml": toml_text,
                                           "preset": last.get("preset") if last.get("run") == name else None})
        yield from _run_events(workspace, settings, None, name, True, overrides, version, stop)


def saved_run_status(workspace: Workspace, name: str) -> str:
    """The status bar of the saved run `name` as its own stream last drew it: finished with its
    validation loss, or stopped at the step its checkpoint holds (Resume continues it)."""
    meta = workspace.get("models", name).meta
    step = int(meta.get("step") or 0)
    max_steps = int((meta.get("train") or {}).get("max_steps") or step or 1)
    metrics, run = meta.get("metrics") or {}, meta.get("run") or {}
    status = metrics.get("status") or run.get("status")
    val_loss = metrics.get("val_loss")
    if status == "finished" and isinstance(val_loss, (int, float)):
        return progress_html(step, max_steps, f"finished · val loss {val_loss:.4f} · saved as {name}", None, "done")
    return progress_html(step, max_steps, stopped_text(name, step, True), None, "stopped")


def restore_last_run(workspace: Workspace) -> tuple[Any, ...]:
    """What the Train tab showed for the user's last run, for a page that opens again (a reload):
    the preset, its TOML, form and run name, the status bar and the curves from the saved run
    (train_log.csv and metrics.csv, as Resume draws them) and its metrics CSV. Everything stays as
    the page built it (gr.skip) when there is no last run or its checkpoint is gone.

    Outputs: preset, toml, description, name, *form widgets, then RunView's fields."""
    keep = (gr.skip(),) * (4 + len(FORM_FIELDS) + len(RunView(gr.skip()).values()))
    last = recall(workspace.root, "train")
    name = text_field(last, "run")
    if not name or not workspace.exists("models", name):
        return keep
    meta = workspace.get("models", name).meta
    toml_text = text_field(last, "toml")
    try:
        form = form_updates(toml_text) if toml_text else [gr.skip() for _ in FORM_FIELDS]
    except PlaygroundError:  # a TOML this version no longer reads: keep the page's own form
        toml_text, form = "", [gr.skip() for _ in FORM_FIELDS]
    preset_name = text_field(last, "preset")
    listed = preset_name in list_presets()
    description = _describe(load_preset(preset_name, allow_paths=False)) if listed else gr.skip()
    live = LiveRun(unit=str((meta.get("run") or {}).get("unit") or "tokens"))
    live.seed(*run_history(workspace, name))
    view = RunView(saved_run_status(workspace, name), *live.charts(),
                   metrics_csv=_csv(pd.DataFrame(live.evals), f"{name}-metrics") if live.evals else gr.skip())
    return (gr.update(value=preset_name) if listed else gr.skip(), toml_text or gr.skip(), description,
            gr.update(value=name), *form, *view.values())


def check_before_start(settings: Settings, preset: Preset, overrides: dict[str, Any] | None = None) -> None:
    """What the run would refuse without loading any data (types, ranges, this server's caps),
    refused here, before a heavy slot or a process is taken, with the limit in force."""
    spec = resolve_run(preset, overrides, settings.caps, check_steps=False)
    if spec.train.compile and settings.isolate_jobs and settings.resolved_device == "cpu":
        raise ConfigError("train.compile = true compiles the model for minutes on this server's CPU before the first "
                          "step, and a compiled model is not faster on a CPU; set train.compile = false (it pays off "
                          "on a CUDA GPU).")


def _live_run(workspace: Workspace, settings: Settings, jobs: LiveJobs | None,
              name: str) -> contextlib.AbstractContextManager[threading.Event | None]:
    """Reserve run `name` in the user's space while it trains (and count it against their
    limit); the context gives the run's stop request (None without a register)."""
    key = getattr(workspace, "key", None)
    if jobs is None or key is None:
        return contextlib.nullcontext()
    return jobs.claim(key, "train", name, settings.caps.max_trainings_per_user, "training",
                      session=getattr(workspace, "session", None))


STOP_WAIT_S = 40.0  # a stopping run saves within a step or two; a busy server may take longer


def stop_status(workspace: Workspace, run: dict | None, version: int = 0,
                wait_s: float = STOP_WAIT_S, *, jobs: LiveJobs | None = None) -> tuple[str, int]:
    """After Stop: the step the run was saved at, once that checkpoint is the one on disk.

    First asks the user's live run of that name to stop (`jobs`): the Stop button also cancels
    the request that streams the run, but the run must not depend on that cancel arriving in
    time. Waits for a checkpoint of this run written after it started (status "stopped" or
    "finished"); an older one on disk (the run being resumed) is never reported as this run's.
    Returns the status line and the next workspace version (the runs table refreshes)."""
    name = (run or {}).get("name")
    if not name:
        return progress_html(0, 1, "stopped: nothing was training in this tab", None, "stopped"), version
    key = getattr(workspace, "key", None)
    registered = jobs is not None and key is not None
    asked = registered and jobs.request_stop(key, "train", name)  # type: ignore[union-attr]
    started = float((run or {}).get("started") or 0.0)
    deadline = time.monotonic() + wait_s
    meta: dict[str, Any] = {}
    while True:
        meta = workspace.get("models", name).meta if workspace.exists("models", name) else {}
        info = meta.get("run") or {}
        fresh = float(info.get("saved_at") or 0.0) >= started  # written by this run, not the one resumed
        if fresh and info.get("status") in ("stopped", "finished"):
            break
        if asked and not jobs.request_stop(key, "train", name):  # type: ignore[union-attr]
            # The run has ended (its claim is released): what it saved last is where it stopped.
            if fresh:
                break
            return progress_html(0, 1, stopped_text(name, 0, False), None, "stopped"), version
        if time.monotonic() > deadline:
            return (progress_html(0, 1, f"stopping {name}: it saves at the step it reached (a run stopped before "
                                        "its first step keeps nothing); the runs table shows it once saved",
                                  None, "stopped"), version + 1)
        time.sleep(0.2)
    step = int(meta.get("step", 0))
    total = int((meta.get("train") or {}).get("max_steps", step or 1))
    if meta["run"]["status"] == "finished":
        return progress_html(step, total, f"finished before the stop · saved as {name}", None, "done"), version + 1
    return progress_html(step, total, stopped_text(name, step, True), None, "stopped"), version + 1


def stop_answer(workspace: Workspace, run: dict | None, version: int, not_running: int, *,
                jobs: LiveJobs | None = None) -> tuple[str, int, int]:
    """Stop's listener: :func:`stop_status`, and `not_running` + 1 when this tab had no run
    yet (a Start still waiting for a slot), which cancels it."""
    status, version = stop_status(workspace, run, version, jobs=jobs)
    return status, version, not_running + (0 if (run or {}).get("name") else 1)


# -- runs ----------------------------------------------------------------------------------------

def runs_refresh(workspace: Workspace, selected: list[str] | None) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The runs table and the compare picker's choices."""
    from playground.training.runs import runs_table

    table = runs_table(workspace)
    names = table["run"].tolist() if not table.empty else []
    keep = [s for s in (selected or []) if s in names]
    return table, gr.update(choices=names, value=keep)


@user_errors
def compare_runs(workspace: Workspace, names: list[str] | None, metric: str) -> tuple[Any, Any, str | None, str | None]:
    """Overlay curves of the chosen runs, and (seq2seq runs) accuracy against source length."""
    from playground.training.runs import bucket_table, loss_curves, run_rows

    names = list(names or [])
    if not names:
        raise PlaygroundError("Pick one or more runs to compare.")
    rows = run_rows(workspace, names)
    if metric == "loss":
        chart = loss_chart(loss_curves(rows), "Train and val loss of the chosen runs")
    else:
        data = rows[["run", "step", metric]].dropna() if metric in rows else pd.DataFrame(columns=["run", "step", metric])
        chart = metric_chart(data, metric, metric.replace("_", " ").capitalize())
    buckets = bucket_table(workspace, names)
    bottleneck = bottleneck_chart(buckets) if not buckets.empty else None
    return (chart, bottleneck, _csv(rows, "runs-metrics"),
            _csv(buckets, "runs-accuracy-by-length") if not buckets.empty else None)


# -- layout --------------------------------------------------------------------------------------

def _widget(f: FormField, initial: dict[str, Any], hint: str | None = None) -> Any:
    info = " · ".join(x for x in (f.info, hint) if x) or None
    common = {"label": f.label, "info": info, "elem_id": f"train-{f.key.replace('.', '-').replace('_', '-')}",
              "interactive": True, "min_width": 320 if f.kind == "text" else 140,  # free text (the corpus): a whole line
              "value": initial.get("value"), "visible": initial.get("visible", True)}
    if f.kind == "int":
        return gr.Number(precision=0, **common)
    if f.kind == "float":
        return gr.Number(**common)
    if f.kind == "bool":
        return gr.Checkbox(**common)
    if f.kind == "text":
        return gr.Dropdown(list(f.choices), allow_custom_value=True, **common)
    return gr.Dropdown(list(f.choices), **common)


def build(ctx: AppContext) -> None:
    """Lay out the Train tab."""
    settings, U = ctx.settings, ctx.per_user
    demo_caps = settings.caps if settings.demo else None  # demo caps are shown next to their fields
    bind = functools.partial
    run_state = gr.State({})
    presets = list_presets()
    first = "nanogpt-cpu-tiny" if "nanogpt-cpu-tiny" in presets else (presets[0] if presets else None)
    initial = preset_selected(first)  # (toml, description, name, *form updates)

    gr.Markdown(INTRO)
    cap = settings.caps.max_train_steps
    if cap:
        gr.Markdown(f"*Demo server: runs stop after {cap} steps.*")
    with gr.Row(equal_height=False):
        with gr.Column(scale=1, min_width=360):
            preset = gr.Dropdown(presets, value=first, label="Preset", elem_id="train-preset")
            # Start sits above the long form and the preset's description (some run to 300 words):
            # it is the one button everybody needs, inside a laptop's window.
            with gr.Row(equal_height=True):
                name = gr.Textbox(value=first, label="Run name", elem_id="train-name", scale=3)
                overwrite = gr.Checkbox(False, label="Overwrite", elem_id="train-overwrite", scale=1)
            with gr.Row():
                start_btn = gr.Button("Start", variant="primary", elem_id="train-start")
                stop_btn = gr.Button("Stop", variant="stop", elem_id="train-stop")
                resume_btn = gr.Button("Resume", elem_id="train-resume")
            description = gr.Markdown(initial[1], elem_id="train-description")
            gpu_note = gr.Markdown(visible=settings.zerogpu, elem_id="train-gpu-time")  # ZeroGPU: the GPU time asked for
            tokenizer = gr.Dropdown(label="Tokenizer", choices=[], interactive=True, elem_id="train-tokenizer",
                                    info=TOKENIZER_INFO)
            with gr.Accordion("Key settings", open=True):
                # One wrapping row: the family's fields flow two or three a line, hidden ones take no room;
                # the checkboxes (labels that are sentences) get a row of their own below it.
                made: dict[int, Any] = {}
                for boxes in (False, True):
                    with gr.Row():
                        for i, f in enumerate(FORM_FIELDS):
                            if (f.kind == "bool") == boxes:
                                made[i] = _widget(f, initial[3 + i], cap_hint(demo_caps, f.key))
                widgets = [made[i] for i in range(len(FORM_FIELDS))]  # FORM_FIELDS order, as the handlers read them
            uploads = {f.train_ui.upload_suffix: f.train_ui.upload_label for f in FAMILIES.values()}
            upload = gr.File(label=f"Your data ({', '.join(uploads.values())})", file_types=list(uploads),
                             elem_id="train-upload")
            with gr.Accordion("Full preset (TOML)", open=False):
                toml = gr.Code(initial[0], language=None, lines=18, label="preset.toml", interactive=True,
                               elem_id="train-toml")
        with gr.Column(scale=2):
            status = gr.HTML(progress_html(0, 1, IDLE_TEXT, None, "idle"), elem_id="train-status")
            with gr.Row():
                loss_plot = Chart(label="Loss", elem_id="train-loss-plot")
            with gr.Row():
                lr_plot = Chart(label="Learning rate", elem_id="train-lr-plot")
                tput_plot = Chart(label="Throughput", elem_id="train-tput-plot")
            metrics_csv = gr.DownloadButton("Metrics CSV", value=None, elem_id="train-metrics-csv")
            gr.Markdown("#### Preview at the last evaluation")
            sample = gr.Textbox(label="Sample", lines=8, interactive=False, elem_id="train-sample")
            confusion = Chart(label="Confusion matrix", visible=False, elem_id="train-confusion")
            translations = Table(label="Translations", interactive=False, visible=False, wrap=True,
                                        elem_id="train-translations")
    with gr.Accordion("Runs in the workspace", open=False):
        runs_df = Table(interactive=False, label="Runs (final metrics)", elem_id="train-runs", max_height=360)
        with gr.Row(equal_height=True):
            compare_pick = gr.Dropdown([], multiselect=True, allow_custom_value=True, label="Compare runs",
                                       elem_id="train-compare", scale=3)
            compare_metric = gr.Dropdown(["loss", "val_loss", "accuracy", "exact_match", "token_accuracy", "lr"],
                                         value="loss", label="Curve", scale=1, elem_id="train-compare-metric")
            compare_btn = gr.Button("Compare", scale=1, elem_id="train-compare-btn")
        with gr.Row():
            overlay_plot = Chart(label="Curves", elem_id="train-overlay")
            bottleneck_plot = Chart(label="Accuracy vs source length (seq2seq)", elem_id="train-bottleneck")
        with gr.Row():
            overlay_csv = gr.DownloadButton("Curves CSV", value=None)
            bottleneck_csv = gr.DownloadButton("Accuracy by length CSV", value=None)

    # -- wiring --------------------------------------------------------------------------------
    private = {"api_visibility": "undocumented"}
    form_out = [toml, description, name, *widgets]
    # .input, not .change: a deep link (deeplink_view) sets the preset and its edited TOML together
    preset.input(user_errors(preset_selected), [preset], form_out, api_name="train_preset", queue=False,
                 show_progress_on=[description])  # one line, not the 38 fields (playground.ui.progress_targets)
    # The TOML panel follows the form when a field is left (or Enter is pressed), not on every
    # keystroke; Start and Resume read the fields themselves either way.
    sync = dict(fn=user_errors(sync_form), inputs=[toml, tokenizer, *widgets], outputs=[toml], queue=False,
                show_progress="hidden", **private)
    for f, w in zip(FORM_FIELDS, widgets):
        events = (w.blur, w.submit) if f.kind in ("int", "float") else (w.input, w.blur) if f.kind == "text" else (w.input,)
        for i, listen in enumerate(events):
            listen(**sync, api_name=f"train_set_{f.key.replace('.', '_')}" + ("" if i == 0 else f"_{i}"))
    toml.input(form_updates, [toml], widgets, queue=False, show_progress="hidden", api_name="train_toml_form",
               **private)
    if settings.zerogpu:  # the GPU time a Start would ask for, before it is pressed
        toml.change(U(gpu_time_note, settings), [ctx.user, toml], [gpu_note], queue=False,
                    show_progress="hidden", **private)
    toml.change(U(toml_tokenizer), [ctx.user, toml], [tokenizer], queue=False, show_progress="hidden",
                api_name="train_toml_tokenizer", **private)
    tokenizer.input(user_errors(lambda text, value: set_field_raw(text, "data.tokenizer", value)), [toml, tokenizer],
                    [toml], queue=False, show_progress="hidden", api_name="train_tokenizer", **private)
    upload.upload(U(use_upload, settings), [ctx.user, toml, upload], [toml], queue=False, api_name="train_upload",
                  **private).then(
        form_updates, [toml], widgets, queue=False, show_progress="hidden", **private)

    outputs = RunView.wire(status=status, loss_plot=loss_plot, lr_plot=lr_plot, tput_plot=tput_plot,
                           preview=Preview.wire(sample=sample, confusion=confusion, translations=translations),
                           metrics_csv=metrics_csv, run_state=run_state, version=ctx.workspace_version)
    # Start and Resume: first the form as shown goes into the TOML (at the click, client-side
    # values), then the run reads that TOML; a field left empty stops here with a message.
    form_first = dict(fn=user_errors(form_to_run), inputs=[toml, tokenizer, *widgets], outputs=[toml, run_state],
                      queue=False, show_progress="hidden", **private)
    start_first = {**form_first, "fn": user_errors(checked_start(form_to_run, settings))}  # sizes before a slot
    start_event = start_btn.click(**start_first).success(
        ctx.notice("Training"), None, [status], queue=False, show_progress="hidden").then(
        U(bind(start_training, jobs=ctx.jobs), settings), [ctx.user, preset, toml, name, overwrite, ctx.workspace_version],
        outputs, api_name="train_start", show_progress="minimal", show_progress_on=[status],
        validator=start_validator(settings, 2), **ctx.heavy())  # API callers too: refused before the queue
    resume_event = resume_btn.click(**form_first).success(
        ctx.notice("Resume"), None, [status], queue=False, show_progress="hidden").then(
        U(bind(resume_training, jobs=ctx.jobs), settings), [ctx.user, toml, name, ctx.workspace_version], outputs,
        api_name="train_resume", show_progress="minimal", show_progress_on=[status], **ctx.heavy())
    not_started = progress_html(0, 1, "not started: see the message above", None, "error")
    stopped = lambda shown: 'data-state="stopped"' in shown  # Stop has spoken: keep it
    ctx.reset_on_failure(start_event, status, not_started, keep=stopped)
    ctx.reset_on_failure(resume_event, status, not_started, keep=stopped)
    # Stop asks the user's run itself to stop (LiveJobs): it saves, and its own stream ends with
    # the step it saved. Cancelling a running stream instead left an "Error" badge on the status
    # and could leave the run going; only a Start still queued (no run yet) is cancelled.
    stopping = progress_html(0, 1, "stopping: saving the run at the step it reached…", None, "stopped")
    not_running = gr.State(0)  # bumped by Stop when this tab has no run yet: cancels a queued Start
    stop_btn.click(lambda: stopping, None, [status], queue=False, show_progress="hidden", **private).then(
        U(bind(stop_answer, jobs=ctx.jobs)), [ctx.user, run_state, ctx.workspace_version, not_running],
        [status, ctx.workspace_version, not_running], api_name="train_stop", queue=False, show_progress_on=[status])
    not_running.change(None, None, None, cancels=[start_event, resume_event], queue=False, **private)
    # A new preset starts from a clean slate: no status line of another run.
    preset.input(lambda: progress_html(0, 1, IDLE_TEXT, None, "idle"), None, [status], queue=False,
                 show_progress="hidden", **private)
    compare_btn.click(U(compare_runs), [ctx.user, compare_pick, compare_metric],
                      [overlay_plot, bottleneck_plot, overlay_csv, bottleneck_csv], api_name="train_compare")

    ctx.on_workspace_change(tokenizer_refresh, [tokenizer, toml], [tokenizer], api_name="train_tokenizers")
    ctx.on_page_load(restore_last_run, [], [preset, *form_out, *outputs])  # a reload: the last run is back
    ctx.on_workspace_change(runs_refresh, [compare_pick], [runs_df, compare_pick], api_name="train_runs")


def set_field_raw(toml_text: str, key: str, value: Any) -> str:
    """Set any `section.key` to a string value in the TOML text (the tokenizer dropdown)."""
    preset = _parse(toml_text)
    section, name = key.split(".", 1)
    if value:
        preset.section(section)[name] = str(value)
    return preset_to_toml(preset)


__all__ = [
    "FORM_FIELDS",
    "build",
    "check_before_start",
    "compare_runs",
    "form_updates",
    "preset_selected",
    "progress_html",
    "resume_training",
    "runs_refresh",
    "set_field",
    "start_training",
    "stop_answer",
    "stop_status",
    "tokenizer_choices",
    "use_upload",
]
