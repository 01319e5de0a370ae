"""The "Experiments" sub-tab of Analyze: the attention-is-(not)-explanation experiments over a
batch of held-out examples, with progress, Stop, charts, plain-language summaries and CSV/JSON.

``build(ctx)`` lays the view out inside whatever container is open (a gr.Tab of the Analyze
tab). Handlers are module-level functions (tests call them directly) and every event has an
api_name: experiments_models (refresh), experiments_modules, experiments_run,
experiments_stop, experiments_example, experiments_retrain_uniform.
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import gradio as gr
import pandas as pd

from playground.errors import PlaygroundError
from playground.scratch import download_dir
from playground.ui.context import AppContext, model_choices, user_errors
from playground.zerogpu import EXPERIMENT_S, gpu

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
}
ALL_METHODS = ["attention", "attention_mean", "rollout", "norm", "relevancy", "flow", "saliency", "ixg", "ig", "loo",
               "attention_grad", "random"]
YIELD_EVERY_S = 1.0


def experiment_choices() -> list[tuple[str, str]]:
    return [(label, key) for key, label in EXPERIMENT_LABELS.items()]


def _load(workspace: Any, settings: Any, checkpoint: str | None) -> Any:
    from playground.bundle import cached_bundle

    if not checkpoint:
        raise PlaygroundError("Pick a checkpoint first (train one in the Train tab).")
    return cached_bundle(checkpoint, workspace, settings.resolved_device)


def module_update(workspace: Any, settings: Any, checkpoint: str | None) -> dict[str, Any]:
    """Choices of the attention module to intervene on for this checkpoint (last layer first)."""
    from playground.analysis.experiments_run import family_kind, module_choices

    if not checkpoint:
        return gr.update(choices=[], value=None)
    try:
        bundle = _load(workspace, settings, checkpoint)
        names = module_choices(bundle.model, family_kind(bundle.family))
    except PlaygroundError:
        return gr.update(choices=[], value=None)
    return gr.update(choices=names, value=names[0] if names else None)


def build_options(settings: Any, n: float, seed: float, module: str | None, heads: str, epsilon: str, n_perm: float,
                  steps: float, k: float, views: list[str], references: list[str], methods: list[str], level: str,
                  seeds: str, retrain_steps: float | None) -> Any:
    """Widget values -> ExperimentOptions (demo caps applied)."""
    from playground.analysis.experiments_run import ExperimentOptions, parse_heads, parse_ints

    caps = settings.caps
    n = int(n or 1)
    if caps.max_analysis_examples is not None:
        n = min(n, caps.max_analysis_examples)
    eps = None if epsilon in (None, "", "default") else float(epsilon)
    return ExperimentOptions(
        n=max(1, n), seed=int(seed or 0), module=module or None, heads=parse_heads(heads), n_perm=max(1, int(n_perm or 100)),
        k=max(1, int(k or 5)), epsilon=eps, steps=max(1, int(steps or 500)),
        views=tuple(views or ()), references=tuple(references or ()), methods=tuple(methods) if methods else None,
        level=level or "attention", seeds=parse_ints(seeds), retrain_steps=int(retrain_steps) if retrain_steps else None,
        device=settings.resolved_device, max_steps_cap=caps.max_train_steps,
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


def stats_table(result: Any) -> pd.DataFrame:
    """The small table shown under the chart: per-method / per-pair / per-variant numbers."""
    st = result.stats()
    for key in ("pairs", "methods"):
        if key in st:
            return pd.DataFrame(st[key]).round(4)
    if result.experiment == "uniform":
        return result.table().round(4)
    if result.experiment == "diagnostic":
        return result.to_frame().round(4)
    rows = []
    for key, value in st.items():
        if isinstance(value, dict) and "mean" in value:
            rows.append({"statistic": key, **{k: round(v, 5) if isinstance(v, float) else v for k, v in value.items()}})
        elif isinstance(value, (int, float)):
            rows.append({"statistic": key, "mean": value})
    return pd.DataFrame(rows)


def _render(result: Any, folder: Path, status: str) -> tuple[Any, ...]:
    from playground.analysis.experiments_summary import summarize
    from playground.charts.experiments import experiment_chart

    files = _write_files(result, folder)
    n_examples = len(result.extra.get("example_labels") or []) or result.n_done
    return (status, summarize(result).to_markdown(), experiment_chart(result), stats_table(result), files, files[1],
            gr.update(maximum=max(1, n_examples - 1)))


# On ZeroGPU the GPU is attached for the whole experiment. This handler, not iter_experiment, is the
# one decorated: spaces drops a generator's return value, and iter_experiment returns its result.
@gpu(duration=EXPERIMENT_S)
def run_experiment(workspace: Any, settings: Any, checkpoint: str | None, experiment: str, n: float, seed: float,
                   module: str | None, heads: str, epsilon: str, n_perm: float, steps: float, k: float,
                   views: list[str], references: list[str], methods: list[str], level: str, seeds: str,
                   retrain_steps: float | None, progress: Any = None):
    """Generator handler: yields (status, summary, chart, table, files, result_path, example slider) as it goes.

    Stopping (the Stop button cancels this generator) keeps the last yielded partial result on
    screen and in the download files.
    """
    from playground.analysis.experiments_core import Progress
    from playground.analysis.experiments_run import iter_experiment, private_copy

    if experiment not in EXPERIMENT_LABELS:
        raise PlaygroundError(f"Pick an experiment ({', '.join(EXPERIMENT_LABELS.values())}).")
    bundle = _load(workspace, settings, checkpoint)
    options = build_options(settings, n, seed, module, heads, epsilon, n_perm, steps, k, views, references, methods, level,
                            seeds, retrain_steps)
    import dataclasses

    private = dataclasses.replace(bundle, model=private_copy(bundle.model))  # captum hooks stay on our copy
    folder = download_dir("playground-experiment-")
    gen = iter_experiment(experiment, private, options, workspace, caps=settings.caps)
    last_yield = 0.0
    result = None
    t0 = time.perf_counter()
    while True:
        try:
            event: Progress = next(gen)
        except StopIteration as done:
            result = done.value
            break
        if progress is not None:
            progress(event.fraction, desc=event.message)
        if event.partial is not None:
            result = event.partial
        now = time.perf_counter()
        if result is not None and result.n_done and now - last_yield >= YIELD_EVERY_S:
            last_yield = now
            yield _render(result, folder, f"Running: {event.message} ({now - t0:.0f} s). Stop keeps what is finished.")
    if result is None:
        raise PlaygroundError("The experiment produced no result.")
    status = (f"Stopped after {result.examples_done} of {result.n_requested}; the numbers cover those." if result.stopped
              else f"Done: {result.examples_done} of {result.n_requested} in {time.perf_counter() - t0:.1f} s.")
    yield _render(result, folder, status)


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
        key = sorted(att, key=int)[0]
    entry = att[key]
    units = ((data.get("extra") or {}).get("units") or {}).get(key) or [str(i) for i in range(len(entry["original"]))]
    return attention_pair_chart(units, entry["original"], entry.get("adversarial"), entry.get("real"))


def retrain_uniform(workspace: Any, settings: Any, checkpoint: str | None, retrain_steps: float | None,
                    version: int, progress: Any = None):
    """Generator handler: retrain the checkpoint's preset with frozen uniform attention
    (``<checkpoint>-uniform``); yields (status, workspace version)."""
    from playground.analysis.experiments_run import ExperimentOptions, iter_retrain_uniform

    bundle = _load(workspace, settings, checkpoint)
    opts = ExperimentOptions(retrain_steps=int(retrain_steps) if retrain_steps else None,
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


def build(ctx: AppContext, checkpoint: gr.Dropdown | None = None) -> None:
    """Lay out the Experiments view inside the current container.

    ``checkpoint``: a checkpoint dropdown shared with the rest of the Analyze tab; without it
    the view makes its own (refreshed as ``/refresh_experiments_models``).
    """
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
    with gr.Row():
        n = gr.Slider(1, 500, value=50, step=1, label="Held-out examples",
                      info=f"capped at {st.caps.max_analysis_examples} on this server" if st.caps.max_analysis_examples else None)
        seed = gr.Number(value=0, precision=0, label="Seed (examples and every random choice)")
        module = gr.Dropdown(label="Attention module (layer)", choices=[], interactive=True, elem_id="exp-module")
        heads = gr.Textbox(value="all", label="Heads", info="'all' or e.g. 0,2")
    with gr.Accordion("Options", open=False):
        with gr.Row():
            epsilon = gr.Radio(["default", "0.01", "0.05"], value="default", label="ε (adversarial TVD bound)",
                               info="default: 0.01 for classifiers, 0.05 for next-token / seq2seq")
            n_perm = gr.Number(value=100, precision=0, label="Permutations per example", info=hint("max_permutations"))
            steps = gr.Number(value=500, precision=0, label="Adversarial Adam steps", info=hint("max_adversarial_steps"))
            k = gr.Number(value=5, precision=0, label="Adversaries per example (k)", info=hint("max_adversaries"))
        with gr.Row():
            views = gr.CheckboxGroup(["attention", "attention_mean", "rollout", "norm", "relevancy", "flow"],
                                     value=["attention", "attention_mean", "rollout", "norm"], label="Attention views (agreement)")
            references = gr.CheckboxGroup(["saliency", "ixg", "ig", "loo"], value=["saliency", "loo"],
                                          label="References (agreement)")
        with gr.Row():
            methods = gr.CheckboxGroup(ALL_METHODS, value=[], label="Rankings (erasure / AOPC / pointing; empty = defaults)")
            level = gr.Radio(["attention", "input"], value="attention", label="Erasure level",
                             info="attention: zero the weights and renormalise (S&S); input: replace by the baseline")
        with gr.Row():
            seeds = gr.Textbox(value="1,2", label="Extra training seeds (seed variance)", info=hint("max_extra_seeds"))
            retrain_steps = gr.Number(value=None, precision=0, label="Retrain steps (empty = the preset's)",
                                      info=hint("max_train_steps"))
    with gr.Row():
        run_btn = gr.Button("Run", variant="primary", elem_id="exp-run")
        stop_btn = gr.Button("Stop", variant="stop", elem_id="exp-stop")
        retrain_btn = gr.Button("Retrain a uniform-attention copy", elem_id="exp-retrain")
    status = gr.Markdown(elem_id="exp-status")
    summary = gr.Markdown(elem_id="exp-summary")
    chart = gr.Plot(label="Result", elem_id="exp-chart")
    table = gr.Dataframe(label="Numbers", interactive=False, elem_id="exp-table")
    files = gr.File(label="Download (CSV: one row per example; JSON: everything)", file_count="multiple",
                    interactive=False, elem_id="exp-files")
    with gr.Accordion("Jain & Wallace 2019, Table 2 (BiLSTM + additive attention), for scale", open=False):
        from playground.analysis.experiments_jw import jw_reference_frame

        gr.Dataframe(value=jw_reference_frame(), interactive=False)
    with gr.Row():
        example = gr.Slider(0, 49, value=0, step=1, label="Example (adversarial)", elem_id="exp-example")
        example_btn = gr.Button("Show original vs adversarial attention")
    example_chart = gr.Plot(label="One example", elem_id="exp-example-chart")
    result_path = gr.State(None)

    if own_dropdown:
        ctx.on_workspace_change(model_choices, [checkpoint], [checkpoint], api_name="experiments_models")
    checkpoint.change(ctx.per_user(module_update, st), [ctx.user, checkpoint], [module],
                      api_name="experiments_modules", queue=False)

    def _run(space, c, e, n_, s, m, h, eps, npm, stp, k_, v, r, meth, lv, sd, rs, progress=gr.Progress()):
        with ctx.jobs.claim(space.key, "experiment", e or "experiment", st.caps.max_experiments_per_user, "experiment"):
            yield from run_experiment(space, st, c, e, n_, s, m, h, eps, npm, stp, k_, v, r, meth, lv, sd, rs, progress)

    run_event = run_btn.click(ctx.notice("Experiment"), None, [status], queue=False, show_progress="hidden").then(
        ctx.per_user(_run), [ctx.user, checkpoint, experiment, n, seed, module, heads, epsilon, n_perm, steps, k, views, references, methods,
               level, seeds, retrain_steps],
        [status, summary, chart, table, files, result_path, example], api_name="experiments_run", **ctx.heavy())

    def _retrain(space, c, rs, version, progress=gr.Progress()):
        with ctx.jobs.claim(space.key, "experiment", f"retrain {c}", st.caps.max_experiments_per_user, "experiment"):
            yield from retrain_uniform(space, st, c, rs, version, progress)

    retrain_event = retrain_btn.click(ctx.notice("Retrain"), None, [status], queue=False, show_progress="hidden").then(
        ctx.per_user(_retrain), [ctx.user, checkpoint, retrain_steps, ctx.workspace_version],
                                      [status, ctx.workspace_version], api_name="experiments_retrain_uniform", **ctx.heavy())
    ctx.reset_on_failure(run_event, status, "Not run: see the message above.")
    ctx.reset_on_failure(retrain_event, status, "Not retrained: see the message above.")
    stop_btn.click(lambda: "Stopped: the numbers above cover the finished examples.", None, [status],
                   cancels=[run_event, retrain_event], api_name="experiments_stop", queue=False)
    example_btn.click(user_errors(show_example), [result_path, example], [example_chart], api_name="experiments_example")
