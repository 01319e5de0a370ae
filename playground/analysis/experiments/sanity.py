"""Sanity checks for explanations (Adebayo et al., NeurIPS 2018): cascading model randomisation.

An explanation of a model's output should depend on the model's weights. The cascade
re-initialises the model's layers from the output side down, one more layer each step, and
after each step recomputes every method's map on the same inputs (the same explained output:
the trained model's target). The rank correlation (Spearman ρ over the real input units) of
each map with the trained model's map, per number of layers randomised, is the result; a method
whose maps stay highly correlated after the top half of the layers is random (mean ρ of the
absolute maps > ``threshold``, 0.9) is flagged: its map does not depend on the weights it explains.

- The layers come from the model itself: its top-level children (lists of blocks expanded one
  level) that own parameters, ordered by when the explained output F first calls them or any
  of their submodules (forward pre-hooks), reversed. Parameters on no called module (a CLS token, a learned attention
  query) join the input-most layer, so randomising every layer randomises every parameter;
  a parameter shared by two layers (tied embedding / output head) goes with the input-most one.
- Randomising a layer redraws each of its parameter tensors from a Gaussian with that tensor's
  trained mean and standard deviation (activations keep their range); a constant tensor
  (std 0: an untrained bias or LayerNorm gain) is left as it is. Randomness comes from a seeded
  ``torch.Generator``; the work happens on deep copies, never on the model handed in.
- ``embedding_norm`` is a control: ‖e_u‖ of the input embedding of each unit, which depends
  only on the input-most layer, so it stays at ρ = 1 until that layer is randomised; it shows
  what a flagged method looks like.

Data-label randomisation (the paper's second test) compares each map of the trained model with
the same method's map of a model retrained on the same inputs with the training labels permuted
(``shuffled``: the runner retrains it through the trainer, ``data.shuffle_labels``). Its rows
have ``test = "labels"``; a method whose maps keep mean ρ of the absolute maps above
``threshold`` is flagged: it does not reflect what the labels taught the model.
"""
from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import torch
from torch import Tensor, nn

from playground.analysis.experiments.core import (
    ExperimentGen,
    ExperimentResult,
    ProgressFn,
    StopFlag,
    drive,
    loop_examples,
    make_generator,
    row_stats,
)
from playground.analysis.experiments.jain_wallace import (
    compute_importances,
    methods_for,
    real_unit_mask,
)
from playground.analysis.explain.agreement import spearman_rho
from playground.analysis.query import Query
from playground.errors import PlaygroundError
from playground.families import family_of

SANITY_METHODS = ("attention", "saliency", "ixg", "ig", "loo", "embedding_norm")
CONTROL_METHODS = frozenset({"embedding_norm"})  # defined to ignore every weight above the input embedding
FLAG_THRESHOLD = 0.9

ImportanceFn = Callable[[Query], dict[str, np.ndarray]]


# ----------------------------------------------------------------------------------------
# The layers and their randomisation


@dataclass(frozen=True)
class Layer:
    """One step of the cascade: a module name and the parameter names it re-initialises."""

    name: str
    params: tuple[str, ...]


def _candidates(model: nn.Module) -> list[tuple[str, nn.Module]]:
    """Top-level children that own parameters; a ModuleList / Sequential is expanded one level."""
    out: list[tuple[str, nn.Module]] = []
    for name, child in model.named_children():
        if isinstance(child, (nn.ModuleList, nn.Sequential)):
            out += [(f"{name}.{k}", m) for k, m in child.named_children()]
        else:
            out.append((name, child))
    return [(n, m) for n, m in out if next(m.parameters(), None) is not None]


def cascade_layers(query: Query) -> list[Layer]:
    """The model's layers in cascade order (output side first), from one forward of the explained F.

    Raises PlaygroundError when F calls no parameterised module.
    """
    model = query.model
    units = _candidates(model)
    order: list[str] = []
    hooks = []
    for name, module in units:
        def hook(mod: nn.Module, args: Any, name: str = name) -> None:
            if name not in order:
                order.append(name)
        # every submodule: a model may call a child's parts (decoder.rnn) without the child's forward
        hooks += [sub.register_forward_pre_hook(hook) for sub in module.modules()]
    try:
        query.score()
    finally:
        for h in hooks:
            h.remove()
    if not order:
        raise PlaygroundError("The explained output calls no module with parameters; nothing to randomise.")
    modules = dict(units)
    id_to_name = {id(p): n for n, p in model.named_parameters()}
    claimed: set[int] = set()
    groups: list[Layer] = []
    for name in order:  # input side first: shared parameters go to the input-most layer
        ids = [id(p) for p in modules[name].parameters() if id(p) not in claimed]
        if name == order[0]:  # loose parameters (CLS token, attention query, ...) join the input-most layer
            in_called = {id(p) for n in order for p in modules[n].parameters()}
            ids += [i for i in id_to_name if i not in in_called and i not in ids]
        claimed.update(ids)
        if ids:
            groups.append(Layer(name, tuple(id_to_name[i] for i in ids)))
    return groups[::-1]


def randomise_layer(model: nn.Module, layer: Layer, generator: torch.Generator) -> None:
    """Redraw each parameter of ``layer`` in place: N(trained mean, trained std); constants stay."""
    params = dict(model.named_parameters())
    with torch.no_grad():
        for name in layer.params:
            p = params[name]
            flat = p.detach().double().flatten()
            std = float(flat.std()) if flat.numel() > 1 else 0.0
            if std == 0.0:
                continue
            noise = torch.randn(p.shape, generator=generator, dtype=torch.float64)  # CPU generator
            p.copy_((noise * std + float(flat.mean())).to(device=p.device, dtype=p.dtype))


def cascade_models(model: nn.Module, layers: Sequence[Layer], seed: int) -> list[nn.Module]:
    """Deep copies [trained, top 1 random, top 2 random, ...] (len(layers) + 1 models, eval mode)."""
    g = make_generator(seed)
    current = copy.deepcopy(model).eval()
    models = [current]
    for layer in layers:
        current = copy.deepcopy(current)
        randomise_layer(current, layer, g)
        models.append(current)
    return models


def with_model(query: Query, model: nn.Module) -> Query:
    """The same inputs and explained output as ``query`` on another model of the same structure."""
    return dataclasses.replace(query, model=model, layer=family_of(model).input_embedding(model))


# ----------------------------------------------------------------------------------------
# Maps


def embedding_norm(query: Query) -> np.ndarray:
    """‖e_u‖ of the input embedding of each unit of a one-example query, [U] (the control map)."""
    seen: list[Tensor] = []
    handle = query.layer.register_forward_hook(lambda mod, args, out: seen.append(out))
    try:
        query.score()
    finally:
        handle.remove()
    if not seen:
        raise PlaygroundError("The input embedding layer was not called by the explained output.")
    emb = query.explainer.layer_units(query, seen[0])  # [1,U,D]
    return emb[0].detach().double().norm(dim=-1).cpu().numpy()  # [U]


def sanity_importances(query: Query, methods: Sequence[str], ig_steps: int = 50) -> dict[str, np.ndarray]:
    """Every method's map over the input units [U] of a one-example query."""
    rest = [m for m in methods if m != "embedding_norm"]
    out = compute_importances(query, rest, ig_steps=ig_steps) if rest else {}
    if "embedding_norm" in methods:
        out["embedding_norm"] = embedding_norm(query)
    return out


def map_correlations(trained: np.ndarray, other: np.ndarray, mask: np.ndarray) -> tuple[float, float]:
    """(Spearman ρ of the maps, ρ of their absolute values) over the units in ``mask`` (NaN when constant)."""
    a, b = np.asarray(trained, dtype=np.float64)[mask], np.asarray(other, dtype=np.float64)[mask]
    return spearman_rho(a, b)[0], spearman_rho(np.abs(a), np.abs(b))[0]


# ----------------------------------------------------------------------------------------
# The experiment


@dataclass
class SanityRow:
    """One example, one method, one step of the cascade: the map's correlation with the trained one."""

    example: int
    method: str
    step: int  # layers randomised from the output side (0 = the trained model)
    layer: str  # the layer randomised at this step ("" at step 0)
    n_units: int
    spearman: float
    spearman_abs: float
    test: str = "cascade"  # "cascade" (layers randomised) or "labels" (retrained on shuffled labels)


LABELS_TEST = "labels"
LABELS_LAYER = "retrained on shuffled labels"


@dataclass
class SanityResult(ExperimentResult):
    """Per example × method × step correlations; settings name the layers (output first).

    Rows of the data-label test (``test == "labels"``, step 0) compare the trained map with the
    map of the model retrained on shuffled labels; ``settings["label_randomisation"]`` describes
    that model (name, steps, validation accuracy beside the trained model's and chance)."""

    experiment: ClassVar[str] = "sanity"

    def curve_frame(self) -> pd.DataFrame:
        """Mean ρ per method and step (the chart's lines): method, step, layer, spearman, spearman_abs, n."""
        frame = self.to_frame()
        if not frame.empty and "test" in frame:
            frame = frame[frame["test"] != LABELS_TEST]
        if frame.empty:
            return pd.DataFrame(columns=["method", "step", "layer", "spearman", "spearman_abs", "n"])
        return (frame.groupby(["method", "step", "layer"], sort=False)
                .agg(spearman=("spearman", "mean"), spearman_abs=("spearman_abs", "mean"), n=("spearman", "count"))
                .reset_index().sort_values(["method", "step"], kind="stable").reset_index(drop=True))

    def half_step(self) -> int:
        """The step at which the top half of the layers is random: ceil(L / 2)."""
        return max(1, math.ceil(len(self.settings.get("layers", [])) / 2))

    def label_frame(self) -> pd.DataFrame:
        """Mean ρ per method of the data-label test (its chart's bars): method, spearman, spearman_abs, n, flagged."""
        threshold = float(self.settings.get("threshold", FLAG_THRESHOLD))
        rows = [r for r in self.rows if r.test == LABELS_TEST]
        out = []
        for method in dict.fromkeys(r.method for r in rows):
            mine = [r for r in rows if r.method == method]
            st, signed = row_stats([r.spearman_abs for r in mine]), row_stats([r.spearman for r in mine])
            out.append({"method": method, "spearman_abs": st["mean"], "spearman": signed["mean"], "n": st["n"],
                        "flagged": bool(math.isfinite(st["mean"]) and st["mean"] > threshold)})
        return pd.DataFrame(out, columns=["method", "spearman_abs", "spearman", "n", "flagged"])

    def stats(self) -> dict[str, Any]:
        threshold = float(self.settings.get("threshold", FLAG_THRESHOLD))
        half = self.half_step()
        n_layers = len(self.settings.get("layers", []))
        labels = {r["method"]: r for r in self.label_frame().to_dict(orient="records")}
        cascade = [r for r in self.rows if r.test != LABELS_TEST]
        methods = []
        for method in dict.fromkeys(r.method for r in cascade):
            rows = [r for r in cascade if r.method == method]
            at_half = row_stats([r.spearman_abs for r in rows if r.step == half])
            at_all = row_stats([r.spearman_abs for r in rows if r.step == n_layers])
            signed_all = row_stats([r.spearman for r in rows if r.step == n_layers])
            flagged = bool(math.isfinite(at_half["mean"]) and at_half["mean"] > threshold)
            entry = {"method": method, "n": at_half["n"], "rho_abs_half": at_half["mean"],
                     "rho_abs_all": at_all["mean"], "rho_all": signed_all["mean"], "flagged": flagged,
                     "control": method in CONTROL_METHODS}
            if labels:
                got = labels.get(method, {})
                entry.update({"rho_abs_labels": got.get("spearman_abs", math.nan),
                              "rho_labels": got.get("spearman", math.nan),
                              "flagged_labels": bool(got.get("flagged", False))})
            methods.append(entry)
        return {"methods": methods, "half_step": half, "n_layers": n_layers, "threshold": threshold,
                "flagged": [m["method"] for m in methods if m["flagged"]],
                "labels_run": bool(labels),
                "flagged_labels": [m for m, r in labels.items() if r["flagged"]]}


def iter_sanity(
    queries: Sequence[Query],
    methods: Sequence[str] = SANITY_METHODS,
    seed: int = 0,
    threshold: float = FLAG_THRESHOLD,
    importance_fn: ImportanceFn | None = None,
    ig_steps: int = 50,
    stop: StopFlag = None,
    settings: dict[str, Any] | None = None,
    shuffled: nn.Module | None = None,
) -> ExperimentGen:
    """Cascading randomisation over one-example ``queries`` of one model (their ``query.model``).

    The cascade of models (deep copies, seeded by ``seed``) is built once from the first query;
    ``importance_fn(query) -> {method: [U]}`` defaults to :func:`sanity_importances` over ``methods``.
    ``shuffled``: a model of the same structure retrained on shuffled labels (same inputs, same
    explained output); each example then also gets one ``test = "labels"`` row per method.
    """
    queries = list(queries)
    if not queries:
        raise PlaygroundError("Give at least one example.")
    skipped: list[str] = []
    if importance_fn is None:
        usable, skipped = methods_for(queries[0], [m for m in methods if m not in CONTROL_METHODS])
        methods = [*usable, *[m for m in methods if m in CONTROL_METHODS]]
        if not methods:
            raise PlaygroundError(f"None of the chosen methods apply to this model (skipped: {skipped}).")
        chosen = list(methods)
        importance_fn = lambda q: sanity_importances(q, chosen, ig_steps)
    layers = cascade_layers(queries[0])
    models = cascade_models(queries[0].model, layers, seed)
    result = SanityResult(settings={"methods": list(methods), "skipped_methods": skipped, "seed": seed,
                                    "threshold": threshold, "layers": [layer.name for layer in layers],
                                    "ig_steps": ig_steps, **(settings or {})})

    def work(i: int, q: Query) -> list[SanityRow]:
        mask = real_unit_mask(q)
        maps = [importance_fn(with_model(q, m)) for m in models]
        rows = []
        for method, trained in maps[0].items():
            for step, current in enumerate(maps):
                rho, rho_abs = map_correlations(trained, current[method], mask)
                rows.append(SanityRow(i, method, step, layers[step - 1].name if step else "", int(mask.sum()),
                                      rho, rho_abs))
        if shuffled is not None:
            retrained = importance_fn(with_model(q, shuffled))
            for method, trained in maps[0].items():
                rho, rho_abs = map_correlations(trained, retrained[method], mask)
                rows.append(SanityRow(i, method, 0, LABELS_LAYER, int(mask.sum()), rho, rho_abs, LABELS_TEST))
        return rows

    return (yield from loop_examples("sanity", queries, result, work, stop))


def sanity(queries: Sequence[Query], methods: Sequence[str] = SANITY_METHODS, seed: int = 0,
           progress: ProgressFn | None = None, **kw: Any) -> SanityResult:
    """:func:`iter_sanity` run to the end."""
    return drive(iter_sanity(queries, methods, seed, **kw), progress)
