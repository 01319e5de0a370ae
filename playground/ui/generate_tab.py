"""Generate tab: sample from GPT checkpoints, translate with seq2seq ones, classify with ViT.

Layout and wiring only; the work is done by `playground.generation` (decoders, filters,
distribution table, rendering) and `playground.charts.generation` (charts). Per-user state is
one gr.State holding the last result (tokens and probabilities, no model).
"""
from __future__ import annotations

import dataclasses
import inspect
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import gradio as gr
import pandas as pd

from playground.errors import PlaygroundError
from playground.limits import cap
from playground.scratch import download_dir
from playground.screen_memory import number_field, recall, remember, text_field
from playground.ui import compare_models, gpu_calls
from playground.ui.components import Chart, ReadableImage, Slider
from playground.ui.context import AppContext, first_on_page, model_choices, text_hint, user_errors
from playground.ui.tab_switch import click_tab_js
from playground.ui.tables import Table
from playground.ui.updates import Updates

log = logging.getLogger("playground.generate")

MAX_SAMPLES = 8
DEFAULT_MAX_NEW = 200
HARD_MAX_NEW = 2000
STREAM_EVERY_S = 0.25
STREAM_CROWD = 4  # above this many generations of one model, partial outputs come less often
DIST_TOP = 25
NO_MODEL = "Choose a checkpoint (train one in the Train tab first)."


@dataclass(frozen=True)
class Env:
    """What the handlers need from the app: the user's space, device, this server's caps."""

    workspace: Any
    device: str
    max_new_tokens: int | None
    caps: Any = None  # this server's DemoCaps (prompt length, seed, ...); None = FULL_CAPS
    zerogpu: bool = False  # generate per request in a ZeroGPU call (playground.ui.gpu_calls), not batched


def _bundle(env: Env, name: str | None):
    from playground.bundle import cached_bundle

    if not name:
        raise PlaygroundError(NO_MODEL)
    return cached_bundle(name, env.workspace, env.device)


def _generator(bundle):
    """The bundle family's FamilyGenerator: which inputs and controls apply, how a run goes."""
    from playground.generation.api import generator_of

    return generator_of(bundle)


def metric_text(value: Any) -> str:
    """A metric as a person reads it: 4 significant digits, thousands in full with separators
    (18,512 tokens/s, not 1.851e+04)."""
    if isinstance(value, float) and abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def describe(bundle) -> str:
    """One line about a checkpoint: family, size, training step, metrics."""
    cfg = bundle.model_config
    size = []
    for key in ("n_layer", "n_encoder_layers", "n_decoder_layers", "n_head", "d_model", "hidden", "block_size",
                "max_len", "image_size", "vocab_size", "n_classes"):
        if hasattr(cfg, key):
            size.append(f"{key} {getattr(cfg, key)}")
    metrics = bundle.config.get("metrics") or {}
    shown = ", ".join(f"{k} {metric_text(v)}" for k, v in list(metrics.items())[:3])
    what = _generator(bundle).controls.hint
    params = bundle.model.num_parameters() if hasattr(bundle.model, "num_parameters") else None
    return (f"**{bundle.name}** — {bundle.family} · {' · '.join(size)}"
            + (f" · {params:,} parameters" if params else "")
            + f" · step {bundle.config.get('step', 0)}" + (f" · {shown}" if shown else "") + f"\n\n{what}")


# ---------------------------------------------------------------------------------------------
# handlers (module level so tests can call them; `build` binds `env`)


def refresh_models(env: Env, current: str | None):
    """Dropdown update with the workspace's models (keeps the current choice); a page that opens
    again starts on the model of the user's last generation."""
    return model_choices(env.workspace, current, text_field(recall(env.workspace.root, "generate"), "model") or None)


# The inputs of a generation, in generate_text's order after the model (what `remember` keeps).
RUN_KNOBS = ("prompt", "temperature", "top_k", "top_p", "min_p", "rep", "freq", "pres", "max_new", "seed_box",
             "num_samples", "stop", "beam_width", "length_penalty", "context")


def restore_generation(env: Env, pending: dict[str, Any] | None) -> Iterator[tuple[Any, ...]]:
    """When the page's first checkpoint is the model of the user's last generation, put that
    generation's prompt and knobs back and run it again with the seed it drew (the same text,
    token for token: sampling is seeded), so a reload shows what was on screen.

    Outputs: the RUN_KNOBS inputs, then Generation's fields (all gr.skip() when there is nothing to bring back)."""
    skip_all = (gr.skip(),) * (len(RUN_KNOBS) + len(Generation(gr.skip(), gr.skip()).values()))
    name = pending.get("model") if isinstance(pending, dict) else None
    last = recall(env.workspace.root, "generate")
    knobs = [last.get(k) for k in RUN_KNOBS]
    if (not name or text_field(last, "model") != name or not isinstance(knobs[0], str)
            or any(v is not None and not isinstance(v, (str, int, float)) for v in knobs)):
        yield skip_all
        return
    shown = [v if v is not None or k == "seed_box" else gr.skip() for k, v in zip(RUN_KNOBS, knobs)]
    args = dict(zip(RUN_KNOBS, knobs))
    drawn = number_field(last, "seed")
    args["seed"] = drawn if drawn is not None else args["seed_box"]
    del args["seed_box"]
    try:
        for part in generate_text(env, name, **args):
            yield (*shown, *part.values())
    except PlaygroundError as exc:  # e.g. a cap lowered since: the page opens as new, no toast
        log.info("not re-running the last generation of %s: %s", name, exc)
        yield skip_all


@dataclass(frozen=True)
class ModelView(Updates):
    """What choosing a checkpoint changes: the controls its family reads, and the previous
    model's output, table, picks and stats line cleared."""

    info: Any  # the checkpoint's one-line description
    prompt: Any
    image_col: Any
    lm_group: Any  # sampling controls
    s2s_group: Any  # beam controls
    gen_btn: Any
    classify_btn: Any
    sample: Any  # validation samples
    dist_plot: Any  # next-token distribution
    align_plot: Any
    class_plot: Any
    output: Any  # generated text (HTML)
    table: Any  # token table
    result: Any  # result state
    picker: Any  # "pick a generated token"
    max_new: Any
    stats: Any
    result_image: Any = dataclasses.field(default_factory=lambda: gr.update(value=None, visible=False))  # a run's picture
    routing_plot: Any = dataclasses.field(default_factory=lambda: gr.update(value=None, visible=False))  # expert load
    context: Any = dataclasses.field(default_factory=lambda: gr.update(visible=False))  # window / extend past block_size
    length_box: Any = dataclasses.field(default_factory=lambda: gr.update(visible=False))  # loss per position
    routing_csv: Any = dataclasses.field(default_factory=lambda: gr.update(value=None, visible=False))  # MoE only


def _no_view(info: str, prompt: Any, gen_btn: Any, max_new: Any) -> ModelView:
    hidden, empty = gr.update(visible=False), gr.update(choices=[], value=None)
    return ModelView(info, prompt, hidden, hidden, hidden, gen_btn, hidden, empty, None, None, None, "", None, None,
                     empty, max_new, "")


def select_model(env: Env, name: str | None) -> ModelView:
    """Adapt the controls to the checkpoint's family and load its validation samples; the previous
    model's output, table, picks and stats line go."""
    from playground.generation.samples import validation_samples

    shown, hidden = gr.update(visible=True), gr.update(visible=False)
    if not name:
        return _no_view(NO_MODEL, gr.update(visible=True, label="Prompt"), shown, shown)
    try:
        bundle = _bundle(env, name)
    except Exception as exc:  # noqa: BLE001 - a broken checkpoint: say so, keep the tab usable
        return _no_view(f"Cannot load {name!r}: {exc}", hidden, hidden, hidden)
    controls = _generator(bundle).controls
    samples = validation_samples(bundle, env.workspace)
    image, text = controls.reads_image, not controls.reads_image
    return ModelView(
        info=describe(bundle),
        prompt=gr.update(visible=text, label=controls.input_label, placeholder=controls.placeholder),
        image_col=gr.update(visible=image),
        lm_group=gr.update(visible=controls.sampling),
        s2s_group=gr.update(visible=controls.beam),
        gen_btn=gr.update(visible=text),
        classify_btn=gr.update(visible=image),
        sample=gr.update(choices=[s.label for s in samples], value=None,
                         label=f"Validation samples ({len(samples)})" if samples else "Validation samples (none available)"),
        dist_plot=gr.update(value=None, visible=text),
        align_plot=gr.update(value=None, visible=controls.alignment),
        class_plot=gr.update(value=None, visible=image),
        output="",
        table=None,
        result=None,
        picker=gr.update(choices=[], value=None, label=controls.pick_label),
        max_new=gr.update(visible=text and not controls.shows_image),  # a picture has its own length
        stats="",
        result_image=gr.update(value=None, visible=controls.shows_image),
        routing_plot=gr.update(value=None, visible=_generator(bundle).shows_routing(bundle)),
        routing_csv=gr.update(value=None, visible=_generator(bundle).shows_routing(bundle)),
        context=gr.update(visible=controls.context_modes, value="window", info=_context_info(bundle)),
        length_box=gr.update(visible=controls.context_modes),
    )


CONTEXT_CHOICES = [("Slide the window (any model)", "window"),
                   ("Extend: keep every token, positions go on", "extend")]


def _context_info(bundle) -> str:
    """What the context modes mean for this checkpoint (its block size and positions)."""
    cfg = bundle.model_config
    block = getattr(cfg, "block_size", None)
    if not getattr(bundle.model, "extrapolates", False):
        return (f"Trained on {block} positions with a learned table: it has no vector past {block}, so only "
                "the window applies (it slides forward when full).")
    window = getattr(cfg, "attn_window", 0)
    ring = f" With its {window}-token sliding window the KV cache keeps {window} positions." if window else ""
    return (f"Trained on {block} positions; 'extend' reads past {block} with positions it never saw "
            f"in training (watch the loss per position below).{ring}")


def position_loss_view(env: Env, name, factor, windows):
    """(chart, summary) of the checkpoint's loss at each position out to `factor` x block_size."""
    from playground.analysis.length import checkpoint_position_loss
    from playground.charts.positions import position_loss_chart

    result = checkpoint_position_loss(_bundle(env, name), factor, windows, env.workspace)
    return position_loss_chart(result), result.summary()


def pick_sample(env: Env, name: str | None, label: str | None):
    """The chosen validation example into the prompt (text models) or the image input (ViT)."""
    from playground.generation.samples import validation_samples

    if not name or not label:
        return gr.skip(), gr.skip()
    bundle = _bundle(env, name)
    for s in validation_samples(bundle, env.workspace):
        if s.label == label:
            if isinstance(s.input, str):
                return s.input, gr.skip()
            return gr.skip(), s.input
    return gr.skip(), gr.skip()


def _sampling(temperature, top_k, top_p, min_p, rep, freq, pres):
    from playground.generation.filters import SamplingConfig

    return SamplingConfig(temperature=float(temperature), top_k=int(top_k or 0), top_p=float(top_p),
                          min_p=float(min_p), repetition_penalty=float(rep), frequency_penalty=float(freq),
                          presence_penalty=float(pres))


def _stops(text: str | None) -> tuple[str, ...]:
    """Stop strings from a comma-separated field (see playground.generation.stops for the escapes)."""
    from playground.generation.stops import parse_stop_strings

    return parse_stop_strings(text)


def _seed(value) -> int | None:
    if value is None or value == "":
        return None
    return int(value)


def _csv(df: pd.DataFrame | None, stem: str) -> str | None:
    """Write a DataFrame to a temp CSV for a download button."""
    if df is None or len(df) == 0:
        return None
    path = download_dir("playground-generate-") / f"{stem}.csv"
    df.to_csv(path, index=False)
    return str(path)


def _outputs_html(samples: list[tuple[str, list]], selected: tuple[int, int] | None = None) -> str:
    """The legend, then each sample's (prompt, token events) as coloured tokens."""
    from playground.generation.render import LEGEND, tokens_html

    blocks = [LEGEND]
    for i, (head, events) in enumerate(samples):
        sel = selected[1] if selected and selected[0] == i else None
        title = f"Sample {i + 1}" if len(samples) > 1 else None
        blocks.append(tokens_html(None, events, head, selected=sel, title=title))
    return "".join(blocks)


def _final_html(state: dict[str, Any], selected: tuple[int, int] | None = None) -> str:
    done, generator = state["done"], _state_generator(state)
    echo = generator.controls.echo_prompt
    html = _outputs_html([(s.prompt if echo else "", s.events) for s in done.samples], selected)
    output = generator.final_output(done)
    if output is not None:
        html += f'<div style="margin-top:6px"><b>Output:</b> {gr_escape(output)}</div>'
    return html


def _state_generator(state: dict[str, Any]):
    """The generator of the family whose run `state` holds."""
    from playground.families import get_family

    return get_family(state["family"]).generator


def _picker_choices(done) -> list[tuple[str, str]]:
    from playground.generation.render import token_choices

    out = []
    many = len(done.samples) > 1
    for s, sample in enumerate(done.samples):
        for label, index in token_choices(sample.events):
            out.append(((f"sample {s + 1} " if many else "") + label, f"{s}:{index}"))
    return out


def _stats(done, generator) -> str:
    parts = [f"{done.new_tokens} tokens in {done.elapsed_s:.2f} s ({done.tokens_per_s:.0f} tok/s)"]
    if done.seed is not None:
        parts.append(f"seed **{done.seed}** (type it in Seed to repeat this run)")
    reasons = sorted({s.stop_reason for s in done.samples})
    parts.append("stopped: " + ", ".join(reasons))
    summary = generator.summary(done)
    if summary is not None:
        parts.append(summary)
    return " · ".join(parts)


def _alignment_plot(sample):
    from playground.charts.generation import alignment_chart, alignment_frame

    if sample.alignment is None or sample.alignment.size == 0:
        return None, None
    df = alignment_frame(sample.alignment, sample.source_tokens or [], sample.target_tokens or [])
    return alignment_chart(df), df


@dataclass(frozen=True)
class Generation(Updates):
    """A generation as it streams (the partial text and a count) and when done (everything)."""

    output: Any  # generated text (HTML)
    stats: Any  # the stats line
    table: Any = dataclasses.field(default_factory=gr.skip)  # one row per generated token
    align_plot: Any = dataclasses.field(default_factory=gr.skip)
    result: Any = dataclasses.field(default_factory=gr.skip)  # state: what "Explain in Analyze" hands over
    picker: Any = dataclasses.field(default_factory=gr.skip)  # "pick a generated token"
    table_csv: Any = dataclasses.field(default_factory=gr.skip)
    align_csv: Any = dataclasses.field(default_factory=gr.skip)
    result_image: Any = dataclasses.field(default_factory=gr.skip)  # the run as a picture (controls.shows_image)
    routing_plot: Any = dataclasses.field(default_factory=gr.skip)  # expert load (a mixture of experts)
    routing_csv: Any = dataclasses.field(default_factory=gr.skip)


def generate_text(env: Env, name, prompt, temperature, top_k, top_p, min_p, rep, freq, pres, max_new, seed,
                  num_samples, stop, beam_width, length_penalty, context="window") -> Iterator[Generation]:
    """Stream generation: the partial text every few hundred ms, then the whole result."""
    from playground.errors import ConfigError
    from playground.generation.api import GenerateRequest, check_request_sizes, stream
    from playground.generation.events import Done
    from playground.generation.render import token_table

    bundle = _bundle(env, name)
    generator = _generator(bundle)
    controls = generator.controls
    if int(num_samples or 1) > MAX_SAMPLES:
        raise ConfigError(f"At most {MAX_SAMPLES} samples at once.")
    request = GenerateRequest(
        prompt=prompt or "", max_new_tokens=int(max_new or DEFAULT_MAX_NEW),
        sampling=_sampling(temperature, top_k, top_p, min_p, rep, freq, pres), seed=_seed(seed),
        num_samples=int(num_samples or 1) if controls.sampling else 1, stop=_stops(stop),
        beam_width=int(beam_width or 1), length_penalty=float(length_penalty or 0.0),
        context=(context or "window") if controls.context_modes else "window",
    ).capped(env.max_new_tokens if env.max_new_tokens else HARD_MAX_NEW)
    check_request_sizes(request, env.caps)
    head = (prompt or "") if controls.echo_prompt else ""
    partial: list[list] = [[] for _ in range(request.num_samples)]
    last = 0.0
    events = gpu_calls.generate_events(env.workspace, name, request) if env.zerogpu else stream(bundle, request)
    for event in events:
        if isinstance(event, Done):
            done = event
            break
        partial[event.sample].append(event)
        now = time.perf_counter()
        if now - last >= STREAM_EVERY_S and now - last >= _stream_every(bundle):
            last = now
            html = _outputs_html([(head, ev) for ev in partial])
            yield Generation(html, streaming_stats(sum(map(len, partial))))
    state = {"checkpoint": bundle.name, "family": bundle.family, "done": done}
    html = _final_html(state)
    table = pd.concat([token_table(s.events, i) for i, s in enumerate(done.samples)], ignore_index=True)
    plot, align_df = _alignment_plot(done.samples[0]) if controls.alignment else (None, None)
    choices = _picker_choices(done)
    image = generator.final_image(done) if controls.shows_image else gr.skip()
    routing = generator.routing_view(bundle, done)
    routing_plot, routing_csv = (routing[0], _csv(routing[1], "expert-routing")) if routing else (gr.skip(), gr.skip())
    remember(env.workspace.root, "generate", {
        "model": name, "prompt": prompt or "", "temperature": temperature, "top_k": top_k, "top_p": top_p,
        "min_p": min_p, "rep": rep, "freq": freq, "pres": pres, "max_new": max_new, "seed_box": seed,
        "seed": done.seed, "num_samples": num_samples, "stop": stop or "", "beam_width": beam_width,
        "length_penalty": length_penalty, "context": context})
    yield Generation(html, _stats(done, generator), table, plot, state, gr.update(choices=choices, value=None),
                     _csv(table, "tokens"), _csv(align_df, "alignment"), image, routing_plot, routing_csv)


def streaming_stats(count: int) -> str:
    """The stats line while tokens stream in."""
    return f"generating… {count} token{'' if count == 1 else 's'}"


def _stream_every(bundle) -> float:
    """Seconds between partial outputs: STREAM_EVERY_S, longer when many generate on the same
    model at once (20 users' re-rendered partial outputs cost the server more than the batched
    generation itself: 0.25 s for up to 4, 1.25 s for 20)."""
    from playground.generation.batching import generations_running

    return STREAM_EVERY_S * max(1.0, generations_running(bundle.model) / STREAM_CROWD)


def gr_escape(text: str) -> str:
    import html

    return html.escape(text)


def classify(env: Env, name, image, invert):
    """Classify the uploaded image: (class chart, table, stats, csv, state, class picker)."""
    from playground.charts.generation import class_chart
    from playground.generation.api import classify_image

    bundle = _bundle(env, name)
    started = time.perf_counter()
    result = classify_image(bundle, image, invert=bool(invert))
    df = pd.DataFrame(result.rows())
    stats = f"Predicted **{result.predicted}** (p = {result.probs[0]:.3f}) in {time.perf_counter() - started:.3f} s"
    names = list(bundle.class_names or [str(i) for i in range(len(result.labels))])
    index = {c: i for i, c in enumerate(names)}
    state = {"checkpoint": bundle.name, "family": bundle.family, "image": image if isinstance(image, str) else None,
             "invert": bool(invert), "labels": result.labels, "probs": result.probs, "class_names": names}
    choices = [(f"{c}  (p = {p:.3f})", f"c:{index.get(c, i)}") for i, (c, p) in enumerate(zip(result.labels, result.probs))]
    return class_chart(df), df, stats, _csv(df, "classes"), state, gr.update(choices=choices, value=None)


def distribution(env: Env, name, prompt, temperature, top_k, top_p, min_p, state, picked):
    """Next-token distribution chart (+ its CSV) for the prompt, or, when a generated token is
    picked, for the prefix just before it."""
    from playground.charts.generation import distribution_chart
    from playground.generation.api import next_token_table
    from playground.generation.family import token_pick

    if not name:
        return None, None
    bundle = _bundle(env, name)
    generator = _generator(bundle)
    controls = generator.controls
    if controls.reads_image:
        return None, None
    if len(prompt or "") > cap(env.caps, "max_prompt_chars"):
        return None, None  # as generate_text refuses it (its message says so); never tokenized here
    sampling = _sampling(temperature, top_k, top_p, min_p, 1.0, 0.0, 0.0)
    sel = token_pick(picked)
    title = "Next-token distribution after the prompt"
    prefix_ids = None
    text = prompt or ""
    if sel and state and state.get("checkpoint") == name:
        text, prefix_ids = generator.why_context(state["done"].samples[sel[0]], sel[1])
        title = f"Next-token distribution before token #{sel[1]}"
    if controls.prompt_required and not text.strip():
        return None, None
    try:
        df = next_token_table(bundle, text, sampling, top=DIST_TOP, target_prefix=prefix_ids)
    except PlaygroundError:  # e.g. a character outside the vocabulary while typing: Generate says why
        return None, None
    if not controls.sampling:  # greedy / beam search: only the model's own distribution matters
        df = df[df.stage == "model (T = 1)"]
        title = title.replace("after the prompt", "for the first output token")
    return distribution_chart(df, title), _csv(df, "next-token-distribution")


def show_token(state, picked):
    """Re-render the output with the picked token outlined."""
    from playground.generation.family import token_pick

    if not state or not token_pick(picked) or _state_generator(state).controls.reads_image:
        return gr.skip()
    return _final_html(state, token_pick(picked))


def table_select(evt: gr.SelectData, table):
    """Clicking a row of the token table picks that token."""
    row = evt.index[0] if isinstance(evt.index, (list, tuple)) else evt.index
    if table is None or row is None or row >= len(table):
        return gr.skip()
    r = table.iloc[row]
    return f"{int(r['sample']) - 1}:{int(r['index'])}"


def explain(state, picked, selection):
    """Hand the picked token (or class) to the Analyze tab (the browser then opens that tab)."""
    from playground.generation.api import explain_pick

    return {**(selection or {}), **explain_pick(state, picked)}


# ---------------------------------------------------------------------------------------------


# The next-token chart follows every edit of the prompt and sampling fields: a lane of its own,
# one at a time over the server, so a flood of edits (or of API calls) queues there and never
# takes a Generate or light slot.
DISTRIBUTION_LANE = {"concurrency_id": "distribution", "concurrency_limit": 1}


def _generate_lane(ctx: AppContext) -> dict[str, Any]:
    """Generate's lane. Batched, a GPT generation mostly waits for its model's batch worker
    (one forward pass per step for everyone), so the lane is as wide as a batch; unbatched
    (PLAYGROUND_GENERATE_BATCHING=0) it shares the light lane, as before."""
    from playground.generation.batching import MAX_ROWS, batching_enabled

    if batching_enabled():
        return {"concurrency_id": "generate", "concurrency_limit": MAX_ROWS}
    return ctx.light()


def build(ctx: AppContext) -> None:
    """Lay out the Generate tab."""
    from playground.analysis.length import (
        DEFAULT_FACTOR,
        DEFAULT_WINDOWS,
        MAX_FACTOR,
        MAX_WINDOWS,
    )

    caps = ctx.settings.caps
    device = ctx.settings.resolved_device

    def with_env(fn):
        """`fn(env, *args)` as `fn(space, *args)`: the user's space in the handlers' Env."""
        if inspect.isgeneratorfunction(fn):
            def run(space, *args):
                yield from fn(Env(space, device, caps.max_new_tokens, caps, ctx.settings.zerogpu), *args)
        else:
            def run(space, *args):
                return fn(Env(space, device, caps.max_new_tokens, caps, ctx.settings.zerogpu), *args)
        run.__name__ = fn.__name__
        return run

    def U(fn):
        return ctx.per_user(with_env(fn))

    max_new_cap = caps.max_new_tokens or HARD_MAX_NEW

    with gr.Row():
        model = gr.Dropdown(label="Checkpoint", choices=[], interactive=True, elem_id="generate-model", scale=2)
        sample = gr.Dropdown(label="Validation samples", choices=[], interactive=True, elem_id="generate-sample", scale=3)
    info = gr.Markdown(NO_MODEL, elem_id="generate-info")
    with gr.Row():
        with gr.Column(scale=2):
            prompt = gr.Textbox(label="Prompt", lines=3, elem_id="generate-prompt", info=text_hint(ctx, "max_prompt_chars"))
            with gr.Column(visible=False) as image_col:
                image = ReadableImage(label="Image", type="filepath", image_mode="RGB", elem_id="generate-image", height=220)
                invert = gr.Checkbox(label="Invert (dark ink on light paper)", value=False)
            # The buttons right under the input, inside a laptop's window; the knobs follow.
            with gr.Row():
                gen_btn = gr.Button("Generate", variant="primary", elem_id="generate-run")
                classify_btn = gr.Button("Classify", variant="primary", visible=False, elem_id="generate-classify")
                stop_btn = gr.Button("Stop", variant="stop", elem_id="generate-stop")
            with gr.Group(visible=True) as lm_group:
                temperature = Slider(0, 2, value=1.0, step=0.05, label="Temperature", info="0 = greedy",
                                     elem_id="generate-temperature")
                top_k = Slider(0, 100, value=0, step=1, label="Top-k", info="0 = off")
                top_p = Slider(0.01, 1, value=1.0, step=0.01, label="Top-p (nucleus)", info="1 = off")
                min_p = Slider(0, 1, value=0.0, step=0.01, label="Min-p", info="0 = off")
                with gr.Accordion("Penalties, seed, samples, stop strings", open=False):
                    rep = Slider(1, 3, value=1.0, step=0.05, label="Repetition penalty (CTRL)", info="1 = off")
                    freq = Slider(0, 2, value=0.0, step=0.05, label="Frequency penalty", info="0 = off")
                    pres = Slider(0, 2, value=0.0, step=0.05, label="Presence penalty", info="0 = off")
                    seed = gr.Number(value=None, precision=0, label="Seed", info="empty = random (shown after the run)")
                    num_samples = Slider(1, MAX_SAMPLES, value=1, step=1, label="Samples at once")
                    stop = gr.Textbox(label="Stop strings", placeholder=r"comma-separated, e.g. \n\n, THE END")
            with gr.Group(visible=False) as s2s_group:
                beam_width = Slider(1, 10, value=1, step=1, label="Beam width", info="1 = greedy")
                length_penalty = Slider(0, 2, value=0.0, step=0.1, label="Length penalty α (GNMT)", info="0 = off")
            max_new = Slider(1, max_new_cap, value=min(DEFAULT_MAX_NEW, max_new_cap), step=1,
                                label="Max new tokens" + (" (demo cap)" if caps.max_new_tokens else ""),
                                elem_id="generate-max-new")
            context = gr.Radio(CONTEXT_CHOICES, value="window", label="Past the block size", visible=False,
                               elem_id="generate-context")
        with gr.Column(scale=3):
            output = gr.HTML(elem_id="generate-output")
            stats = gr.Markdown(elem_id="generate-stats")
            result_image = gr.Image(label="Original · given upper half (lower half hidden) · completions", type="numpy",
                                    interactive=False, visible=False, elem_id="generate-result-image")
            with gr.Row():
                picker = gr.Dropdown(label="Pick a generated token", choices=[], interactive=True,
                                     elem_id="generate-token", scale=3)
                explain_btn = gr.Button("Explain in Analyze", elem_id="generate-explain", scale=1)
            dist_plot = Chart(label="Next-token distribution: what each knob leaves", elem_id="generate-dist")
            align_plot = Chart(label="Alignment", elem_id="generate-alignment", visible=False)
            class_plot = Chart(label="Class probabilities", elem_id="generate-classes", visible=False)
            routing_plot = Chart(label="Expert load: where the first sample's tokens went (mixture of experts)",
                                 elem_id="generate-experts", visible=False)
            table = Table(label="Tokens (click a row to pick it)", interactive=False, elem_id="generate-table",
                                 max_height=300)
            with gr.Accordion("Loss per position, past the trained context", open=False, visible=False) as length_box:
                with gr.Row():
                    length_factor = Slider(1, MAX_FACTOR, value=DEFAULT_FACTOR, step=1, label="Out to N x block size")
                    length_windows = Slider(1, MAX_WINDOWS, value=DEFAULT_WINDOWS, step=1,
                                            label="Validation windows per position")
                length_btn = gr.Button("Measure", elem_id="generate-length-run")
                length_stats = gr.Markdown(elem_id="generate-length-stats")
                length_plot = Chart(label="Loss per position", elem_id="generate-length")
            with gr.Row():
                dist_csv = gr.DownloadButton("Distribution CSV", size="sm", elem_id="generate-dist-csv")
                table_csv = gr.DownloadButton("Tokens CSV", size="sm")
                align_csv = gr.DownloadButton("Alignment / classes CSV", size="sm")
                routing_csv = gr.DownloadButton("Expert routing CSV", size="sm", visible=False)  # MoE models only
    result = gr.State(None)

    ctx.on_workspace_change(with_env(refresh_models), [model], [model], api_name="generate_models")
    restored = gr.State(False)  # this page has had its one chance to bring back the last generation
    pending = gr.State(None)  # the first checkpoint shown, handed to restore_generation
    generation_outputs = Generation.wire(output=output, stats=stats, table=table, align_plot=align_plot, result=result,
                                         picker=picker, table_csv=table_csv, align_csv=align_csv,
                                         result_image=result_image, routing_plot=routing_plot, routing_csv=routing_csv)
    model.change(
        U(select_model), [ctx.user, model],
        ModelView.wire(info=info, prompt=prompt, image_col=image_col, lm_group=lm_group, s2s_group=s2s_group,
                       gen_btn=gen_btn, classify_btn=classify_btn, sample=sample, dist_plot=dist_plot,
                       align_plot=align_plot, class_plot=class_plot, output=output, table=table, result=result,
                       picker=picker, max_new=max_new, stats=stats, result_image=result_image,
                       routing_plot=routing_plot, context=context, length_box=length_box, routing_csv=routing_csv),
        api_name="generate_select_model", show_progress="minimal", show_progress_on=[info],
    ).then(first_on_page, [restored, model], [restored, pending], queue=False, show_progress="hidden",
           api_visibility="private")
    # A page that opens again: the user's last generation, run again with its seed (once per page).
    pending.change(U(restore_generation), [ctx.user, pending],
                   [prompt, temperature, top_k, top_p, min_p, rep, freq, pres, max_new, seed, num_samples, stop,
                    beam_width, length_penalty, context, *generation_outputs],
                   show_progress="hidden", api_visibility="undocumented", **_generate_lane(ctx))
    sample.input(U(pick_sample), [ctx.user, model, sample], [prompt, image],
                 api_name="generate_pick_sample", show_progress="hidden")
    # The previous run's stats line goes at once, in the browser (the light lane may be busy).
    gen_event = gen_btn.click(None, None, [stats], js="() => 'Generating…'", queue=False,
                              show_progress="hidden").then(
        U(generate_text),
        [ctx.user, model, prompt, temperature, top_k, top_p, min_p, rep, freq, pres, max_new, seed, num_samples, stop,
         beam_width, length_penalty, context],
        generation_outputs,
        api_name="generate_text", show_progress="minimal", show_progress_on=[output], **_generate_lane(ctx),
    )
    cls_event = classify_btn.click(None, None, [stats], js="() => 'Classifying…'", queue=False,
                                   show_progress="hidden").then(
        U(classify), [ctx.user, model, image, invert],
        [class_plot, table, stats, align_csv, result, picker],
        api_name="generate_classify", show_progress="minimal", **ctx.light(),
    )
    stop_btn.click(None, cancels=[gen_event, cls_event], api_visibility="private")
    length_btn.click(U(position_loss_view), [ctx.user, model, length_factor, length_windows],
                     [length_plot, length_stats], api_name="generate_position_loss", show_progress="minimal",
                     **ctx.analysis())
    dist_inputs = [ctx.user, model, prompt, temperature, top_k, top_p, min_p, result, picker]
    # The knobs redraw on release (a drag let go, or the number box left), never per keystroke: a
    # half-typed "0." of Top-p is below its minimum and raised a red toast while typing 0.95.
    gr.on(
        [model.change, prompt.change, temperature.release, top_k.release, top_p.release, min_p.release, picker.change],
        U(distribution), dist_inputs, [dist_plot, dist_csv],
        api_name="generate_distribution", show_progress="hidden", trigger_mode="always_last",
        **DISTRIBUTION_LANE,  # it fires on every edit of the prompt: one at a time, beside Generate's lane
    )
    picker.change(show_token, [result, picker], [output], api_name="generate_show_token", show_progress="hidden")
    table.select(table_select, [table], [picker], show_progress="hidden",
                 api_visibility="private")  # a click only: an API call has no row to send
    explain_btn.click(user_errors(explain), [result, picker, ctx.selection], [ctx.selection],
                      api_name="generate_explain", show_progress="hidden",
                      ).success(None, js=click_tab_js("analyze"), queue=False, show_progress="hidden")
    compare_models.build_generate(ctx, device, model, prompt, max_new)  # a second LM on the same prompt
