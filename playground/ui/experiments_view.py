"""The "Experiments" sub-tab of Analyze: the attention-is-(not)-explanation experiments over a
batch of held-out examples, with progress, Stop, charts, plain-language summaries and CSV/JSON.

``build(ctx)`` lays the view out inside whatever container is open (a gr.Tab of the Analyze
tab). Handlers are module-level functions (tests call them directly) and every event has an
api_name: experiments_models (refresh), experiments_modules, experiments_run,
experiments_stop, experiments_example, experiments_retrain_uniform.
"""
from __future__ import annotations

import dataclasses
import json
import math
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gradio as gr
import pandas as pd

from playground.errors import PlaygroundError
from playground.scratch import download_dir
from playground.ui.components import Chart, Slider
from playground.ui.context import AppContext, model_choices, user_errors
from playground.ui.tables import Table
from playground.ui.updates import Updates
from playground.zerogpu import experiment_seconds, gpu, quota_s

EXPERIMENT_LABELS: dict[str, str] = {
    "permutation": "Random permutation (J&W)",
    "adversarial": "Adversarial attention (J&W)",
    "agreement": "Agreement with gradient / leave-one-out (J&W)",
    "uniform": "Uniform-attention baseline (W&P)",
    "seeds": "Seed variance (W&P)",
    "diagnostic": "Diagnostic classifier (W&P)",
    "erasure": "Erasure to decision flip (S&S)",
    "aopc": "Deletion / insertion, AOPC, ERASER",
    "pointing": "Pointing game (vit-shapes)",
    "causal": "Proxies vs causal effect: attention and gradients scored against activation patching",
    "sanity": "Sanity check: cascading model (and optionally data-label) randomisation (Adebayo)",
}
ALL_METHODS = ["attention", "attention_mean", "rollout", "norm", "relevancy", "flow", "saliency", "ixg", "ig", "loo",
               "attention_grad", "random"]
YIELD_EVERY_S = 1.0
DEFAULT_N = 50  # held-out examples, unless the experiment has its own default
# the adversarial search costs seconds per example (its default run stays near a minute);
# the sanity check recomputes every map once per randomised layer
EXPERIMENT_N = {"adversarial": 10, "sanity": 10}
DEFAULT_STEPS = 100  # adversarial Adam steps (the CLI keeps J&W's 500)
NO_ESTIMATE = ("No time estimate for this experiment (it retrains models or scores whole validation splits); "
               "once it runs, the status line says how far it is.")


def experiment_choices() -> list[tuple[str, str]]:
    return [(label, key) for key, label in EXPERIMENT_LABELS.items()]


def default_n(experiment: str | None) -> int:
    """The held-out examples an experiment starts with."""
    return EXPERIMENT_N.get(experiment or "", DEFAULT_N)


def capped_n(settings: Any, n: float | None) -> int:
    """The examples a run will use: the slider's value within this server's cap."""
    cap = settings.caps.max_analysis_examples
    value = max(1, int(n or 1))
    return min(value, cap) if cap is not None else value


def eta_text(so_far_s: float, done: int, total: int, loop_s: float | None = None) -> str:
    """'12 s so far, about 30 s left': the pace of the `done` finished examples (over `loop_s`
    seconds of the example loop, default all `so_far_s`) times the examples left."""
    from playground.analysis.experiments.estimate import format_seconds

    so_far = f"{so_far_s:.0f} s so far"
    if done <= 0 or total <= done:
        return so_far
    return f"{so_far}, {format_seconds((loop_s or so_far_s) / done * (total - done))} left"


def _load(workspace: Any, settings: Any, checkpoint: str | None) -> Any:
    from playground.bundle import cached_bundle

    if not checkpoint:
        raise PlaygroundError("Pick a checkpoint first (train one in the Train tab).")
    return cached_bundle(checkpoint, workspace, settings.resolved_device)


def module_update(workspace: Any, settings: Any, checkpoint: str | None) -> dict[str, Any]:
    """Choices of the attention module to intervene on for this checkpoint (last layer first)."""
    from playground.analysis.experiments.runner import module_choices

    if not checkpoint:
        return gr.update(choices=[], value=None)
    try:
        bundle = _load(workspace, settings, checkpoint)
        names = module_choices(bundle.model, bundle.family)
    except PlaygroundError:
        return gr.update(choices=[], value=None)
    return gr.update(choices=names, value=names[0] if names else None)


def count_field(value: Any, what: str, default: int | None = None, zero_is_empty: bool = False) -> Any:
    """A count typed in a field: a whole number >= 1, or `default` when the field is empty
    (0 or a negative number is refused, not read as "the default" or as 1). `zero_is_empty`: a
    field whose label says 0 means its default (gradio's number box turns an emptied or
    never-filled value into 0 once its accordion opens)."""
    if value is None or value == "" or (zero_is_empty and value == 0 and not isinstance(value, bool)):
        return default
    if (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
            or value != int(value) or value < 1):
        empty = f"; leave it empty for {default}" if default is not None else "; leave it empty for the default"
        raise PlaygroundError(f"{what} must be a whole number of at least 1, got {value!r}{empty}.")
    return int(value)


def build_options(settings: Any, n: float, seed: float, module: str | None, heads: str, epsilon: str, n_perm: float,
                  steps: float, k: float, views: list[str], references: list[str], methods: list[str], level: str,
                  seeds: str, retrain_steps: float | None, float64: bool = False,
                  label_randomisation: bool = False) -> Any:
    """Widget values -> ExperimentOptions (demo caps applied)."""
    from playground.analysis.experiments.runner import (
        ExperimentOptions,
        parse_heads,
        parse_ints,
    )

    caps = settings.caps
    n = capped_n(settings, count_field(n, "Number of examples", 1))
    eps = None if epsilon in (None, "", "default") else float(epsilon)
    return ExperimentOptions(
        n=n, seed=int(seed or 0), module=module or None, heads=parse_heads(heads),
        n_perm=count_field(n_perm, "Permutations per example", 100), k=count_field(k, "Adversaries per example", 5),
        epsilon=eps, steps=count_field(steps, "Optimisation steps", DEFAULT_STEPS),
        views=tuple(views or ()), references=tuple(references or ()), methods=tuple(methods) if methods else None,
        level=level or "attention", seeds=parse_ints(seeds), retrain_steps=count_field(retrain_steps, "Retrain steps", zero_is_empty=True),
        device=settings.resolved_device, max_steps_cap=caps.max_train_steps, float64=bool(float64),
        label_randomisation=bool(label_randomisation),
    )


def _write_files(result: Any, folder: Path) -> list[str]:
    """CSV (one row per example) and JSON (everything) of a result; returns their paths."""
    name = f"{result.experiment}-{result.settings.get('checkpoint', 'model')}"
    csv_path, json_path = folder / f"{name}.csv", folder / f"{name}.json"
    result.to_frame().to_csv(csv_path, index=False)
    json_path.write_text(result.to_json(), encoding="utf-8")
    paths = [str(csv_path), str(json_path)]
    if hasattr(result, "curve_frame"):  # the curves chart's data
        curves = folder / f"{name}-curves.csv"
        result.curve_frame().to_csv(curves, index=False)
        paths.append(str(curves))
    return paths


def significant(value: Any, digits: int = 4) -> Any:
    """A float to ``digits`` significant digits (2.0718e-07 stays 2.072e-07, not 0 as decimal rounding
    made it, while the summary said 2.1e-07); anything else as it is."""
    if isinstance(value, float) and math.isfinite(value):
        return float(f"{value:.{digits}g}")
    return value


def stats_table(result: Any) -> pd.DataFrame:
    """The small table shown under the chart: per-method / per-pair / per-variant numbers, each to
    4 significant digits."""
    st = result.stats()
    frame = None
    for key in ("pairs", "methods"):
        if key in st:
            frame = pd.DataFrame(st[key])
            break
    if frame is None and result.experiment == "uniform":
        frame = result.table()
    elif frame is None and result.experiment == "diagnostic":
        frame = result.to_frame()
    if frame is None:
        rows = []
        for key, value in st.items():
            if isinstance(value, dict) and "mean" in value:
                rows.append({"statistic": key, **value})
            elif isinstance(value, (int, float)):
                rows.append({"statistic": key, "mean": value})
        frame = pd.DataFrame(rows)
    return frame.map(significant)


@dataclass(frozen=True)
class ExperimentView(Updates):
    """A run's result area, as it streams (a field left at gr.skip() keeps what is shown)."""

    status: Any
    summary: Any = field(default_factory=gr.skip)
    chart: Any = field(default_factory=gr.skip)
    table: Any = field(default_factory=gr.skip)
    files: Any = field(default_factory=gr.skip)
    result_path: Any = field(default_factory=gr.skip)
    example: Any = field(default_factory=gr.skip)  # the adversarial example slider
    adversarial_box: Any = field(default_factory=gr.skip)  # original-vs-adversarial controls, only with an adversarial result
    first_head: Any = field(default_factory=gr.skip)  # the first column's model name (a two-model run)
    second_box: Any = field(default_factory=gr.skip)  # the second model's column, shown for a two-model run
    second_head: Any = field(default_factory=gr.skip)
    second_summary: Any = field(default_factory=gr.skip)
    second_chart: Any = field(default_factory=gr.skip)
    second_table: Any = field(default_factory=gr.skip)


@dataclass(frozen=True)
class ClearedView(Updates):
    """The result area after a model switch: nothing of the previous model's run."""

    status: Any = ""
    summary: Any = ""
    chart: Any = None
    table: Any = None
    files: Any = None
    result_path: Any = None
    adversarial_box: Any = field(default_factory=lambda: gr.update(visible=False))
    example_chart: Any = None
    first_head: Any = ""
    second_box: Any = field(default_factory=lambda: gr.update(visible=False))
    second_head: Any = ""
    second_summary: Any = ""
    second_chart: Any = None
    second_table: Any = None


def _render(result: Any, folder: Path, status: str) -> ExperimentView:
    """The result area for `result` (partial or final), its files written to `folder`."""
    from playground.analysis.experiments.summary import summarize
    from playground.charts.experiments import experiment_chart

    files = _write_files(result, folder)
    n_examples = len(result.extra.get("example_labels") or []) or result.n_done
    return ExperimentView(status, summarize(result).to_markdown(), experiment_chart(result), stats_table(result),
                          files, files[1], gr.update(maximum=max(1, n_examples - 1)),
                          gr.update(visible=result.experiment == "adversarial"), "", gr.update(visible=False))


def _render_pair(pair: Any, folder: Path, status: str) -> ExperimentView:
    """Both models' result areas side by side (a model not reached yet shows that it waits)."""
    from playground.analysis.experiments.summary import summarize
    from playground.charts.experiments import experiment_chart

    columns, files = [], []
    for name, result in zip(pair.models, pair.results):
        if result is None or not result.n_done:
            columns.append((f"**{name}**", f"_{name}: waiting for its examples._", None, None))
            continue
        files += _write_files(result, folder)
        columns.append((f"**{name}**", summarize(result).to_markdown(), experiment_chart(result), stats_table(result)))
    first = pair.results[0]
    n_examples = len((first.extra.get("example_labels") or []) if first is not None else []) or 1
    (head1, summary1, chart1, table1), (head2, summary2, chart2, table2) = columns
    return ExperimentView(status, summary1, chart1, table1, files or None, files[1] if len(files) > 1 else None,
                          gr.update(maximum=max(1, n_examples - 1)),
                          gr.update(visible=pair.experiment == "adversarial" and first is not None), head1,
                          gr.update(visible=True), head2, summary2, chart2, table2)


def cleared() -> tuple[Any, ...]:
    """What the result area shows after a model switch (its values: gradio calls this directly)."""
    return ClearedView().values()


def _experiment_gpu_s(workspace: Any, settings: Any, checkpoint: str | None, experiment: str, n: float,
                      *args: Any, **kwargs: Any) -> int:
    """The GPU seconds one experiment asks for on ZeroGPU: its examples' estimate, within the
    visitor's daily quota (spaces calls this with the handler's own arguments)."""
    examples = int(n or 1) * (2 if kwargs.get("second") else 1)  # a second model reads the same examples
    return experiment_seconds(examples, quota_s(getattr(workspace, "key", None)))


# On ZeroGPU the GPU is attached for the whole experiment, called from the request's thread. This
# handler, not iter_experiment, is the one decorated: spaces drops a generator's return value, and
# iter_experiment returns its result.
@gpu(duration=_experiment_gpu_s)
def run_experiment(workspace: Any, settings: Any, checkpoint: str | None, experiment: str, n: float, seed: float,
                   module: str | None, heads: str, epsilon: str, n_perm: float, steps: float, k: float,
                   views: list[str], references: list[str], methods: list[str], level: str, seeds: str,
                   retrain_steps: float | None, progress: Any = None, float64: bool = False,
                   label_randomisation: bool = False, second: str | None = None):
    """Generator handler: yields the result area (ExperimentView) as it goes; the status line says
    the time so far and, after the first example, about how long is left. ``float64`` runs on a
    float64 copy of the model (small models); ``label_randomisation`` adds the sanity check's
    shuffled-label retrain.

    ``second``: a second model (e.g. an imported pretrained one) run on the same held-out examples,
    each model through its own tokenizer; the result area then has one column per model.

    Stopping (the Stop button cancels this generator) keeps the last yielded partial result on
    screen and in the download files.
    """
    from playground.analysis.experiments.record import record_if_own
    from playground.analysis.experiments.runner import iter_experiment, private_copy

    if experiment not in EXPERIMENT_LABELS:
        raise PlaygroundError(f"Pick an experiment ({', '.join(EXPERIMENT_LABELS.values())}).")
    bundle = _load(workspace, settings, checkpoint)
    options = build_options(settings, n, seed, module, heads, epsilon, n_perm, steps, k, views, references, methods, level,
                            seeds, retrain_steps, float64, label_randomisation)
    private = dataclasses.replace(bundle, model=private_copy(bundle.model))  # captum hooks stay on our copy
    folder = download_dir("playground-experiment-")
    if second:
        yield from _run_pair(workspace, settings, private, second, experiment, options, folder, progress)
        return
    gen = iter_experiment(experiment, private, options, workspace, caps=settings.caps)
    t0 = time.perf_counter()
    starting = f"Running: {EXPERIMENT_LABELS[experiment]} on {options.n} example{'s' if options.n != 1 else ''}, starting…"
    yield ExperimentView(starting)
    result = yield from _streamed(gen, t0, progress, lambda partial, status: _render(partial, folder, status)
                                  if partial is not None and partial.n_done else ExperimentView(status))
    if result is None:
        raise PlaygroundError("The experiment produced no result.")
    status = (f"Stopped after {result.examples_done} of {result.n_requested}; the numbers cover those." if result.stopped
              else f"Done: {result.examples_done} of {result.n_requested} in {time.perf_counter() - t0:.1f} s.")
    if record_if_own(workspace, bundle.name, bundle.path, result) is not None:
        status += " Kept with the model for its card (My space → Share to the Hub)."
    yield _render(result, folder, status)


def _streamed(gen: Any, t0: float, progress: Any,
              render: Callable[[Any, str], ExperimentView]) -> Generator[ExperimentView, None, Any]:
    """Drive an experiment's event stream: the progress bar at every event, the result area
    (`render(partial result or None, status line)`) at most every YIELD_EVERY_S; returns the
    stream's final value."""
    last_yield, partial = 0.0, None
    while True:
        try:
            event = next(gen)  # a playground.analysis.experiments.core.Progress
        except StopIteration as done:
            return done.value
        now = time.perf_counter()
        eta = eta_text(now - t0, event.done, event.total, event.elapsed_s)
        if progress is not None:
            progress(event.fraction, desc=f"{event.message} ({eta})")
        if event.partial is not None:
            partial = event.partial
        if now - last_yield >= YIELD_EVERY_S:
            last_yield = now
            yield render(partial, f"Running: {event.message} ({eta}). Stop keeps what is finished.")


def pair_bundles(workspace: Any, settings: Any, first: Any, second: str, options: Any) -> tuple[list[Any], Any]:
    """[first, second] as private copies, and the options for both: the first model's default
    module (its last layer) becomes each model's own last layer."""
    from playground.analysis.experiments.runner import module_choices, private_copy

    other = _load(workspace, settings, second)
    if options.module and options.module == next(iter(module_choices(first.model, first.family)), None):
        options = dataclasses.replace(options, module=None)
    return [first, dataclasses.replace(other, model=private_copy(other.model))], options


def _run_pair(workspace: Any, settings: Any, first: Any, second: str, experiment: str, options: Any, folder: Path,
              progress: Any):
    """run_experiment's two-model run: the result area with one column per model, as it streams."""
    from playground.analysis.experiments.pair import check_pair, iter_pair, pair_note

    bundles, options = pair_bundles(workspace, settings, first, second, options)
    check_pair(experiment, bundles, options)  # refused before the "Running" line
    gen = iter_pair(experiment, bundles, options, workspace, caps=settings.caps)
    t0 = time.perf_counter()
    yield ExperimentView(f"Running: {EXPERIMENT_LABELS[experiment]} on {first.name} and {second}, "
                         f"{options.n} example{'s' if options.n != 1 else ''} each, starting…")
    pair = yield from _streamed(gen, t0, progress, lambda partial, status: _render_pair(partial, folder, status)
                                if partial is not None else ExperimentView(status))
    done = [r.examples_done if r is not None else 0 for r in pair.results]
    status = (f"Stopped: {done[0]} + {done[1]} examples finished; the numbers cover those. " if pair.stopped
              else f"Done: {done[0]} examples on each model in {time.perf_counter() - t0:.1f} s. ") + pair_note(pair)
    yield _render_pair(pair, folder, status)


def second_choices(workspace: Any, current: str | None) -> dict[str, Any]:
    """The second-model dropdown's update: none (one model) or any model the user can see."""
    names = list(workspace.names("models"))
    return gr.update(choices=[("none: one model", ""), *names], value=current if current in names else "")


def calibration_key(checkpoint: str | None, experiment: str, options: Any, second: str | None = None) -> str:
    """What a timing depends on besides the example count and the Adam steps (which scale it)."""
    o = options.to_dict()
    return json.dumps([checkpoint, experiment, *(o[f] for f in ("module", "heads", "k", "n_perm", "epsilon", "views",
                                                                 "references", "methods", "level", "seed")),
                       *([second] if second else [])], default=str)


def _calibrate_pair(workspace: Any, settings: Any, first: Any, second: str, experiment: str, options: Any) -> Any:
    """One example timed on both models (draw and read included); None for the untimed experiments."""
    from playground.analysis.experiments.estimate import TIMED, Calibration
    from playground.analysis.experiments.pair import check_pair, time_one_example

    bundles, options = pair_bundles(workspace, settings, first, second, options)
    check_pair(experiment, bundles, options)  # a refusal shows here, next to Run, before any timing
    if experiment not in (*TIMED, "uniform"):  # a pair's uniform baseline scores the held-out examples: timed too
        return None
    return Calibration(experiment, *time_one_example(experiment, bundles, options, workspace))


def estimate(workspace: Any, settings: Any, checkpoint: str | None, experiment: str, n: float, seed: float,
             module: str | None, heads: str, epsilon: str, n_perm: float, steps: float, k: float,
             views: list[str], references: list[str], methods: list[str], level: str, seeds: str,
             retrain_steps: float | None, calibration: dict | None = None,
             second: str | None = None) -> tuple[str, dict | None]:
    """The expected run time as a line next to Run, and the timing it rests on (reused while
    only the example count or the Adam steps change). See playground.analysis.experiments.estimate.
    With a ``second`` model, one example is timed on both (a pair that cannot be compared says why)."""
    import dataclasses

    from playground.analysis.experiments.estimate import (
        Calibration,
        calibrate,
        format_seconds,
    )
    from playground.analysis.experiments.runner import private_copy

    if not checkpoint:
        return "Pick a checkpoint: the expected time shows here before you run.", calibration
    if experiment not in EXPERIMENT_LABELS:
        return "", calibration
    try:
        options = build_options(settings, n, seed, module, heads, epsilon, n_perm, steps, k, views, references,
                                methods, level, seeds, retrain_steps)
    except PlaygroundError as exc:  # a value being typed: the estimate says so, Run refuses it
        return f"No estimate: {exc}", calibration
    key = calibration_key(checkpoint, experiment, options, second)
    if calibration and calibration.get("key") == key:
        timing = Calibration(**{f: calibration[f] for f in ("experiment", "draw_s", "example_s", "step_s")})
    else:
        bundle = _load(workspace, settings, checkpoint)
        try:
            private = dataclasses.replace(bundle, model=private_copy(bundle.model))
            timing = (_calibrate_pair(workspace, settings, private, second, experiment, options) if second
                      else calibrate(experiment, private, options, workspace))
        except PlaygroundError as exc:
            return f"No estimate: {exc}", None
        if timing is None:
            return NO_ESTIMATE, None
        calibration = {"key": key, **timing.to_dict()}
    total = timing.seconds(options.n, options.steps)
    what = f"{options.n} example{'s' if options.n != 1 else ''}" + (f" on each of {checkpoint} and {second}" if second
                                                                    else "")
    if experiment == "adversarial":
        what += f" × {options.steps} Adam steps × {options.k} adversar{'ies' if options.k != 1 else 'y'}"
        basis = f"{timing.example_s + timing.step_s * options.steps:.2f} s per example"
    else:
        basis = f"{timing.example_s:.2f} s per example"
    if second:
        basis += " on both models together"
    line = (f"**Expected time: {format_seconds(total)}** for {what} (one example timed on this server just now: "
            f"{basis}, plus {timing.draw_s:.1f} s to draw the examples).")
    return line, calibration


def show_example(result_path: str | None, index: float) -> Any:
    """Original vs adversarial attention of one example of the last adversarial result."""
    from playground.charts.experiments import _empty, attention_pair_chart

    if not result_path or not Path(result_path).is_file():
        return _empty("Original vs adversarial attention", "run the adversarial experiment first")
    data = json.loads(Path(result_path).read_text(encoding="utf-8"))
    att = (data.get("extra") or {}).get("attention") or {}
    if not att:
        return _empty("Original vs adversarial attention", "this result has no per-example attention")
    key = str(int(index or 0))
    if key not in att:
        key = min(att, key=int)
    entry = att[key]
    units = ((data.get("extra") or {}).get("units") or {}).get(key) or [str(i) for i in range(len(entry["original"]))]
    return attention_pair_chart(units, entry["original"], entry.get("adversarial"), entry.get("real"))


def retrain_uniform(workspace: Any, settings: Any, checkpoint: str | None, retrain_steps: float | None,
                    version: int, progress: Any = None):
    """Generator handler: retrain the checkpoint's preset with frozen uniform attention
    (``<checkpoint>-uniform``); yields (status, workspace version)."""
    from playground.analysis.experiments.runner import (
        ExperimentOptions,
        iter_retrain_uniform,
    )

    steps = count_field(retrain_steps, "Retrain steps", zero_is_empty=True)
    bundle = _load(workspace, settings, checkpoint)
    opts = ExperimentOptions(retrain_steps=steps,
                             device=settings.resolved_device, max_steps_cap=settings.caps.max_train_steps)
    gen = iter_retrain_uniform(bundle, workspace, opts)
    name = None
    while True:
        try:
            ev = next(gen)
        except StopIteration as done:
            name = done.value
            break
        if progress is not None:
            progress(ev.fraction, desc=ev.message)
        yield ev.message, version
    yield f"Saved {name!r}; run the uniform baseline again to compare.", version + 1


def build(ctx: AppContext, checkpoint: gr.Dropdown | None = None, tab: gr.Tab | None = None) -> None:
    """Lay out the Experiments view inside the current container.

    ``checkpoint``: a checkpoint dropdown shared with the rest of the Analyze tab; without it
    the view makes its own (refreshed as ``/refresh_experiments_models``). ``tab``: the tab the
    view sits in; the time estimate (which times one example) waits until it is first opened.
    """
    from playground.analysis.numerics import FLOAT64_MAX_PARAMETERS

    st = ctx.settings

    def hint(field: str) -> str | None:
        """'≤ N on this server' next to a field a demo server caps."""
        value = getattr(st.caps, field, None) if st.demo else None
        return f"≤ {value:,} on this server" if value else None
    gr.Markdown(
        "Replicate the 2019 debate on your own checkpoint over held-out examples: **Jain & Wallace** (agreement, "
        "permutation, adversarial attention), **Wiegreffe & Pinter** (uniform baseline, seed variance, diagnostic) "
        "and **Serrano & Smith** erasure, with deletion/insertion curves and the pointing game. Each run shows "
        "progress; Stop keeps the finished examples.")
    own_dropdown = checkpoint is None
    with gr.Row():
        if own_dropdown:
            checkpoint = gr.Dropdown(label="Checkpoint", choices=[], interactive=True, elem_id="exp-model")
        experiment = gr.Dropdown(label="Experiment", choices=experiment_choices(), value="permutation",
                                 interactive=True, elem_id="exp-name")
        second = gr.Dropdown(label="Second model (optional)", choices=[("none: one model", "")], value="",
                             interactive=True, elem_id="exp-second",
                             info="e.g. an imported GPT-2 beside your own model: the same held-out examples, each "
                                  "model through its own tokenizer, results in two columns")
    with gr.Row():
        n = Slider(1, 500, value=DEFAULT_N, step=1, label="Held-out examples", elem_id="exp-n",
                      info="each experiment sets its own default" + (
                          f"; capped at {st.caps.max_analysis_examples} on this server"
                          if st.caps.max_analysis_examples else ""))
        seed = gr.Number(value=0, precision=0, label="Seed (examples and every random choice)")
        module = gr.Dropdown(label="Attention module (layer)", choices=[], interactive=True, elem_id="exp-module")
        heads = gr.Textbox(value="all", label="Heads", info="'all' or e.g. 0,2")
    with gr.Accordion("Options", open=False):
        with gr.Row():
            epsilon = gr.Radio(["default", "0.01", "0.05"], value="default", label="ε (adversarial TVD bound)",
                               info="default: 0.01 for classifiers, 0.05 for next-token / seq2seq")
            n_perm = gr.Number(value=100, precision=0, label="Permutations per example", info=hint("max_permutations"))
            steps = gr.Number(value=DEFAULT_STEPS, precision=0, label="Adversarial Adam steps", elem_id="exp-steps",
                              info=hint("max_adversarial_steps") or "Jain & Wallace used more; 100 keeps a run short")
            k = gr.Number(value=5, precision=0, label="Adversaries per example (k)", info=hint("max_adversaries"))
        with gr.Row():
            views = gr.CheckboxGroup(["attention", "attention_mean", "rollout", "norm", "relevancy", "flow"],
                                     value=["attention", "attention_mean", "rollout", "norm"], label="Attention views (agreement)")
            references = gr.CheckboxGroup(["jw_grad", "loo_delete", "saliency", "ixg", "ig", "loo"],
                                          value=["jw_grad", "loo_delete"],  # J&W's own definitions (jain_wallace.JW_REFERENCES)
                                          label="References (agreement): jw_grad, loo_delete = J&W's definitions")
        with gr.Row():
            methods = gr.CheckboxGroup(ALL_METHODS, value=[], label="Rankings (erasure / AOPC / pointing / sanity; empty = defaults)")
            level = gr.Radio(["attention", "input"], value="attention", label="Erasure level",
                             info="attention: zero the weights and renormalise (S&S); input: replace by the baseline")
        with gr.Row():
            seeds = gr.Textbox(value="1,2", label="Extra training seeds (seed variance)", info=hint("max_extra_seeds"))
            retrain_steps = gr.Number(value=None, precision=0, label="Retrain steps (empty or 0 = the preset's)",
                                      info=hint("max_train_steps"))
        with gr.Row():
            float64 = gr.Checkbox(value=False, label="Double precision (float64)", elem_id="exp-float64",
                                  info="saturated outputs: gradients and leave-one-out changes above float32's noise; "
                                       f"models up to {FLOAT64_MAX_PARAMETERS:,} parameters")
            label_randomisation = gr.Checkbox(
                value=False, label="Sanity check: also retrain on shuffled labels", elem_id="exp-label-randomisation",
                info="Adebayo's data test, classifiers only: a quick retrain (<checkpoint>-shuffled, reused) whose "
                     "maps are compared with the trained model's; the expected time above leaves the retrain out")
    with gr.Row():
        run_btn = gr.Button("Run", variant="primary", elem_id="exp-run")
        stop_btn = gr.Button("Stop", variant="stop", elem_id="exp-stop")
        retrain_btn = gr.Button("Retrain a uniform-attention copy", elem_id="exp-retrain")
    expected = gr.Markdown("The expected time shows here before you run.", elem_id="exp-estimate")
    status = gr.Markdown(elem_id="exp-status")
    with gr.Row():
        with gr.Column():
            first_head = gr.Markdown(elem_id="exp-col-1-head")
            summary = gr.Markdown(elem_id="exp-summary")
            chart = Chart(label="Result", elem_id="exp-chart")
            table = Table(label="Numbers", interactive=False, elem_id="exp-table")
        with gr.Column(visible=False, elem_id="exp-col-2") as second_box:  # shown for a two-model run
            second_head = gr.Markdown(elem_id="exp-col-2-head")
            second_summary = gr.Markdown(elem_id="exp-summary-2")
            second_chart = Chart(label="Result", elem_id="exp-chart-2")
            second_table = Table(label="Numbers", interactive=False, elem_id="exp-table-2")
    files = gr.File(label="Download (CSV: one row per example; JSON: everything)", file_count="multiple",
                    interactive=False, elem_id="exp-files")
    with gr.Accordion("Jain & Wallace 2019, Table 2 (BiLSTM + additive attention), for scale", open=False):
        from playground.analysis.experiments.jain_wallace import jw_reference_frame

        Table(value=jw_reference_frame(), interactive=False)
    with gr.Column(visible=False, elem_id="exp-adversarial") as adversarial_box:  # shown with an adversarial result
        with gr.Row():
            example = Slider(0, 49, value=0, step=1, label="Example (adversarial)", elem_id="exp-example")
            example_btn = gr.Button("Show original vs adversarial attention", elem_id="exp-example-show")
        example_chart = Chart(label="One example", elem_id="exp-example-chart")
    result_path = gr.State(None)
    calibration = gr.State(None)
    opened = gr.State(tab is None)  # the estimate times an example only once the view has been seen
    columns = dict(first_head=first_head, second_box=second_box, second_head=second_head,
                   second_summary=second_summary, second_chart=second_chart, second_table=second_table)
    results = ClearedView.wire(status=status, summary=summary, chart=chart, table=table, files=files,
                               result_path=result_path, adversarial_box=adversarial_box, example_chart=example_chart,
                               **columns)

    if own_dropdown:
        ctx.on_workspace_change(model_choices, [checkpoint], [checkpoint], api_name="experiments_models")
    checkpoint.change(ctx.per_user(module_update, st), [ctx.user, checkpoint], [module],
                      api_name="experiments_modules", queue=False)
    checkpoint.change(cleared, None, results, queue=False, show_progress="hidden", api_visibility="private")
    second.change(cleared, None, results, queue=False, show_progress="hidden", api_visibility="private")
    ctx.on_workspace_change(second_choices, [second], [second], api_name="experiments_second_models")
    n_defaulted = experiment.input(default_n, [experiment], [n], queue=False, show_progress="hidden",
                                   api_visibility="private")

    options_in = [checkpoint, experiment, n, seed, module, heads, epsilon, n_perm, steps, k, views, references, methods,
                  level, seeds, retrain_steps]

    def _estimate(space, is_open, *args):
        if not is_open:
            return gr.skip(), gr.skip()
        *values, other, calib = args
        return estimate(space, st, *values, calib, second=other or None)

    estimate_fn = ctx.per_user(_estimate)
    estimate_io = dict(inputs=[ctx.user, opened, *options_in, second, calibration], outputs=[expected, calibration],
                       show_progress="hidden", **ctx.analysis())
    if tab is not None:
        tab.select(lambda: True, None, [opened], queue=False, show_progress="hidden", api_visibility="private").then(
            estimate_fn, api_visibility="private", **estimate_io)
    # n redraws on release (no estimate of a half-typed count); an experiment's own default count,
    # which sets n without a release, is estimated once it is in
    n_defaulted.then(estimate_fn, api_visibility="private", **estimate_io)
    gr.on([experiment.change, second.change, module.change, n.release, steps.change, k.change, n_perm.change, heads.change,
           seed.change], estimate_fn, trigger_mode="always_last", api_visibility="private",  # a page helper only
          **estimate_io)

    def _run(space, c, e, n_, s, m, h, eps, npm, stp, k_, v, r, meth, lv, sd, rs, f64=False, shuffle=False, other=None,
             progress=gr.Progress()):  # noqa: B008 - gradio finds its tracker by this default
        with ctx.jobs.claim(space.key, "experiment", e or "experiment", st.caps.max_experiments_per_user, "experiment"):
            yield from run_experiment(space, st, c, e, n_, s, m, h, eps, npm, stp, k_, v, r, meth, lv, sd, rs, progress,
                                      float64=bool(f64), label_randomisation=bool(shuffle), second=other or None)

    # The old result's status goes at once, in the browser (a server round trip waits behind a running job).
    run_event = run_btn.click(None, None, [status], js=f"() => {json.dumps(ctx.queued_notice('Experiment'))}",
                              queue=False, show_progress="hidden").then(
        ctx.per_user(_run), [ctx.user, *options_in, float64, label_randomisation, second],
        ExperimentView.wire(status=status, summary=summary, chart=chart, table=table, files=files,
                            result_path=result_path, example=example, adversarial_box=adversarial_box, **columns),
        api_name="experiments_run",
        **ctx.heavy())

    def _retrain(space, c, rs, version, progress=gr.Progress()):  # noqa: B008 - as above
        with ctx.jobs.claim(space.key, "experiment", f"retrain {c}", st.caps.max_experiments_per_user, "experiment"):
            yield from retrain_uniform(space, st, c, rs, version, progress)

    retrain_event = retrain_btn.click(None, None, [status], js=f"() => {json.dumps(ctx.queued_notice('Retrain'))}",
                                      queue=False, show_progress="hidden").then(
        ctx.per_user(_retrain), [ctx.user, checkpoint, retrain_steps, ctx.workspace_version],
                                      [status, ctx.workspace_version], api_name="experiments_retrain_uniform", **ctx.heavy())
    ctx.reset_on_failure(run_event, status, "Not run: see the message above.")
    ctx.reset_on_failure(retrain_event, status, "Not retrained: see the message above.")
    stop_btn.click(lambda: "Stopped: the numbers above cover the finished examples.", None, [status],
                   cancels=[run_event, retrain_event], api_name="experiments_stop", queue=False)
    example_btn.click(user_errors(show_example), [result_path, example], [example_chart], api_name="experiments_example")
