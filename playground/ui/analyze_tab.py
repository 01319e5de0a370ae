"""Analyze tab: did attention explain this prediction?

Layout: the checkpoint dropdown on top, then sub-tabs: "Per input" (this module) and
"Experiments" (`playground/ui/experiments_view.py`'s `build(ctx, checkpoint, tab)`).

Per input: choose the input (a prompt, an image or a validation sample, a source sentence)
and the target; every chosen method is drawn over the input side by side (token strips,
patch grids over the image, output x source matrices for seq2seq); the agreement table of
every pair; the layer x head grid with each head's entropy; the pointing game on vit-shapes
samples; CSV/JSON export. A target picked in the Generate tab arrives through ctx.selection.

Handlers are module-level functions (tests call them directly); `build` binds the workspace
and device with functools.partial.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gradio as gr

from playground.analysis.explainer import FamilyExplainer
from playground.analysis.numerics import FLOAT64_MAX_PARAMETERS
from playground.errors import PlaygroundError
from playground.families import get_family
from playground.scratch import download_dir
from playground.screen_memory import recall, remember, text_field
from playground.ui import (
    causal_view,
    compare_models,
    coverage_view,
    experiments_view,
    gpu_calls,
    heads_view,
)
from playground.ui.components import Chart, ReadableImage, Slider
from playground.ui.context import AppContext, first_on_page, model_choices, text_hint
from playground.ui.tables import Table
from playground.ui.updates import Updates
from playground.workspace import Workspace

# Explain's click, in the browser: the summary line (under the Explain and Stop buttons, where the
# progress bar and then the summary show) says the analysis started, and the page scrolls the
# buttons up to the top of the window, so that the results below the form come into view on a
# laptop (gradio's scroll_to_output does not scroll in this version of its frontend).
EXPLAIN_JS = """() => {
  const buttons = document.getElementById('analyze-run');
  const top = buttons ? buttons.getBoundingClientRect().top : 0;
  if (top > 16) {
    window.scrollTo({top: top + window.scrollY - 8, behavior: 'smooth'});  // Explain and Stop stay in view
  }
  return 'Explaining… (the progress bar here shows how far)';
}"""

PUBLISHED = """Jain & Wallace (2019), Table 2, BiLSTM + additive attention: mean Kendall τ (share of
instances with p ≤ 0.05). Gradients and leave-one-out agree with each other more than either agrees with attention.

| dataset | τ(α, grad) | τ(α, LOO) | τ(grad, LOO) |
|---|---|---|---|
| SST | 0.35 ± 0.21 (0.49) | 0.29 ± 0.19 (0.36) | 0.66 |
| IMDB | 0.44 ± 0.06 (1.00) | 0.34 ± 0.07 (0.99) | 0.52 |
| AG News | 0.39 ± 0.13 (0.86) | 0.37 ± 0.15 (0.80) | 0.61 |
| 20News | 0.13 ± 0.21 (0.48) | 0.12 ± 0.19 (0.44) | 0.53 |
| SNLI | 0.31 ± 0.22 (0.37) | 0.29 ± 0.24 (0.35) | 0.24 |
"""


def _explainer(workspace: Workspace, checkpoint: str) -> FamilyExplainer:
    """The explainer of a workspace checkpoint's family."""
    return get_family(workspace.get("models", checkpoint).meta.get("family", "")).explainer


def _int_or_none(value: Any) -> int | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise PlaygroundError(f"{value!r} is not a whole number.") from None


def checkpoint_view(workspace: Workspace, checkpoint: str | None) -> dict[str, Any]:
    """What the per-input controls should offer for a checkpoint (pure; no model is built)."""
    from playground.analysis.explain.per_input import DEFAULT_METHODS, supported_methods
    from playground.analysis.inputs import data_samples

    if not checkpoint:
        return {"kind": None, "family": None, "classes": [], "samples": [], "methods": [], "defaults": []}
    entry = workspace.get("models", checkpoint)
    family = entry.meta.get("family", "")
    spec = get_family(family)
    config = entry.meta.get("model")
    # Only what this model can compute is offered (a J&W text classifier has nothing to roll out).
    methods = supported_methods(family, spec.config_cls.from_dict(config) if isinstance(config, dict) else None)
    samples = data_samples(entry.meta, family, n=50) if spec.explainer.view.offers_samples else []
    return {"kind": spec.kind, "family": family, "classes": list(entry.meta.get("class_names") or []),
            "samples": [(f"{i}: {s.label}", i) for i, s in enumerate(samples)], "methods": methods,
            "defaults": [m for m in DEFAULT_METHODS if m in methods]}


@dataclass(frozen=True)
class Explanation(Updates):
    """An explanation as the tab shows it (or cleared: nothing of a previous one stays)."""

    summary: Any
    importance: Any  # importance per method (chart)
    agreement: Any  # table, hidden until there is one (an empty table shows placeholder headers)
    grounding: Any  # pointing game / alignment accuracy table, where the family has ground truth
    heads: Any  # layer x head grid (chart)
    files: Any  # CSV / JSON downloads

    @classmethod
    def cleared(cls) -> Explanation:
        hidden = gr.update(value=None, visible=False)
        return cls("", None, hidden, hidden, None, None)


@dataclass(frozen=True)
class CheckpointControls(Updates):
    """The input controls as a checkpoint's family reads them, and the explanation cleared."""

    about: Any
    text: Any
    image: Any
    sample: Any
    position: Any
    target: Any
    methods: Any
    explanation: Explanation


@dataclass(frozen=True)
class Selection(Updates):
    """A target picked in the Generate tab: the checkpoint, the hand-off, and its controls."""

    checkpoint: Any
    handoff: Any
    controls: CheckpointControls


def checkpoint_changed(workspace: Workspace, checkpoint: str | None, handoff: dict | None = None) -> CheckpointControls:
    """The controls when the checkpoint changes, with the previous model's explanation cleared.
    A `handoff` from the Generate tab for this checkpoint fills the input and the target."""
    view = checkpoint_view(workspace, checkpoint)
    if view["kind"] is None:
        keep = gr.update()
        return CheckpointControls(gr.update(value="Choose a checkpoint (train one in the Train tab)."), keep, keep,
                                  keep, keep, keep, keep, Explanation.cleared())
    reads = get_family(view["family"]).explainer.view
    about = f"{reads.about}  \nFamily `{view['family']}`."
    handed = handoff if handoff and handoff.get("checkpoint") == checkpoint else None
    target_choices: list[Any] = list(view["classes"])
    text = gr.update(visible=not reads.reads_image, label=reads.text_label)
    image = gr.update(visible=reads.reads_image)
    position, target = "", None
    if handed:
        about += f"  \n**From the Generate tab:** {handed['note']}"
        if reads.reads_image:
            image = gr.update(visible=True, value=handed.get("image"))
        else:
            text = gr.update(visible=True, label=reads.text_label, value=handed.get("text", ""))
        position = handed.get("position", "")
        target = handed.get("target")
        if handed.get("target_choice") and handed["target_choice"][1] not in [c if isinstance(c, str) else c[1]
                                                                              for c in target_choices]:
            target_choices.append(tuple(handed["target_choice"]))
    return CheckpointControls(
        about=gr.update(value=about),
        text=text,
        image=image,
        sample=gr.update(visible=bool(view["samples"]), choices=view["samples"], value=None),
        position=gr.update(visible=not reads.reads_image, label=reads.position_label, value=position),
        target=gr.update(visible=reads.picks_target, choices=target_choices, value=target, label=reads.target_label),
        methods=gr.update(choices=view["methods"], value=view["defaults"]),
        explanation=Explanation.cleared(),
    )


def checkpoint_switched(workspace: Workspace, checkpoint: str | None, handoff: dict | None = None) -> CheckpointControls:
    """`checkpoint_changed` for the dropdown's change event. When the change comes from a hand-off
    (Generate's "Explain in Analyze" sets the checkpoint), the explanation it started is kept:
    `from_selection` has already cleared the old one."""
    controls = checkpoint_changed(workspace, checkpoint, handoff)
    if handoff and handoff.get("checkpoint") == checkpoint:
        return dataclasses.replace(controls, explanation=Explanation(*[gr.skip()] * 6))
    return controls


def explain_handoff(run: Callable[..., Explanation]) -> Callable[..., Explanation]:
    """The Explain handler for a hand-off from the Generate tab: `run` when a target was handed
    over (the hand-off state is its second-to-last input), nothing otherwise."""
    def run_handed(space: Any, *args: Any, progress: Any = None) -> Explanation:
        handed = args[-2]
        if not (handed and handed.get("checkpoint") == args[0]):
            return Explanation(*[gr.skip()] * 6)
        return run(space, *args, progress=progress)

    run_handed.__name__ = "analyze_handoff"
    return run_handed


def handoff_of(workspace: Workspace, selection: dict | None) -> dict | None:
    """What the Analyze tab takes from a target picked in the Generate tab: the checkpoint, the
    input (text and ids, or the image), the target as the tab's controls hold it, and a note
    naming the target the way a person reads it (the token or the class name, not an id)."""
    if not selection or not selection.get("checkpoint"):
        return None
    out: dict[str, Any] = {"checkpoint": selection["checkpoint"], "kind": selection.get("kind")}
    explainer = _explainer(workspace, selection["checkpoint"])
    out.update(explainer.handoff(selection, selection.get("target_token")))
    return out


def from_selection(workspace: Workspace, selection: dict | None) -> Selection:
    """Prefill everything from a target picked in the Generate tab: the checkpoint, the hand-off,
    then what `checkpoint_changed` gives for it (nothing changes without a pick)."""
    handoff = handoff_of(workspace, selection)
    if handoff is None:
        skip = gr.skip()
        return Selection(skip, skip, CheckpointControls(*[skip] * 7, Explanation(*[skip] * 6)))
    return Selection(gr.update(value=handoff["checkpoint"]), handoff,
                     checkpoint_changed(workspace, handoff["checkpoint"], handoff))


def _export(result: Any) -> list[str]:
    """Write everything shown to a fresh temp folder: importances, agreement, heads, grounding (CSV) and JSON."""
    from playground.charts.analysis import head_frame

    folder = download_dir("playground-analyze-")
    files = [folder / "importances.csv", folder / "agreement.csv", folder / "analysis.json"]
    result.to_frame().to_csv(files[0], index=False)
    result.agreement.to_csv(files[1], index=False)
    files[2].write_text(result.to_json(), encoding="utf-8")
    if result.heads is not None:
        files.append(folder / "heads.csv")
        head_frame(result.heads).to_csv(files[-1], index=False)
    for name, df in (("pointing.csv", result.pointing), ("alignment.csv", result.alignment)):
        if df is not None:
            files.append(folder / name)
            df.to_csv(files[-1], index=False)
    return [str(f) for f in files]


def importance_chart(result: Any):
    """The side-by-side view of every method over the input (the family draws it: token strips,
    patch grids over the image, output x source matrices)."""
    return result.prepared.query.explainer.importance_chart(result)


def summary_markdown(result: Any) -> str:
    """Prediction, target, IG completeness and notes, as Markdown."""
    p = result.prepared
    lines = [f"**Target** `{p.target_label}` (id {p.target_id}) · **predicted** `{p.predicted_label}`"]
    if "target_prob" in p.info:
        lines[0] += f" · p(target) = {p.info['target_prob']:.4f}"
    lines += p.query.explainer.summary_lines(p)
    if result.ig:
        d, s = result.ig, p.selected
        ok = "within" if d["converged"][s] else "**above**"
        lines.append(f"Integrated gradients: {d['steps'][s]} steps, completeness gap δ = {d['delta'][s]:+.2e}, "
                     f"{ok} the tolerance {d['tolerance'][s]:.1e} (5% of |F(x) − F(x′)| = "
                     f"|{d['f_input'][s]:.3f} − {d['f_baseline'][s]:.3f}|).")
    if result.deeplift:
        lines.append(f"DeepLift is experimental: its completeness gap here is δ = "
                     f"{result.deeplift['delta'][p.selected]:+.2e}.")
    lines += [f"- {n}" for n in result.notes]
    if result.notes:
        lines.append("")  # a blank line ends the list: the times are no part of its last note
    lines.append("Time: " + ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in result.timings.items()))
    return "  \n".join(lines)


def grounding_label(result: Any) -> str:
    """The grounding table's title for what this result holds (the pointing game names its ground
    truth, as the model's family calls it), never another family's."""
    if result.pointing is not None:
        truth = result.prepared.query.explainer.truth_terms
        return f"Grounding: pointing game (does the top {truth['unit']} fall on {truth['truth']}?)"
    return "Grounding: alignment accuracy (does the strongest attention fall on the aligned source word?)"


def run_analysis(workspace: Workspace, device: str, checkpoint: str | None, text: str | None, image: Any,
                 sample: Any, position: Any, target: Any, methods: list[str] | None, layer: Any, head: Any,
                 ig_steps: Any, ig_auto: bool, handoff: dict | None = None,
                 progress: gr.Progress | None = None, max_ig_steps: int | None = None,
                 caps: Any = None, float64: bool = False, zerogpu: bool = False) -> Explanation:
    """Run the per-input analysis and show it.

    `max_ig_steps` (a shared server's cap) bounds integrated gradients' steps, the auto-raise included;
    `caps` (default FULL_CAPS) bounds the text's length; `float64` runs every method on a float64
    copy of the model (AnalysisOptions.float64, the CLI's --float64; small models only); `zerogpu`
    runs it as a ZeroGPU call (playground.ui.gpu_calls)."""
    from playground.analysis.explain.attributions import MAX_STEPS
    from playground.analysis.explain.per_input import (
        AnalysisOptions,
        InputSpec,
        analyze_checkpoint,
    )
    from playground.bundle import cached_bundle
    from playground.charts.analysis import head_frame, head_grid_chart
    from playground.limits import check_text

    if not checkpoint:
        raise PlaygroundError("Choose a checkpoint first.")
    if not methods:
        raise PlaygroundError("Tick at least one method.")
    check_text(text or "", "max_prompt_chars", caps, "The text")
    bundle = cached_bundle(checkpoint, workspace, device)
    spec = InputSpec(text=text or None, image=image, sample=_int_or_none(sample), position=_int_or_none(position),
                     target=(target or None) if not isinstance(target, (int, float)) else int(target))
    if handoff and handoff.get("checkpoint") == checkpoint and handoff.get("text") == (text or "") \
            and sample in (None, ""):
        spec.ids = handoff.get("ids")
        spec.output_ids = handoff.get("output_ids")
        if spec.ids is not None:
            spec.text = text or ""
    ig_max = min(MAX_STEPS, max_ig_steps or MAX_STEPS)
    options = AnalysisOptions(methods=tuple(methods), layer=_int_or_none(layer), head=_int_or_none(head),
                              ig_steps=min(int(ig_steps or 50), ig_max), ig_auto=bool(ig_auto), ig_max_steps=ig_max,
                              float64=bool(float64))
    report = (lambda frac, name: progress(frac, desc=f"computing {name}")) if progress is not None else None
    if zerogpu:  # a decorated call from this thread; the bundle is loaded inside it (nothing unpicklable crosses)
        result = gpu_calls.analyze(workspace, checkpoint, spec, options)
    else:
        result = analyze_checkpoint(bundle, spec, options, device=device, private=True, progress=report)
    remember(workspace.root, "analyze", {
        "model": checkpoint, "text": text or "", "sample": sample, "position": position, "target": target,
        "methods": list(methods), "layer": layer, "head": head, "ig_steps": ig_steps, "ig_auto": bool(ig_auto),
        "float64": bool(float64)})
    grounding = result.pointing if result.pointing is not None else result.alignment
    heads = None
    if result.heads is not None:
        heads = head_grid_chart(head_frame(result.heads), result.heads.maps.shape[1])
    return Explanation(
        summary=summary_markdown(result),
        importance=importance_chart(result),
        agreement=gr.update(value=result.agreement.round(4), visible=True),
        grounding=gr.update(value=None if grounding is None else grounding.round(4), visible=grounding is not None,
                            label=grounding_label(result)),
        heads=heads,
        files=_export(result),
    )


# The per-input choices `remember` keeps, in the order restore_choice answers them.
CHOICES = ("text", "sample", "position", "target", "methods", "layer", "head", "ig_steps", "ig_auto", "float64")
RESTORED_NOTE = ("Your last analysis of this checkpoint is back in the form (input, target, methods and options): "
                 "press **Explain** to see it again.")


def analyses_models(workspace: Workspace, current: str | None) -> dict[str, Any]:
    """The checkpoint dropdown's update; a page that opens again starts on the last analysed model."""
    return model_choices(workspace, current, text_field(recall(workspace.root, "analyze"), "model") or None)


def restore_choice(workspace: Workspace, pending: dict[str, Any] | None) -> tuple[Any, ...]:
    """When the page's first checkpoint is the one the user last analysed, put that analysis'
    choices back into the form (each checked against what this checkpoint offers now) with a line
    saying so; the analysis itself is not re-run (seconds of a shared server's CPU for a reload).

    Outputs: the CHOICES components, then the summary (all gr.skip() when there is nothing to bring back)."""
    skip_all = (gr.skip(),) * (len(CHOICES) + 1)
    name = pending.get("model") if isinstance(pending, dict) else None
    last = recall(workspace.root, "analyze")
    if not name or text_field(last, "model") != name:
        return skip_all
    view = checkpoint_view(workspace, name)
    if view["kind"] is None:
        return skip_all
    plain = {k: last.get(k) for k in CHOICES}
    methods = [m for m in (plain["methods"] or []) if m in view["methods"]] or view["defaults"]
    sample_ids = [value for _, value in view["samples"]]
    shown = {
        "text": text_field(last, "text"),
        "sample": plain["sample"] if plain["sample"] in sample_ids else None,
        "position": text_field(last, "position"),
        "target": plain["target"] if isinstance(plain["target"], (str, int)) else None,
        "methods": methods,
        "layer": text_field(last, "layer"),
        "head": text_field(last, "head"),
        "ig_steps": plain["ig_steps"] if isinstance(plain["ig_steps"], (int, float)) else gr.skip(),
        "ig_auto": plain["ig_auto"] if isinstance(plain["ig_auto"], bool) else gr.skip(),
        "float64": plain["float64"] if isinstance(plain["float64"], bool) else gr.skip(),
    }
    return (*(shown[k] for k in CHOICES), RESTORED_NOTE)


def build(ctx: AppContext) -> None:
    """Lay out the Analyze tab."""
    device = ctx.settings.resolved_device
    with gr.Row():
        checkpoint = gr.Dropdown(label="Checkpoint", choices=[], interactive=True, elem_id="analyze-model", scale=2)
        about = gr.Markdown("Choose a checkpoint (train one in the Train tab).", elem_id="analyze-about")
    ctx.on_workspace_change(analyses_models, [checkpoint], [checkpoint], api_name="analyze_models")
    with gr.Tabs(elem_id="analyze-views"):
        with gr.Tab("Per input", id="analyze-per-input", elem_id="analyze-per-input"):
            _build_per_input(ctx, device, checkpoint, about)
        with gr.Tab("Experiments", id="analyze-experiments", elem_id="analyze-experiments") as experiments_tab:
            experiments_view.build(ctx, checkpoint, experiments_tab)  # shares the checkpoint dropdown
    heads_view.build(ctx, device, checkpoint)  # the Heads accordion, under both sub-tabs
    causal_view.build(ctx, device, checkpoint)  # activation patching, attribution patching, logit lens (GPT)
    coverage_view.build(ctx, device, checkpoint)  # repeated/dropped source words (seq2seq)
    compare_models.build_analyze(ctx, device, checkpoint)  # a second model beside this one


def _build_per_input(ctx: AppContext, device: str, checkpoint: gr.Dropdown, about: gr.Markdown) -> None:
    from playground.analysis.explain.per_input import DEFAULT_METHODS, METHODS

    handoff = gr.State(None)
    with gr.Row():
        with gr.Column(scale=3):
            text = gr.Textbox(label="Text prompt", lines=3, elem_id="analyze-text", info=text_hint(ctx, "max_prompt_chars"))
            image = ReadableImage(label="Image", type="numpy", visible=False, elem_id="analyze-image", height=220)
            sample = gr.Dropdown(label="…or a sample from the checkpoint's validation data", choices=[], value=None,
                                 visible=False, elem_id="analyze-sample")
            # Under the input, inside a laptop's window (the methods' list makes the right column long).
            with gr.Row():
                run_btn = gr.Button("Explain", variant="primary", elem_id="analyze-run")
                stop_btn = gr.Button("Stop", elem_id="analyze-stop")
            summary = gr.Markdown(elem_id="analyze-summary")
        with gr.Column(scale=2):
            position = gr.Textbox(label="Query position (token index; blank = last)", value="", max_lines=1,
                                  elem_id="analyze-position")
            target = gr.Dropdown(label="Target token (blank = prediction; #id for an id)", choices=[], value=None,
                                 allow_custom_value=True, elem_id="analyze-target")
            methods = gr.CheckboxGroup(label="Methods", choices=list(METHODS), value=list(DEFAULT_METHODS),
                                       elem_id="analyze-methods")
            with gr.Accordion("Options", open=False):
                layer = gr.Textbox(label="Layer of 'attention' and 'norm' (blank = last)", value="", max_lines=1)
                head = gr.Textbox(label="Head (blank = mean over heads)", value="", max_lines=1)
                ig_cap = ctx.settings.caps.max_ig_steps
                ig_steps = Slider(4, min(400, ig_cap or 400), value=50, step=1,
                                     label="Integrated-gradients steps (start)",
                                     info=f"at most {ig_cap} on this server, the auto-raise included" if ig_cap else None)
                ig_auto = gr.Checkbox(value=True, label="Raise IG steps until |δ| ≤ 5% of |F(x) − F(x′)|")
                float64 = gr.Checkbox(value=False, label="Double precision (float64)", elem_id="analyze-float64",
                                      info=f"for a saturated output (1 − p near float32's resolution): every method "
                                           f"runs on a float64 copy; models up to {FLOAT64_MAX_PARAMETERS:,} parameters")
                gr.Markdown("Methods: " + "; ".join(f"`{k}` {v}" for k, v in METHODS.items()))
    importance = Chart(label="Importance per method", elem_id="analyze-importance")
    agreement = Table(label="Agreement between every pair of methods (special tokens excluded)",
                      visible=False, elem_id="analyze-agreement", interactive=False)
    with gr.Accordion("Published numbers to compare with", open=False):
        gr.Markdown(PUBLISHED)
    grounding = Table(label="Grounding",
                             visible=False, interactive=False, elem_id="analyze-grounding")
    heads = Chart(label="Layer x head: attention maps and entropy", elem_id="analyze-heads")
    files = gr.File(label="Export: CSV and JSON of everything shown", file_count="multiple", elem_id="analyze-files")

    shown = Explanation.wire(summary=summary, importance=importance, agreement=agreement, grounding=grounding,
                             heads=heads, files=files)
    controls = CheckpointControls.wire(about=about, text=text, image=image, sample=sample, position=position,
                                       target=target, methods=methods, explanation=shown)
    restored, pending = gr.State(False), gr.State(None)  # once per page: the last analysis' choices come back
    checkpoint.change(ctx.per_user(checkpoint_switched), [ctx.user, checkpoint, handoff], controls,
                      api_name="analyze_checkpoint", queue=False, show_progress="hidden").then(
        first_on_page, [restored, checkpoint], [restored, pending], queue=False, show_progress="hidden",
        api_visibility="private")
    pending.change(ctx.per_user(restore_choice), [ctx.user, pending],
                   [text, sample, position, target, methods, layer, head, ig_steps, ig_auto, float64, summary],
                   queue=False, show_progress="hidden", api_visibility="undocumented")
    image.upload(lambda: gr.update(value=None), None, [sample], queue=False, show_progress="hidden",
                 api_visibility="private")

    def _run(space, checkpoint, text, image, sample, position, target, methods, layer, head, ig_steps, ig_auto, handoff,
             f64=False, progress=gr.Progress()):  # noqa: B008 - gradio finds its tracker by this default
        return run_analysis(space, device, checkpoint, text, image, sample, position, target, methods, layer, head,
                            ig_steps, ig_auto, handoff, progress, max_ig_steps=ctx.settings.caps.max_ig_steps,
                            caps=ctx.settings.caps, float64=bool(f64), zerogpu=ctx.settings.zerogpu)

    run_inputs = [ctx.user, checkpoint, text, image, sample, position, target, methods, layer, head, ig_steps, ig_auto,
                  handoff, float64]
    event = run_btn.click(None, None, [summary], js=EXPLAIN_JS, queue=False, show_progress="hidden").then(
        ctx.per_user(_run), run_inputs, shown, api_name="analyze", **ctx.analysis())
    # "Explain in Analyze" (Generate) fills the form and explains the picked target at once: the
    # student asked for an explanation, not for a form to finish (issue #30).
    handed = ctx.selection.change(ctx.per_user(from_selection), [ctx.user, ctx.selection],
                                  Selection.wire(checkpoint=checkpoint, handoff=handoff, controls=controls),
                                  api_name="analyze_from_selection", queue=False,
                                  show_progress="hidden").success(
        None, None, [summary], js=EXPLAIN_JS, queue=False, show_progress="hidden").then(
        ctx.per_user(explain_handoff(_run)), run_inputs, shown, api_visibility="undocumented", **ctx.analysis())
    stop_btn.click(None, None, None, cancels=[event, handed], api_visibility="private")
