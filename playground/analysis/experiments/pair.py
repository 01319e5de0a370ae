"""One experiment, two models: the user's own checkpoint beside a second one (e.g. an imported
pretrained model) on the same held-out examples.

The first model must be trainer-written: its validation split gives the held-out examples (the
same seeded draw as a single-model run). They become model-independent inputs,
:class:`HeldOutInputs` — the texts (decoded with the first model's tokenizer, or the review text
the family kept) or the images, with the true class and the rationale / object mask — and each
model reads them through its own tokenizer with its family's per-input preparation (what
Analyze's "Compare with a second model" does with one typed text). The chosen experiment then
runs on each model's queries exactly as a single-model run on those inputs
(:func:`iter_on_inputs`), so the two columns are two ordinary results.

Refused before anything runs: models of different tasks (next token, masked token, text or
image classes), classifiers with different label sets, experiments that retrain models or
need the second model's own training data (seeds, diagnostic, the sanity check's label
randomisation). The uniform baseline is measured on the held-out examples themselves
(:func:`held_out_evaluator`): the share of true classes, the share of the learned predictions
kept, and the mean TVD from the learned output, with attention learned and frozen uniform.
"""
from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import torch
from torch import nn

from playground.analysis.experiments import wiegreffe_pinter as wp
from playground.analysis.experiments.core import ExperimentGen, ExperimentResult, Progress, StopFlag, drive
from playground.analysis.experiments.data import HeldOut, load_held_out
from playground.analysis.experiments.estimate import CALIBRATION_STEPS, split_steps
from playground.analysis.experiments.runner import ExperimentOptions, iter_experiment
from playground.analysis.explain.per_input import InputSpec
from playground.analysis.numerics import queries_in_float64
from playground.bundle import Bundle
from playground.data.examples import AnalysisExample
from playground.errors import PlaygroundError
from playground.families import get_family
from playground.limits import check_experiment_options
from playground.settings import DemoCaps
from playground.workspace import Workspace

TASKS: dict[str, str] = {  # family -> the task its held-out examples pose
    "gpt": "next-token prediction",
    "bert_mlm": "masked-token prediction",
    "text_classifier": "text classification",
    "bert_classifier": "text classification",
    "vit": "image classification",
}
PAIR_EXPERIMENTS = ("agreement", "permutation", "adversarial", "uniform", "erasure", "aopc", "pointing", "causal",
                    "sanity")
NOT_PAIRED = {
    "seeds": "retrains the first model's preset with other seeds, which a second model does not have",
    "diagnostic": "trains a probe on the first model's training labels, which a second model does not share",
}
MASK_TEXT = "[MASK]"  # how a masked position is written in a held-out text (each model's own mask token replaces it)


@dataclass
class HeldOutInputs:
    """Held-out examples as inputs any model of the task can read: texts or images."""

    task: str
    examples: list[AnalysisExample]  # source text (or image), true class, rationale / object mask
    class_names: list[str] | None
    description: str

    def __len__(self) -> int:
        return len(self.examples)


def task_of(bundle: Bundle) -> str:
    """The task of a bundle's held-out examples; PlaygroundError for families the pairs do not cover."""
    if bundle.family not in TASKS:
        raise PlaygroundError(f"{bundle.name!r} is a {bundle.family} model: the two-model experiments take language "
                              f"models and text or image classifiers ({', '.join(sorted(TASKS))}).")
    return TASKS[bundle.family]


def _names(names: Sequence[str] | None) -> list[str]:
    return [str(n).strip().lower() for n in names or []]


def check_pair(name: str, bundles: Sequence[Bundle], options: ExperimentOptions) -> None:
    """Refuse, before anything is drawn or run, a pair of models or an experiment that cannot be compared."""
    if len(bundles) != 2:
        raise PlaygroundError("Give two models: the first (trainer-written) and a second one.")
    first, second = bundles
    if first.name == second.name:
        raise PlaygroundError("Choose a second model other than the first.")
    if name in NOT_PAIRED:
        raise PlaygroundError(f"The {name} experiment {NOT_PAIRED[name]}: run it on one model. With a second model: "
                              f"{', '.join(PAIR_EXPERIMENTS)}.")
    if name not in PAIR_EXPERIMENTS:
        raise PlaygroundError(f"Unknown experiment {name!r}; with a second model choose one of {', '.join(PAIR_EXPERIMENTS)}.")
    if options.label_randomisation:
        raise PlaygroundError("The sanity check's label randomisation retrains the first model on shuffled labels; "
                              "untick it to compare two models (the cascading randomisation still runs on both).")
    tasks = [task_of(b) for b in bundles]
    if tasks[0] != tasks[1]:
        raise PlaygroundError(f"{first.name!r} does {tasks[0]} and {second.name!r} does {tasks[1]}: the same held-out "
                              "examples cannot pose both tasks. Pick a second model of the same kind.")
    if tasks[0].endswith("classification"):
        a, b = _names(first.class_names), _names(second.class_names)
        if sorted(a) != sorted(b):
            raise PlaygroundError(f"{first.name!r} tells apart {first.class_names or 'unnamed classes'} and "
                                  f"{second.name!r} tells apart {second.class_names or 'unnamed classes'}: a "
                                  "classification experiment needs the same label set in both. Pick a second "
                                  "classifier of the same classes (or fine-tune one on this data).")


def inputs_from_held(bundle: Bundle, held: HeldOut) -> HeldOutInputs:
    """The first model's held-out examples as texts (or images) with their true class and mask."""
    task = task_of(bundle)
    tok = bundle.tokenizer
    examples = []
    for i, q in enumerate(held.queries):
        label = held.labels[i] if i < len(held.labels) else f"example {i}"
        mask = held.masks[i] if i < len(held.masks) else None
        gold = held.gold[i] if task.endswith("classification") else None
        if task == "image classification":
            examples.append(AnalysisExample(label, image=q.inputs[0].detach().cpu(), mask=mask, true_label=gold))
            continue
        ids = [int(t) for t in q.inputs[0].tolist()]
        if mask is not None and task == "text classification":
            mask = _word_mask(bundle, mask, ids)
        if held.sources and i < len(held.sources):
            text = _as_read(bundle, str(held.sources[i]), ids)
        else:
            if tok is None:
                raise PlaygroundError(f"{bundle.name!r} has no tokenizer.json, so its examples cannot be read as text.")
            if task == "masked-token prediction":
                text = _masked_text(bundle, ids)
            else:
                text = tok.decode(ids, skip_special_tokens=task != "next-token prediction")
        examples.append(AnalysisExample(label, mask=mask, true_label=gold, source=text))
    return HeldOutInputs(task, examples, held.class_names, held.description)


def _framing(bundle: Bundle) -> set[int]:
    """Ids that frame a text rather than read it: [CLS], [SEP], padding."""
    c = bundle.model_config
    return {int(getattr(c, k)) for k in ("cls_id", "sep_id", "pad_id") if getattr(c, k, None) is not None}


def _word_mask(bundle: Bundle, mask: Any, ids: list[int]) -> Any:
    """A per-token rationale without the framing tokens' places (each family frames it again)."""
    if len(mask) != len(ids):
        return mask
    keep = [k for k, t in enumerate(ids) if t not in _framing(bundle)]
    return mask[keep]


def _as_read(bundle: Bundle, text: str, ids: list[int]) -> str:
    """``text`` cut after the last token the model read (its training data truncates long texts)."""
    framing = _framing(bundle)
    n_read = sum(1 for t in ids if int(t) not in framing)
    enc = bundle.tokenizer.encode(text, add_special_tokens=False) if bundle.tokenizer is not None else None
    if enc is None or len(enc.ids) <= n_read or n_read < 1:
        return text
    return text[: enc.offsets[n_read - 1][1]]


def _masked_text(bundle: Bundle, ids: list[int]) -> str:
    """Framed MLM ids as text: the pieces around the mask decoded, the mask written as MASK_TEXT."""
    c: Any = bundle.model_config
    tok: Any = bundle.tokenizer
    inner = [i for i in ids if i not in (c.cls_id, c.sep_id, c.pad_id)]
    parts: list[str] = []
    piece: list[int] = []
    for i in inner:
        if i == c.mask_id:
            parts.append(tok.decode(piece, skip_special_tokens=True))
            piece = []
        else:
            piece.append(i)
    parts.append(tok.decode(piece, skip_special_tokens=True))
    return f" {MASK_TEXT} ".join(p.strip() for p in parts).strip()


def _spec(bundle: Bundle, task: str, example: AnalysisExample) -> InputSpec:
    text = example.source
    if task == "masked-token prediction" and text is not None and bundle.tokenizer is not None:
        config: Any = bundle.model_config
        mask = bundle.tokenizer.id_to_token(int(config.mask_id)) or MASK_TEXT
        text = text.replace(MASK_TEXT, mask)
    return InputSpec(text=text, image=example.image)


def _class_map(inputs: HeldOutInputs, bundle: Bundle) -> dict[int, int]:
    """Index of each held-out class in ``bundle``'s classes (matched by name, case ignored)."""
    mine = _names(bundle.class_names)
    return {i: mine.index(n) for i, n in enumerate(_names(inputs.class_names)) if n in mine}


def read_inputs(bundle: Bundle, inputs: HeldOutInputs, device: str = "cpu") -> tuple[HeldOut, list[str | None]]:
    """Each input read by ``bundle`` (its tokenizer, its family's per-input preparation): the
    held-out set of this model, and per input None or why this model could not read it (that
    input is then left out of the queries)."""
    family = get_family(bundle.family)
    classes = _class_map(inputs, bundle) if inputs.task.endswith("classification") else {}
    queries, labels, units, gold, masks = [], [], [], [], []
    problems: list[str | None] = []
    for ex in inputs.examples:
        true = None if ex.true_label is None else classes.get(int(ex.true_label))
        sample = dataclasses.replace(ex, true_label=true) if inputs.task.endswith("classification") else None
        try:
            p = family.explainer.prepare(bundle, _spec(bundle, inputs.task, ex), sample, device)
        except PlaygroundError as exc:
            problems.append(str(exc))
            continue
        problems.append(None)
        queries.append(p.query)
        labels.append(ex.label)
        units.append(list(p.units))
        gold.append(true)
        masks.append(p.mask if p.mask is not None else ex.mask if inputs.task == "image classification" else None)
    kind = "classifier" if inputs.task.endswith("classification") else "lm"
    names = list(bundle.class_names) if bundle.class_names else None
    held = HeldOut(bundle.family, kind, queries, labels, units, gold, masks, names,
                   description=inputs.description if len(queries) == len(inputs) else
                   f"{len(queries)} of {inputs.description}")
    return held, problems


def common_inputs(bundles: Sequence[Bundle], inputs: HeldOutInputs, device: str = "cpu") -> tuple[list[HeldOut], int, str | None]:
    """Every model's held-out set over the inputs all of them can read: (sets, inputs left out,
    the first reason one was left out); PlaygroundError when no input is left."""
    read = [read_inputs(b, inputs, device) for b in bundles]
    ok = [all(r[1][i] is None for r in read) for i in range(len(inputs))]
    if all(ok):
        return [r[0] for r in read], 0, None
    reason = next(f"{b.name}: {p}" for b, (_, ps) in zip(bundles, read) for p in ps if p is not None)
    if not any(ok):
        raise PlaygroundError(f"No held-out example can be read by both models ({reason}).")
    keep = [i for i, good in enumerate(ok) if good]
    inputs = dataclasses.replace(inputs, examples=[inputs.examples[i] for i in keep],
                                 description=f"{len(keep)} of the {inputs.description}")
    return [read_inputs(b, inputs, device)[0] for b in bundles], len(ok) - len(keep), reason


def held_out_evaluator(held: HeldOut) -> Callable[[nn.Module], dict[str, float]]:
    """``evaluate(model)`` over the held-out queries (built on ``model``): accuracy against the true
    class (classifiers whose inputs have one), the share of the learned predictions kept, and the
    mean total variation distance of the explained output from the learned one."""
    with torch.no_grad():
        learned = [q.probs().detach() for q in held.queries]  # [1,V] each, attention as learned

    def evaluate(model: nn.Module) -> dict[str, float]:
        kept, tvd, right, known = 0, 0.0, 0, 0
        with torch.no_grad():
            for q, p0, g in zip(held.queries, learned, held.gold):
                p = q.probs()
                pred = int(p[0].argmax())
                kept += pred == int(p0[0].argmax())
                tvd += float(0.5 * (p - p0).abs().sum())
                if g is not None:
                    known += 1
                    right += pred == int(g)
        n = max(1, len(held.queries))
        out = {"predictions kept": kept / n, "mean TVD from learned": tvd / n}
        if known:
            out = {"accuracy": right / known, **out}
        return out

    return evaluate


def _settings(bundle: Bundle, held: HeldOut, o: ExperimentOptions) -> dict[str, Any]:
    return {"checkpoint": bundle.name, "family": bundle.family, "n_examples": len(held), "examples": held.description,
            "options": o.to_dict(), "evaluated_on": "held-out examples"}


def iter_on_inputs(name: str, bundle: Bundle, held: HeldOut, options: ExperimentOptions,
                   workspace: Workspace | None = None, stop: StopFlag = None, caps: DemoCaps | None = None) -> ExperimentGen:
    """Experiment ``name`` on one model's held-out set read from :class:`HeldOutInputs` (see
    :func:`read_inputs`): the runner's experiment on these queries; the uniform baseline on them."""
    o = dataclasses.replace(options, n=len(held))
    if name != "uniform":
        return (yield from iter_experiment(name, bundle, o, workspace, stop, held=held, caps=caps))
    check_experiment_options(o, caps)
    if o.float64:
        held = dataclasses.replace(held, queries=queries_in_float64(held.queries))
    model = held.queries[0].model
    result = yield from wp.iter_uniform(model, held_out_evaluator(held), None, None, stop, _settings(bundle, held, o))
    result.extra["example_labels"] = held.labels[: len(held)]
    return result


@dataclass
class PairResult:
    """Both models' results of one experiment on the same held-out inputs."""

    experiment: str
    models: list[str]
    results: list[ExperimentResult | None]
    description: str = ""
    left_out: int = 0  # inputs one of the models could not read (left out of both)
    left_out_reason: str | None = None
    stopped: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    def to_frame(self) -> pd.DataFrame:
        """Both results' per-example rows, with a ``model`` column first."""
        frames = [r.to_frame().assign(model=m) for m, r in zip(self.models, self.results) if r is not None]
        if not frames:
            return pd.DataFrame()
        out = pd.concat(frames, ignore_index=True)
        return out[["model", *[c for c in out.columns if c != "model"]]]

    def to_dict(self) -> dict[str, Any]:
        return {"experiment": self.experiment, "models": self.models, "examples": self.description,
                "left_out": self.left_out, "left_out_reason": self.left_out_reason, "stopped": self.stopped,
                "results": [None if r is None else r.to_dict() for r in self.results]}


def draw_inputs(first: Bundle, n: int, seed: int, workspace: Workspace | None = None) -> HeldOutInputs:
    """``n`` held-out examples of the (trainer-written) first model as inputs any model of its task reads."""
    return inputs_from_held(first, load_held_out(first, n, seed, workspace))


def iter_pair(name: str, bundles: Sequence[Bundle], options: ExperimentOptions | None = None,
              workspace: Workspace | None = None, stop: StopFlag = None, caps: DemoCaps | None = None,
              inputs: HeldOutInputs | None = None) -> Generator[Progress, None, PairResult]:
    """Experiment ``name`` on two models (private copies: interventions hook into them) over the
    first model's held-out examples; yields Progress (done counts both models' examples, the
    partial result is a PairResult) and returns the PairResult. A stop keeps what is finished."""
    o = options or ExperimentOptions()
    check_pair(name, bundles, o)
    check_experiment_options(o, caps)
    total = 2 * o.n
    yield Progress(name, 0, total, "drawing the held-out examples")
    if inputs is None:
        inputs = draw_inputs(bundles[0], o.n, o.seed, workspace)
    helds, left_out, reason = common_inputs(bundles, inputs, o.device)
    pair = PairResult(name, [b.name for b in bundles], [None, None], helds[0].description, left_out, reason)
    n = len(helds[0])
    total, loop_s = 2 * n, 0.0
    for k, (bundle, held) in enumerate(zip(bundles, helds)):
        gen = iter_on_inputs(name, bundle, held, o, workspace, stop, caps)
        while True:
            try:
                ev = next(gen)
            except StopIteration as done:
                result = done.value
                break
            if ev.partial is not None:
                pair.results[k] = ev.partial
            done_k = ev.done if name != "uniform" else round(ev.done / max(ev.total, 1) * n)
            yield Progress(name, k * n + done_k, total, f"{bundle.name}: {ev.message}", loop_s + ev.elapsed_s, pair)
        pair.results[k] = result
        loop_s += getattr(result, "elapsed_s", 0.0)
        if result.stopped:
            pair.stopped = True
            break
    return pair


def time_one_example(name: str, bundles: Sequence[Bundle], options: ExperimentOptions,
                     workspace: Workspace | None = None) -> tuple[float, float, float]:
    """(seconds to draw and read one held-out example with both models, seconds of one example on
    both models, adversarial: seconds per Adam step on both) for the time estimate."""
    one = dataclasses.replace(options, n=1)
    check_pair(name, bundles, one)
    t0 = time.perf_counter()
    helds, _, _ = common_inputs(bundles, draw_inputs(bundles[0], 1, one.seed, workspace), one.device)
    draw_s = time.perf_counter() - t0

    def timed(opts: ExperimentOptions) -> float:
        start = time.perf_counter()
        for b, h in zip(bundles, helds):
            drive(iter_on_inputs(name, b, h, opts, workspace))
        return time.perf_counter() - start

    if name != "adversarial":
        return draw_s, timed(one), 0.0
    timed(dataclasses.replace(one, steps=1))  # warm-up
    short = timed(dataclasses.replace(one, steps=CALIBRATION_STEPS))
    long = timed(dataclasses.replace(one, steps=2 * CALIBRATION_STEPS))
    return (draw_s, *split_steps(short, long, CALIBRATION_STEPS))


def pair_note(pair: PairResult) -> str:
    """One line under the two columns: the examples, and any an imported tokenizer could not read."""
    line = f"Both models read the same {pair.description}, each through its own tokenizer."
    if pair.left_out:
        line += (f" {pair.left_out} example(s) were left out of both because one model could not read them "
                 f"({pair.left_out_reason}).")
    return line


__all__ = ["TASKS", "PAIR_EXPERIMENTS", "HeldOutInputs", "PairResult", "check_pair", "common_inputs", "draw_inputs",
           "held_out_evaluator", "inputs_from_held", "iter_on_inputs", "iter_pair", "pair_note", "read_inputs",
           "task_of", "time_one_example"]
