"""Wiegreffe & Pinter (EMNLP 2019), "Attention is not not Explanation", over a set of examples.

- Uniform baseline: the model's validation metrics (loss, accuracy, exact match: the
  trainer's own evaluation) with every attention frozen uniform over the visible positions
  (``uniform_override``) next to the learned attention; optionally a model retrained with
  uniform attention for the fair comparison.
- Seed variance: JSD between the explained attention rows of models trained from the same
  preset with different seeds, on the same inputs — the yardstick for adversarial JSD.
- Diagnostic: a non-contextual predictor (logistic regression on the attention-weighted
  average of the frozen input embeddings) with learned, uniform, permuted and adversarial
  weights; learned attention that carries information helps it, the others should not.
"""
from __future__ import annotations

import dataclasses
import itertools
import math
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch
from torch import Tensor, nn

from playground.analysis.divergences import jsd
from playground.analysis.experiments.core import (
    ExperimentGen,
    ExperimentResult,
    Probe,
    Progress,
    ProgressFn,
    StopFlag,
    drive,
    is_stopped,
    loop_examples,
    make_generator,
    row_stats,
)
from playground.analysis.experiments.data import prepare_data
from playground.analysis.experiments.jain_wallace import adversarial_one
from playground.analysis.query import Query
from playground.bundle import Bundle
from playground.errors import ConfigError, PlaygroundError
from playground.families import family_of, get_family
from playground.models.attention import attention_modules, override_attention, uniform_override
from playground.training.config import preset_from_sections
from playground.training.device import device_caps
from playground.training.engine import train
from playground.workspace import Workspace

# ========================================================================================
# Uniform baseline


@dataclass
class UniformRow:
    """One model variant's validation metric."""

    variant: str  # "learned" | "uniform (frozen at test time)" | "uniform (retrained)"
    metric: str
    value: float


@dataclass
class UniformResult(ExperimentResult):
    experiment: ClassVar[str] = "uniform"

    def table(self):
        """Wide DataFrame: one row per metric, one column per variant."""
        frame = self.to_frame()
        if frame.empty:
            return frame
        return frame.pivot_table(index="metric", columns="variant", values="value", sort=False).reset_index()

    def stats(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for r in self.rows:
            out.setdefault(r.variant, {})[r.metric] = r.value
        return {"variants": out}


LEARNED, UNIFORM, RETRAINED = "learned", "uniform (frozen at test time)", "uniform (retrained)"


def uniform_overrides(model: nn.Module, modules: Sequence[str] | None = None) -> dict[str, Any]:
    """``{name: uniform_override()}`` for the chosen (default: every) attention module."""
    names = list(attention_modules(model)) if modules is None else list(modules)
    if not names:
        raise PlaygroundError("This model has no attention to make uniform.")
    return {n: uniform_override() for n in names}


def iter_uniform(
    model: nn.Module,
    evaluate: Callable[[nn.Module], dict[str, float]],
    modules: Sequence[str] | None = None,
    retrained: nn.Module | None = None,
    stop: StopFlag = None,
    settings: dict[str, Any] | None = None,
) -> ExperimentGen:
    """Metrics of ``model`` with learned attention, then with every (or the chosen) attention
    frozen uniform over the visible positions, then of ``retrained`` (a model trained with
    uniform attention) if given. ``evaluate(model) -> {metric: value}``."""
    result = UniformResult(settings={"modules": None if modules is None else list(modules), **(settings or {})})
    variants: list[tuple[str, nn.Module, dict[str, Any] | None]] = [
        (LEARNED, model, None), (UNIFORM, model, uniform_overrides(model, modules))]
    if retrained is not None:
        variants.append((RETRAINED, retrained, None))
    total = len(variants)
    result.n_requested = total
    t0 = time.perf_counter()
    yield Progress("uniform", 0, total, "evaluating with learned attention", 0.0, result)
    for i, (name, m, ov) in enumerate(variants):
        if is_stopped(stop):
            result.stopped = True
            break
        if ov is None:
            metrics = evaluate(m)
        else:
            with override_attention(m, ov):
                metrics = evaluate(m)
        for key, value in metrics.items():
            if isinstance(value, (int, float)) and "@" not in key:
                result.rows.append(UniformRow(name, key, float(value)))
        result.examples_done = i + 1
        result.elapsed_s = time.perf_counter() - t0
        yield Progress("uniform", i + 1, total, f"evaluated: {name}", result.elapsed_s, result)
    return result


def evaluator_for(bundle: Bundle, workspace: Workspace | None = None, device: str = "cpu",
                  eval_examples: int | None = None) -> Callable[[nn.Module], dict[str, float]]:
    """``evaluate(model)`` = the trainer's validation metrics for the bundle's data (val_loss,
    accuracy / token_accuracy / exact_match), run in eval mode without gradients."""
    adapter, prep, spec = prepare_data(bundle, workspace)
    cfg = dataclasses.replace(spec.train, preview=False)
    if eval_examples is not None:
        cfg.eval_examples = eval_examples
    caps = device_caps(device, "fp32", False)

    def evaluate(model: nn.Module) -> dict[str, float]:
        was = model.training
        model.eval()
        try:
            with torch.no_grad():
                return adapter.evaluate(model, prep, cfg, caps)
        finally:
            model.train(was)

    return evaluate


def uniform(model: nn.Module, evaluate: Callable[[nn.Module], dict[str, float]], progress: ProgressFn | None = None,
            **kwargs: Any) -> UniformResult:
    """:func:`iter_uniform` run to the end."""
    return drive(iter_uniform(model, evaluate, **kwargs), progress)


# -- retraining (through the trainer) -------------------------------------------------------

def uniform_model_override(family: str) -> dict[str, Any]:
    """The preset override that trains a model of ``family`` with frozen uniform attention (the
    family's explainer knows its switch).

    Raises ConfigError when the family has none (ask for one: the models must support it so the
    trainer can build and save such a model)."""
    override = get_family(family).explainer.uniform_override
    if override is not None:
        return dict(override)
    raise ConfigError(
        f"The {family} models have no switch for frozen uniform attention yet, so a uniform copy cannot be "
        "retrained; compare with the test-time uniform numbers instead."
    )


def iter_retrain(
    bundle: Bundle,
    workspace: Workspace,
    name: str,
    overrides: dict[str, Any] | None = None,
    max_steps: int | None = None,
    device: str = "auto",
    stop: StopFlag = None,
    max_steps_cap: int | None = None,
) -> Iterator[Progress]:
    """Retrain the bundle's preset (its stored sections) into ``name`` with ``overrides``;
    yields Progress events (done = step) and returns the new bundle's name."""
    sections = bundle.config.get("sections")
    if not sections:
        raise PlaygroundError(f"Checkpoint {bundle.name!r} has no preset sections (not written by the trainer); "
                              "it cannot be retrained.")
    preset = preset_from_sections(sections, bundle.config.get("preset") or bundle.name)
    ov = dict(overrides or {})
    if max_steps is not None:
        ov["train.max_steps"] = int(max_steps)
    last = None
    for ev in train(preset, workspace, name, overrides=ov, device=device, stop=stop, max_steps_cap=max_steps_cap):
        last = ev
        yield Progress("retrain", ev.step, ev.max_steps, f"{name}: step {ev.step}/{ev.max_steps} ({ev.kind})")
    return name if last is not None else None


# ========================================================================================
# Seed variance


@dataclass
class SeedRow:
    """One example: JSD between the explained attention rows of models trained with different seeds."""

    example: int
    n_models: int
    mean_jsd: float  # over the model pairs
    max_jsd: float
    adversarial_jsd: float  # from a matching adversarial result (NaN when none given)


@dataclass
class SeedResult(ExperimentResult):
    experiment: ClassVar[str] = "seeds"

    def stats(self) -> dict[str, Any]:
        return {"mean_jsd": row_stats([r.mean_jsd for r in self.rows]),
                "max_jsd": row_stats([r.max_jsd for r in self.rows]),
                "adversarial_jsd": row_stats([r.adversarial_jsd for r in self.rows])}


def with_model(query: Query, model: nn.Module) -> Query:
    """The same inputs as ``query`` explained on another model of the same family."""
    return dataclasses.replace(query, model=model, layer=family_of(model).input_embedding(model))


def iter_seed_variance(
    models: Sequence[nn.Module],
    queries: Sequence[Query],
    module: str | None = None,
    adversarial_jsd: Sequence[float] | None = None,
    stop: StopFlag = None,
    settings: dict[str, Any] | None = None,
) -> ExperimentGen:
    """Per example, JSD between every pair of ``models``' head-mean explained rows (module by name,
    default the last layer's) on the same inputs; ``adversarial_jsd[i]`` is shown beside it."""
    if len(models) < 2:
        raise PlaygroundError("Seed variance needs at least two models (the same preset trained with different seeds).")
    result = SeedResult(settings={"module": module, "n_models": len(models), **(settings or {})})

    def work(i: int, q: Query) -> SeedRow | None:
        alphas = []
        for m in models:
            p = Probe(with_model(q, m), module)
            result.settings["module"] = p.module
            alphas.append(p.alpha)
        if any(a.shape != alphas[0].shape for a in alphas):
            raise PlaygroundError("The models see different numbers of positions; use models of one preset.")
        vals = [float(jsd(a, b)) for a, b in itertools.combinations(alphas, 2)]
        adv = math.nan if adversarial_jsd is None or i >= len(adversarial_jsd) else float(adversarial_jsd[i])
        return SeedRow(i, len(models), float(np.mean(vals)), float(np.max(vals)), adv)

    return (yield from loop_examples("seeds", list(queries), result, work, stop))


def seed_variance(models: Sequence[nn.Module], queries: Sequence[Query], progress: ProgressFn | None = None,
                  **kwargs: Any) -> SeedResult:
    """:func:`iter_seed_variance` run to the end."""
    return drive(iter_seed_variance(models, queries, **kwargs), progress)


# ========================================================================================
# Diagnostic classifier


DIAGNOSTIC_VARIANTS = ("learned", "uniform", "permuted", "adversarial")


@dataclass
class DiagnosticRow:
    """One pooling variant: accuracy of the non-contextual predictor on the test examples."""

    variant: str
    n_train: int
    n_test: int
    accuracy: float
    log_loss: float


@dataclass
class DiagnosticResult(ExperimentResult):
    experiment: ClassVar[str] = "diagnostic"

    def stats(self) -> dict[str, Any]:
        return {"accuracy": {r.variant: r.accuracy for r in self.rows},
                "model_accuracy": self.extra.get("model_accuracy"),
                "majority_accuracy": self.extra.get("majority_accuracy")}


def unit_embeddings(query: Query) -> Tensor:
    """The frozen input embeddings of a one-example query's units, [U,D] (no positions)."""
    with torch.no_grad():
        e = query.layer(query.inputs)
    if e.dim() == 4:  # a convolutional patch embedding [1,D,h,w]
        e = e.flatten(2).transpose(1, 2)
    return e[0].float()  # [U,D]


def _pool(emb: Tensor, weights: np.ndarray, real: np.ndarray) -> np.ndarray:
    w = np.where(real, np.abs(weights), 0.0)
    total = w.sum()
    w = w / total if total > 0 else real / max(1, real.sum())
    return (torch.as_tensor(w, dtype=emb.dtype) @ emb.cpu()).numpy()


def iter_diagnostic(
    queries: Sequence[Query],
    labels: Sequence[int | None],
    n_train: int | None = None,
    variants: Sequence[str] = DIAGNOSTIC_VARIANTS,
    module: str | None = None,
    heads: Sequence[int] | None = None,
    seed: int = 0,
    adversarial_steps: int = 100,
    epsilon: float | None = None,
    stop: StopFlag = None,
    settings: dict[str, Any] | None = None,
) -> ExperimentGen:
    """W&P diagnostic: logistic regression on attention-pooled frozen input embeddings.

    The first ``n_train`` examples (default: 2/3) train it, the rest test it; ``labels`` are the
    true outputs (examples with None are skipped). Pooling weights per variant: learned (the
    model's explained row, head mean), uniform over the real units, permuted (the learned
    weights shuffled over the real units), adversarial (J&W adversary within ε, fewer steps).
    """
    queries = list(queries)
    if len(labels) != len(queries):
        raise ValueError("one label per query")
    n_train = n_train if n_train is not None else (2 * len(queries)) // 3
    gen = make_generator(seed)
    eps = epsilon if epsilon is not None else (queries[0].explainer.adversarial_epsilon if queries else 0.05)
    result = DiagnosticResult(settings={"variants": list(variants), "module": module, "n_train": n_train,
                                        "seed": seed, "adversarial_steps": adversarial_steps, "epsilon": eps,
                                        **(settings or {})},
                              extra={"features": {v: [] for v in variants}, "split": [], "labels": [], "model_correct": []})
    feats = result.extra["features"]

    def work(i: int, q: Query) -> None:
        label = labels[i]
        if label is None:
            return None
        probe = Probe(q, module, heads)
        result.settings["module"] = probe.module
        emb = unit_embeddings(q)  # [U,D]
        real = probe.real_unit_mask.cpu().numpy()
        learned = probe.keys_to_units(probe.alpha)
        for v in variants:
            if v == "learned":
                w = learned
            elif v == "uniform":
                w = real.astype(np.float64)
            elif v == "permuted":
                idx = np.flatnonzero(real)
                w = np.zeros_like(learned)
                w[idx] = learned[idx][torch.randperm(idx.size, generator=gen).numpy()]
            elif v == "adversarial":
                adv = adversarial_one(probe, gen, k=5, epsilon=eps, steps=adversarial_steps, stop=stop)
                w = probe.keys_to_units(adv.rows[0].mean(0)) if adv.rows.shape[0] else learned
            else:
                raise PlaygroundError(f"Unknown pooling {v!r}; choose from {DIAGNOSTIC_VARIANTS}.")
            feats[v].append(_pool(emb, w, real))
        result.extra["split"].append("train" if i < n_train else "test")
        result.extra["labels"].append(int(label))
        result.extra["model_correct"].append(int(probe.base.argmax()) == int(label))
        return None

    yield from loop_examples("diagnostic", queries, result, work, stop)
    _fit(result)
    result.extra.pop("features")
    return result


def _fit(result: DiagnosticResult) -> None:
    # function-level: scikit-learn is slow to import (~1.5 s) and only the diagnostic needs it
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import log_loss

    split = np.asarray(result.extra["split"])
    y = np.asarray(result.extra["labels"])
    tr, te = split == "train", split == "test"
    result.rows.clear()
    if tr.sum() < 2 or te.sum() < 1 or len(set(y[tr].tolist())) < 2:
        result.extra["note"] = "too few labelled examples (or one class) to fit and test the diagnostic"
        return
    classes = sorted(set(y[tr].tolist()))
    majority = max(classes, key=lambda c: int((y[tr] == c).sum()))
    result.extra["majority_accuracy"] = float((y[te] == majority).mean())
    result.extra["model_accuracy"] = float(np.asarray(result.extra["model_correct"])[te].mean())
    for v, rows in result.extra["features"].items():
        X = np.stack(rows)
        clf = LogisticRegression(max_iter=2000)
        clf.fit(X[tr], y[tr])
        prob = clf.predict_proba(X[te])
        pred = clf.classes_[prob.argmax(1)]
        known = np.isin(y[te], clf.classes_)
        ll = log_loss(y[te][known], prob[known], labels=clf.classes_) if known.any() else math.nan
        result.rows.append(DiagnosticRow(v, int(tr.sum()), int(te.sum()), float((pred == y[te]).mean()), float(ll)))


def diagnostic(queries: Sequence[Query], labels: Sequence[int | None], progress: ProgressFn | None = None,
               **kwargs: Any) -> DiagnosticResult:
    """:func:`iter_diagnostic` run to the end."""
    return drive(iter_diagnostic(queries, labels, **kwargs), progress)
