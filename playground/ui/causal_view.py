"""Analyze tab, "Causal" accordion: activation patching on one clean / corrupted pair, its
attribution-patching estimate beside it, and the logit lens.

``run_causal_view`` is module-level (tests call it directly); ``build(ctx, device, checkpoint)``
lays the accordion out under the tab's checkpoint dropdown, in the analysis lane.
"""
from __future__ import annotations

from typing import Any

import gradio as gr
import pandas as pd

from playground.errors import PlaygroundError
from playground.ui.components import Chart
from playground.ui.context import AppContext
from playground.ui.tables import Table
from playground.workspace import Workspace

SOURCES = [("Typed pair", "typed"), ("IOI names (template)", "ioi"), ("Dates (one digit changed)", "dates"),
           ("Induction (random tokens repeated)", "induction")]
ABOUT = ("Run a **clean** input and a **corrupted** one of the same length, then copy one activation from one run "
         "into the other. **Denoising** puts the clean activation into the corrupted run: a cell near 1 carries what "
         "the answer needs. **Noising** puts the corrupted activation into the clean run: a cell near 0 is one the "
         "answer cannot do without. Effect = (patched − corrupted) / (clean − corrupted). Beside each grid, "
         "**attribution patching** estimates the same cells from one gradient. The **logit lens** reads the answer's "
         "rank after each layer. More: docs/causal.md.")


def run_causal_view(workspace: Workspace, device: str, checkpoint: str | None, source: str, clean: str,
                    corrupted: str, grids: list[str], direction: str, caps: Any = None,
                    progress: Any = None) -> tuple[str, Any, Any, Any, Any]:
    """(summary Markdown, heatmaps, agreement table, logit-lens table, CSV/JSON files)."""
    from playground.analysis.causal.pairs import make_pair
    from playground.analysis.causal.patching import Eta
    from playground.analysis.causal.report import run_causal
    from playground.analysis.inputs import token_label
    from playground.bundle import cached_bundle
    from playground.charts.causal import patching_chart
    from playground.scratch import download_dir

    if not checkpoint:
        raise PlaygroundError("Choose a checkpoint first.")
    bundle = cached_bundle(checkpoint, workspace, device)
    if not (hasattr(bundle.model, "blocks") and hasattr(bundle.model, "lm_head")):  # a decoder LM, not a classifier
        raise PlaygroundError("Activation patching here needs a GPT checkpoint (the logit lens of BERT is in the CLI: "
                              "python -m playground lens).")
    pair = make_pair(bundle.model, bundle.tokenizer, None if source == "typed" else source, clean or "",
                     corrupted or "", device=device)

    eta = Eta()

    def step(done: int, total: int) -> None:
        if progress is not None:
            progress(done / max(1, total), desc=eta(done, total))

    report = run_causal(bundle.model, pair, grids or ["resid"], (direction,), caps=caps,
                        label=lambda i: token_label(bundle.tokenizer, i), progress=step)
    first = next(iter(report.grids[direction].values()))
    agree = report.agreement(direction)
    worst = report.breaks(direction)[:3]
    lines = [f"**{pair.description}** — clean {first.clean:.3f}, corrupted {first.corrupted:.3f} ({first.metric}).",
             f"Clean: `{''.join(pair.tokens)}`  \nCorrupted: `{''.join(pair.corrupted_tokens)}`"]
    if not agree.empty:
        lines.append("Attribution vs patching, Pearson r per grid: " + ", ".join(
            f"{r.grid} {r.pearson:.2f}" for r in agree.itertuples()) + ".")
    if worst:
        lines.append("Where the linear estimate breaks (|difference| > 0.2 in effect): " + "; ".join(
            f"{b['grid']} {b['layer']} {b['col']} (patching {b['patching']:.2f}, estimate {b['attribution']:.2f})"
            for b in worst) + ".")
    lens_rows = [{"input": name, "layer": layer, "answer rank": int(r), "answer p": float(p),
                  "top tokens": " ".join(repr(t) for t in tops[:3])}
                 for name, lens in report.lens.items()
                 for layer, r, p, tops in zip(lens.layers, lens.target_rank, lens.target_prob, lens.top_labels)]
    folder = download_dir("causal-")
    files = [str(report.save(folder / f"patching-{checkpoint}.csv")), str(report.save(folder / f"patching-{checkpoint}.json"))]
    return ("\n\n".join(lines), patching_chart(report.grids[direction], report.attribution.get(direction)), agree,
            pd.DataFrame(lens_rows), files)


def build(ctx: AppContext, device: str, checkpoint: gr.Dropdown) -> None:
    """The "Causal" accordion: the pair, grids and direction; heatmaps, agreement, lens, files."""
    with gr.Accordion("Causal: activation patching, attribution patching, logit lens (GPT)", open=False,
                      elem_id="analyze-causal-accordion"):
        gr.Markdown(ABOUT)
        with gr.Row():
            source = gr.Radio(SOURCES, value="typed", label="Pair")
            grids = gr.CheckboxGroup([("residual stream", "resid"), ("attention out", "attn"), ("MLP out", "mlp"),
                                      ("heads", "heads")], value=["resid", "heads"], label="Grids")
            direction = gr.Radio([("denoising (clean → corrupted)", "denoise"), ("noising (corrupted → clean)", "noise")],
                                 value="denoise", label="Direction")
        with gr.Row():
            clean = gr.Textbox(label="Clean input", value="self.name = name\nself.n", lines=2)
            corrupted = gr.Textbox(label="Corrupted input (same number of tokens)", value="self.size = size\nself.s",
                                   lines=2)
        run_btn = gr.Button("Patch", variant="primary", elem_id="analyze-causal-run")
        summary = gr.Markdown(elem_id="analyze-causal-summary")
        chart = Chart(label="Normalised effect (0 = corrupted, 1 = clean)", elem_id="analyze-causal-chart")
        agree = Table(label="Attribution patching vs patching", elem_id="analyze-causal-agreement")
        lens = Table(label="Logit lens: the answer's rank after each layer", elem_id="analyze-causal-lens")
        files = gr.File(label="Every grid (CSV, JSON)", file_count="multiple")

    def _run(space, checkpoint, source, clean, corrupted, grids, direction, progress=gr.Progress()):  # noqa: B008 - gradio injects it
        return run_causal_view(space, device, checkpoint, source, clean, corrupted, grids, direction,
                               ctx.settings.caps, progress)

    inputs = [ctx.user, checkpoint, source, clean, corrupted, grids, direction]
    outputs = [summary, chart, agree, lens, files]
    run_btn.click(ctx.per_user(_run), inputs, outputs, api_name="analyze_causal", **ctx.analysis())
    direction.change(ctx.per_user(_run), inputs, outputs, api_name="analyze_causal_direction", **ctx.analysis())
