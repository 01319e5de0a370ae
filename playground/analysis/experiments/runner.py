"""Run any experiment by name on a checkpoint: what the Experiments view and the CLI call.

    gen = iter_experiment("permutation", bundle, ExperimentOptions(n=200, seed=0), workspace=ws)
    result = drive(gen, progress=print)

Held-out examples come from the checkpoint's validation split (experiments_data). Seed
variance, the uniform retrain and the sanity check's data-label randomisation train new
checkpoints through the trainer, named ``<checkpoint>-seed<S>``, ``<checkpoint>-uniform`` and
``<checkpoint>-shuffled``; existing ones are reused.
"""
from __future__ import annotations

import copy
import dataclasses
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from torch import nn

from playground.analysis.causal.proxies import iter_causal
from playground.analysis.experiments import erasure as er
from playground.analysis.experiments import jain_wallace as jw
from playground.analysis.experiments import sanity as sa
from playground.analysis.experiments import wiegreffe_pinter as wp
from playground.analysis.experiments.core import ExperimentGen, Progress, StopFlag, is_stopped
from playground.analysis.experiments.data import HeldOut, load_held_out, prepare_data
from playground.analysis.explain.attention import explaining_maps
from playground.analysis.numerics import NOISE_ULPS, float64_model, model_dtype, queries_in_float64, saturation
from playground.analysis.query import Query
from playground.bundle import Bundle, load_bundle
from playground.errors import ConfigError, PlaygroundError
from playground.families import get_family
from playground.limits import check_experiment_options
from playground.settings import DemoCaps
from playground.workspace import Workspace

EXPERIMENTS: dict[str, str] = {
    "agreement": "J&W: Kendall τ of attention views vs gradient and leave-one-out",
    "permutation": "J&W: permute the explained attention row 100× (median TVD of the output)",
    "adversarial": "J&W: adversarial attention within ε (maximum JSD)",
    "uniform": "W&P: metrics with attention frozen uniform vs learned (and a uniform retrain if present)",
    "seeds": "W&P: JSD between the attention of models retrained with other seeds, next to adversarial JSD",
    "diagnostic": "W&P: logistic regression on attention-pooled frozen embeddings (learned/uniform/permuted/adversarial)",
    "erasure": "S&S: erase units in each ranking's order until the decision flips",
    "aopc": "Deletion/insertion curves, AOPC and ERASER comprehensiveness/sufficiency",
    "pointing": "Pointing game / plausibility against known ground truth (vit-shapes masks, review rationales)",
    "causal": "Attention and gradients scored against activation patching (Kendall τ with the causal effect per position)",
    "sanity": "Adebayo: randomise the layers from the output down; rank correlation of each method's map with the trained one",
}


@dataclass
class ExperimentOptions:
    """Every knob of every experiment (each uses the ones it needs)."""

    n: int = 50  # held-out examples
    seed: int = 0  # example draw and every random choice of the run
    module: str | None = None  # attention module intervened on (default: last layer's)
    heads: list[int] | None = None  # None = all heads
    n_perm: int = 100
    k: int = 5  # adversaries per example
    epsilon: float | None = None  # None: 0.01 classifiers, 0.05 next-token / seq2seq
    steps: int = 500  # adversarial Adam steps
    lr: float = 0.01
    views: tuple[str, ...] = jw.DEFAULT_VIEWS
    references: tuple[str, ...] = jw.DEFAULT_REFERENCES
    methods: tuple[str, ...] | None = None  # erasure / aopc / pointing / sanity (None: the experiment's default)
    level: str = "attention"  # erasure: attention | input
    random_draws: int = 20
    seeds: tuple[int, ...] = (1, 2)  # seed variance: extra training seeds
    retrain_steps: int | None = None  # None: the preset's max_steps
    diagnostic_steps: int = 100  # adversarial steps per example in the diagnostic
    eval_examples: int | None = None  # uniform baseline: validation examples (None: the preset's)
    device: str = "cpu"
    max_steps_cap: int | None = None  # demo servers cap retraining
    float64: bool = False  # run on a float64 copy of the model (saturated outputs; cheap for small models)
    label_randomisation: bool = False  # sanity: also retrain on shuffled labels and compare the maps (Adebayo's data test)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def seed_name(checkpoint: str, seed: int) -> str:
    return f"{checkpoint}-seed{seed}"


def uniform_name(checkpoint: str) -> str:
    return f"{checkpoint}-uniform"


def shuffled_name(checkpoint: str) -> str:
    return f"{checkpoint}-shuffled"


def private_copy(model: nn.Module) -> nn.Module:
    """A deep copy in eval mode: captum's hooks on it cannot disturb other users of a cached model."""
    return copy.deepcopy(model).eval()


def _settings(name: str, bundle: Bundle, held: HeldOut | None, opts: ExperimentOptions) -> dict[str, Any]:
    return {"checkpoint": bundle.name, "family": bundle.family, "n_examples": None if held is None else len(held),
            "examples": None if held is None else held.description, "options": opts.to_dict(),
            "encoder": getattr(getattr(bundle.model, "config", None), "encoder", None),  # which published figures apply
            "dtype": "float64" if opts.float64 else str(model_dtype(bundle.model)).replace("torch.", "")}


def iter_experiment(name: str, bundle: Bundle, options: ExperimentOptions | None = None, workspace: Workspace | None = None,
                    stop: StopFlag = None, held: HeldOut | None = None, caps: DemoCaps | None = None) -> ExperimentGen:
    """The experiment ``name`` on ``bundle`` (a loaded playground.bundle.Bundle) as a progress generator.

    ``caps`` (default FULL_CAPS) bounds examples, permutations, steps and seeds (TooBigError).

    ``held`` reuses already drawn examples (their queries must use the model given as bundle.model).
    """
    if name not in EXPERIMENTS:
        raise PlaygroundError(f"Unknown experiment {name!r}; choose one of {', '.join(EXPERIMENTS)}.")
    o = options or ExperimentOptions()
    if o.n < 1:
        raise PlaygroundError("Use at least one example.")
    check_experiment_options(o, caps)  # every size bounded before anything is drawn or run
    if name == "uniform":
        return (yield from _uniform(bundle, o, workspace, stop))
    if name == "seeds":
        return (yield from _seeds(bundle, o, workspace, stop))
    shuffled = None
    if name == "sanity" and o.label_randomisation:
        shuffled = yield from _shuffled_model(bundle, o, workspace, stop)
        if shuffled is None:  # stopped while retraining
            return sa.SanityResult(settings=_settings(name, bundle, None, o), stopped=True, n_requested=o.n)
    if held is None:
        yield Progress(name, 0, o.n, "drawing held-out examples")
        held = load_held_out(bundle, o.n, o.seed, workspace)
    if o.float64:
        held = dataclasses.replace(held, queries=queries_in_float64(held.queries))
    settings = _settings(name, bundle, held, o)
    if shuffled is not None:
        settings["label_randomisation"] = shuffled.info
    result = yield from _on_examples(name, held, o, stop, settings, None if shuffled is None else shuffled.model)
    result.extra["numerics"] = numerics_of(held.queries)
    result.extra["example_labels"] = held.labels[: len(held)]
    if name == "adversarial":
        result.extra["units"] = {key: held.units[int(key)] for key in result.extra.get("attention", {})}
    return result


def numerics_of(queries: Sequence[Query]) -> dict[str, Any]:
    """How many examples' outputs are saturated at the model's precision (their τ, gradients and
    leave-one-out changes then rank rounding noise): what the summary warns about."""
    sats = [saturation(q) for q in queries]
    if not sats:
        return {}
    complement = np.concatenate([s.complement for s in sats])
    flagged = np.concatenate([s.saturated for s in sats])
    return {"dtype": sats[0].dtype, "eps": sats[0].eps, "noise_ulps": NOISE_ULPS, "n": int(flagged.size),
            "n_saturated": int(flagged.sum()), "min_complement": float(complement.min())}


def _on_examples(name: str, held: HeldOut, o: ExperimentOptions, stop: StopFlag, settings: dict[str, Any],
                 shuffled: nn.Module | None = None) -> ExperimentGen:
    q = held.queries
    if name == "agreement":
        layer, head = _layer_head(held, o)
        return (yield from jw.iter_agreement(q, o.views, o.references, layer=layer, head=head, stop=stop,
                                             settings=settings))
    if name == "permutation":
        return (yield from jw.iter_permutation(q, o.module, o.heads, o.n_perm, o.seed, stop, settings))
    if name == "adversarial":
        return (yield from jw.iter_adversarial(q, o.module, o.heads, o.k, o.epsilon, o.steps, o.lr, seed=o.seed,
                                               stop=stop, settings=settings))
    if name == "diagnostic":
        return (yield from wp.iter_diagnostic(q, held.gold, None, wp.DIAGNOSTIC_VARIANTS, o.module, o.heads, o.seed,
                                              o.diagnostic_steps, o.epsilon, stop, settings))
    if name == "erasure":
        return (yield from er.iter_erasure(q, o.methods or er.ERASURE_METHODS, o.level, o.module, o.heads,
                                           o.random_draws, o.seed, stop=stop, settings=settings))
    if name == "aopc":
        return (yield from er.iter_curves(q, o.methods or er.CURVE_METHODS, er.AOPC_BINS, max(1, o.random_draws // 2),
                                          o.seed, o.module, o.heads, stop=stop, settings=settings))
    if name == "causal":
        return (yield from iter_causal(q, stop=stop, settings=settings))
    if name == "sanity":
        if shuffled is not None and o.float64:
            shuffled = float64_model(shuffled)
        return (yield from sa.iter_sanity(q, o.methods or sa.SANITY_METHODS, o.seed, stop=stop, settings=settings,
                                          shuffled=shuffled))
    return (yield from er.iter_pointing(q, held.masks, o.methods or er.POINTING_METHODS, o.seed, stop=stop,
                                        settings=settings))


@dataclass
class ShuffledModel:
    """The model retrained on shuffled labels and what the result records about it."""

    model: nn.Module
    info: dict[str, Any]


def label_shuffle_override(family: str) -> dict[str, Any]:
    """The preset override that retrains a model of ``family`` on shuffled training labels.

    Raises ConfigError where the family has none (its explainer says so)."""
    override = get_family(family).explainer.label_shuffle_override
    if override is not None:
        return dict(override)
    raise ConfigError(
        f"Data-label randomisation does not fit the {family} models: it needs a classifier whose training labels "
        "can be permuted and that retrains in minutes, and their targets are the text (or output sequence) itself, "
        "so there are no labels to shuffle. The cascading model randomisation still runs without this option.")


_NO_SWITCH = ("the {family} data path does not report shuffling the training labels (its adapter has no "
              "label-shuffling switch), so a retrain would learn the true labels and its maps cannot serve the "
              "data-label test.")


def _shuffled_model(bundle: Bundle, o: ExperimentOptions, workspace: Workspace | None,
                    stop: StopFlag) -> Generator[Progress, None, ShuffledModel | None]:
    """Retrain the checkpoint's preset on shuffled labels into ``<checkpoint>-shuffled`` (an own
    one is reused), load it, check it reads the same inputs, and measure both models' validation
    accuracy (true labels); None when stopped during the retrain."""
    override = label_shuffle_override(bundle.family)  # refuse before anything is trained
    if workspace is None:
        raise PlaygroundError("Data-label randomisation trains a new checkpoint: it needs a workspace.")
    name = shuffled_name(bundle.name)
    steps = o.retrain_steps or get_family(bundle.family).explainer.quick_retrain_steps
    reused = _own(workspace).exists("models", name)
    if reused:
        yield Progress("sanity", 0, o.n, f"reusing {name} (trained on shuffled labels)")
    else:
        yield Progress("sanity", 0, o.n, "checking the data path shuffles the training labels")
        _, prep, _ = prepare_data(bundle, workspace, override)
        if prep.info.get("shuffled_labels") is not True:  # refuse before minutes of training
            raise ConfigError(_NO_SWITCH.format(family=bundle.family))
        for ev in wp.iter_retrain(bundle, workspace, name, override, steps, o.device, stop, o.max_steps_cap):
            yield Progress("sanity", 0, o.n, f"retraining on shuffled labels: {ev.message}")
        if is_stopped(stop):
            return None
    shuffled = _load(name, _own(workspace), o.device)
    if (shuffled.config.get("data") or {}).get("shuffled_labels") is not True:  # the adapter's own record
        raise ConfigError(f"{name} was not trained on shuffled labels: " + _NO_SWITCH.format(family=bundle.family))
    _check_same_inputs(bundle, shuffled)
    yield Progress("sanity", 0, o.n, "validation accuracy of both models (true labels)")
    evaluate = wp.evaluator_for(bundle, workspace, o.device, o.eval_examples)
    trained_acc, shuffled_acc = evaluate(bundle.model).get("accuracy"), evaluate(shuffled.model).get("accuracy")
    classes = bundle.class_names or []
    info = {"checkpoint": name, "reused": reused, "steps": shuffled.config.get("step"),
            "val_accuracy_trained": trained_acc, "val_accuracy_shuffled": shuffled_acc,
            "chance": 1.0 / len(classes) if classes else None}
    return ShuffledModel(private_copy(shuffled.model), info)


def _check_same_inputs(bundle: Bundle, other: Bundle) -> None:
    """Refuse a retrained model that reads the inputs differently (another vocabulary or structure)."""
    same_vocab = (bundle.tokenizer is None) == (other.tokenizer is None) and (
        bundle.tokenizer is None or bundle.tokenizer.get_vocab() == other.tokenizer.get_vocab())
    same_shapes = {n: p.shape for n, p in bundle.model.named_parameters()} == {
        n: p.shape for n, p in other.model.named_parameters()}
    if not (same_vocab and same_shapes):
        raise PlaygroundError(f"{other.name} does not read the inputs as {bundle.name} does (another vocabulary or "
                              "model shape); delete it and run again to retrain it from this checkpoint's preset.")


def _layer_head(held: HeldOut, o: ExperimentOptions) -> tuple[int | None, int | None]:
    """The per-input analyzer's (layer index, head) for the chosen module / a single chosen head."""
    layer = None
    if o.module and held.queries:
        names = explaining_maps(held.queries[0])
        if o.module not in names:
            raise PlaygroundError(f"Attention module {o.module!r} is not one of {names}.")
        layer = names.index(o.module)
    head = o.heads[0] if o.heads is not None and len(o.heads) == 1 else None
    return layer, head


def _own(workspace: Workspace | None) -> Workspace | None:
    """Where a user's derived runs (`<ckpt>-uniform`, `<ckpt>-seedN`) are looked up: their own
    entries only in the app (never one someone else shared under that name), the workspace itself
    in the CLI."""
    return getattr(workspace, "own", workspace)


def _load(name: str, workspace: Workspace | None, device: str) -> Bundle:
    return load_bundle(name, workspace, device=device)


def _uniform(bundle: Bundle, o: ExperimentOptions, workspace: Workspace | None, stop: StopFlag) -> ExperimentGen:
    yield Progress("uniform", 0, 3, "rebuilding the validation data")
    evaluate = wp.evaluator_for(bundle, workspace, o.device, o.eval_examples)
    retrained = None
    own = _own(workspace)
    if own is not None and own.exists("models", uniform_name(bundle.name)):
        retrained = _load(uniform_name(bundle.name), own, o.device).model
    settings = _settings("uniform", bundle, None, o)
    settings["retrained"] = uniform_name(bundle.name) if retrained is not None else None
    return (yield from wp.iter_uniform(bundle.model, evaluate, None, retrained, stop, settings))


def iter_retrain_uniform(bundle: Bundle, workspace: Workspace, options: ExperimentOptions | None = None,
                         stop: StopFlag = None) -> ExperimentGen:
    """Retrain the checkpoint's preset with frozen uniform attention into ``<checkpoint>-uniform``
    (ConfigError when the models have no such switch)."""
    o = options or ExperimentOptions()
    overrides = wp.uniform_model_override(bundle.family)
    return (yield from wp.iter_retrain(bundle, workspace, uniform_name(bundle.name), overrides, o.retrain_steps,
                                       o.device, stop, o.max_steps_cap))


def _seeds(bundle: Bundle, o: ExperimentOptions, workspace: Workspace | None, stop: StopFlag) -> ExperimentGen:
    if workspace is None:
        raise PlaygroundError("Seed variance trains new checkpoints: it needs a workspace.")
    seeds = [s for s in dict.fromkeys(o.seeds)]
    if not seeds:
        raise PlaygroundError("Give at least one extra training seed (e.g. 1,2).")
    names = []
    for s in seeds:
        name = seed_name(bundle.name, s)
        names.append(name)
        if _own(workspace).exists("models", name):
            yield Progress("seeds", 0, o.n, f"reusing {name}")
            continue
        for ev in wp.iter_retrain(bundle, workspace, name, {"train.seed": s}, o.retrain_steps, o.device, stop,
                                  o.max_steps_cap):
            yield Progress("seeds", 0, o.n, f"training {name}: {ev.message}")
        if is_stopped(stop):
            result = wp.SeedResult(settings=_settings("seeds", bundle, None, o), stopped=True, n_requested=o.n)
            return result
    models = [bundle.model] + [_load(n, workspace, o.device).model for n in names]
    held = load_held_out(bundle, o.n, o.seed, workspace)
    settings = _settings("seeds", bundle, held, o)
    settings["models"] = [bundle.name, *names]
    adv = None
    if o.steps > 0:
        adv_gen = jw.iter_adversarial(held.queries, o.module, None, o.k, o.epsilon, o.steps, o.lr, seed=o.seed,
                                      stop=stop, keep_attention=False)
        while True:
            try:
                ev = next(adv_gen)
            except StopIteration as done:
                adv = done.value
                break
            yield Progress("seeds", 0, o.n, f"adversarial search: {ev.done}/{ev.total}", ev.elapsed_s)
        adv_jsd = [float("nan")] * len(held)
        for r in adv.rows:
            adv_jsd[r.example] = r.max_jsd
        settings["adversarial"] = {"epsilon": adv.settings["epsilon"], "steps": o.steps}
    else:
        adv_jsd = None
    return (yield from wp.iter_seed_variance(models, held.queries, o.module, adv_jsd, stop, settings))


def parse_heads(text: str | None) -> list[int] | None:
    """'all' / '' -> None; '0, 2' -> [0, 2]."""
    if text is None or not str(text).strip() or str(text).strip().lower() == "all":
        return None
    try:
        return [int(t) for t in str(text).replace(" ", "").split(",") if t]
    except ValueError:
        raise PlaygroundError(f"Heads must be 'all' or comma-separated numbers like 0,2; got {text!r}.") from None


def parse_ints(text: str | Sequence[int] | None) -> tuple[int, ...]:
    """'1, 2,3' -> (1, 2, 3)."""
    if text is None:
        return ()
    if not isinstance(text, str):
        return tuple(int(t) for t in text)
    try:
        return tuple(int(t) for t in text.replace(" ", "").split(",") if t)
    except ValueError:
        raise PlaygroundError(f"Expected comma-separated whole numbers, got {text!r}.") from None


def module_choices(model: nn.Module, family: str) -> list[str]:
    """Attention modules an experiment can intervene on in a model of ``family`` (last layer first in the UI)."""
    return list(reversed(get_family(family).explainer.explaining_maps(model)))


__all__ = ["EXPERIMENTS", "ExperimentOptions", "iter_experiment", "iter_retrain_uniform", "parse_heads", "parse_ints",
           "module_choices", "seed_name", "uniform_name", "shuffled_name", "label_shuffle_override", "private_copy"]
