"""The per-input analysis: every chosen method over one input, their agreement, the heads.

``analyze_prepared(prepared, options)`` runs the methods on a
:class:`~playground.analysis.inputs.Prepared` query and returns an :class:`InputAnalysis`
(numbers only: the tab, the CLI and the exports format it). ``analyze_checkpoint`` is the
one-call version from a bundle and raw input.
"""
from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd
import torch

from playground.analysis.divergences import wide
from playground.analysis.explain import attention as am
from playground.analysis.explain import attributions as at
from playground.analysis.explain.agreement import agreement_table
from playground.analysis.explain.pointing import alignment_accuracy, pointing_game
from playground.analysis.explain.propagation import FLOW_MAX_TOKENS
from playground.analysis.inputs import Prepared, data_samples
from playground.analysis.numerics import (
    NOISE_ULPS,
    loo_at_noise,
    model_dtype,
    noisy_methods,
    pair_note,
    query_in_float64,
    saturation,
)
from playground.bundle import Bundle
from playground.errors import PlaygroundError
from playground.families import get_family

# name -> description (in the order the views show them)
METHODS: dict[str, str] = {
    "attention": "raw attention of one layer/head (default: last layer, mean over heads)",
    "attention_mean": "attention averaged over every layer and head",
    "rollout": "attention rollout (Abnar & Zuidema 2020)",
    "flow": "attention flow, max-flow (Abnar & Zuidema 2020)",
    "norm": "norm-weighted attention ||alpha f(x)|| (Kobayashi et al. 2020)",
    "relevancy": "gradient-weighted relevancy (Chefer et al. 2021)",
    "saliency": "gradient L2 norm over the embedding",
    "ixg": "input x gradient",
    "jw_grad": "Jain & Wallace's gradient |sum_d e * dF/de| with attention detached (a constant)",
    "ig": "integrated gradients (captum, completeness-checked)",
    "loo": "leave-one-out: replace by the baseline token / black patch (TVD of the output)",
    "loo_delete": "leave-one-out: delete the token (TVD of the output)",
    "deeplift": "DeepLift (experimental: rules do not cover softmax/LayerNorm/GELU)",
}
DEFAULT_METHODS = ("attention", "rollout", "flow", "norm", "relevancy", "saliency", "ixg", "ig", "loo")
ATTENTION_METHODS = ("attention", "attention_mean", "rollout", "flow", "norm", "relevancy")


@dataclass
class AnalysisOptions:
    """What to compute. ``layer``/``head`` choose the map of the "attention" and "norm" methods
    (None = last layer / mean over heads)."""

    methods: tuple[str, ...] = DEFAULT_METHODS
    layer: int | None = None
    head: int | None = None
    ig_steps: int = 50
    ig_auto: bool = True
    ig_max_steps: int = at.MAX_STEPS
    k: int | None = None  # top-k for Jaccard (default: a fifth of the units, 1..5)
    flow_max_tokens: int = FLOW_MAX_TOKENS
    head_window: int = 24  # keys/queries shown per head in the layer x head grid (text)
    float64: bool = False  # run every method on a float64 copy of the model (saturated outputs; cheap for small models)

    def __post_init__(self) -> None:
        unknown = [m for m in self.methods if m not in METHODS]
        if unknown:
            raise PlaygroundError(f"Unknown method(s) {unknown}; choose from {', '.join(METHODS)}.")
        if self.ig_steps < 1:
            raise PlaygroundError("IG needs at least 1 step (50 is the usual).")


@dataclass
class HeadGrid:
    """The layer x head grid: each head's map and the entropy (nats) of its explaining row.

    ``maps`` [L,H,Q,K] with ``query_labels`` / ``key_labels`` (text: a window of keys ending at
    the query; seq2seq: output x source), or for images the CLS row over the patch grid
    [L,H,rows,cols]. ``entropy`` [L,H].
    """

    names: list[str]
    maps: np.ndarray
    entropy: np.ndarray
    query_labels: list[str]
    key_labels: list[str]
    kind: str  # "matrix" | "grid"
    full: np.ndarray | None = None  # [L,H,Q,K] every recorded query and key: what the exports write


@dataclass
class InputAnalysis:
    """Everything the per-input view shows. ``importances[m]`` is [B,U] (B = 1, or the seq2seq
    output length); ``selected`` is the row the per-token views and the agreement table use."""

    prepared: Prepared
    importances: dict[str, np.ndarray]
    signed: dict[str, bool]
    agreement: Any  # pandas.DataFrame
    heads: HeadGrid | None
    ig: dict[str, Any] | None = None
    deeplift: dict[str, Any] | None = None
    pointing: Any | None = None  # pandas.DataFrame (vit-shapes samples)
    alignment: Any | None = None  # pandas.DataFrame (seq2seq validation pairs)
    timings: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    numerics: dict[str, Any] | None = None  # saturation check (playground.analysis.numerics.Saturation.to_dict)

    @property
    def units(self) -> list[str]:
        return self.prepared.units

    @property
    def keep(self) -> np.ndarray:
        """Units that take part in rankings: not special, and (GPT) not after the query."""
        return self.prepared.query.units_mask[self.prepared.selected].cpu().numpy()

    def row(self, method: str, row: int | None = None) -> np.ndarray:
        """Importances of one method for one example row [U] (default: the selected row)."""
        return self.importances[method][self.prepared.selected if row is None else row]

    def selected_importances(self) -> dict[str, np.ndarray]:
        return {m: self.row(m) for m in self.importances}

    # -- exports ------------------------------------------------------------------------
    def to_frame(self) -> pd.DataFrame:
        """Long table: one row per (method, output row, unit)."""
        p = self.prepared
        records = []
        for m, values in self.importances.items():
            for r in range(values.shape[0]):
                for u in range(values.shape[1]):
                    records.append({"method": m, "row": r, "row_label": p.rows[r], "unit": u,
                                    "unit_label": p.units[u], "special": p.special[u], "value": float(values[r, u])})
        return pd.DataFrame.from_records(records, columns=["method", "row", "row_label", "unit", "unit_label",
                                                           "special", "value"])

    def summary(self) -> dict[str, Any]:
        p = self.prepared
        return {"family": p.family, "kind": p.kind, "target_id": p.target_id, "target": p.target_label,
                "predicted_id": p.predicted_id, "predicted": p.predicted_label, "position": p.position,
                "selected_row": p.selected, "rows": p.rows, **{k: v for k, v in p.info.items()}}

    def to_dict(self) -> dict[str, Any]:
        """Everything shown, JSON-serialisable."""
        p = self.prepared
        out: dict[str, Any] = {
            "summary": self.summary(),
            "units": p.units,
            "special": p.special,
            "importances": {m: v.tolist() for m, v in self.importances.items()},
            "signed": self.signed,
            "agreement": _records(self.agreement),
            "ig": self.ig,
            "deeplift": self.deeplift,
            "pointing": _records(self.pointing),
            "alignment": _records(self.alignment),
            "timings_s": self.timings,
            "notes": self.notes,
            "numerics": self.numerics,
        }
        if self.heads is not None:
            out["heads"] = self._heads_dict()
        return _clean(out)

    def _heads_dict(self) -> dict[str, Any]:
        """The whole maps [layer, head, query, key] as the model computed them (every row sums to 1),
        and under "display" the part the page draws (a text's last keys, an image's CLS row)."""
        h, p = self.heads, self.prepared
        assert h is not None
        full = h.full if h.full is not None else h.maps
        queries, keys = full.shape[-2:]
        return {"names": h.names, "entropy": h.entropy.tolist(), "maps": full.tolist(),
                "query_labels": p.units if queries == len(p.units) else p.rows if queries == len(p.rows) else None,
                "key_labels": p.units if keys == len(p.units) else None,
                "display": {"maps": h.maps.tolist(), "query_labels": h.query_labels, "key_labels": h.key_labels,
                            "kind": h.kind}}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1, ensure_ascii=False)


def _records(df: Any) -> list[dict[str, Any]] | None:
    return None if df is None else df.to_dict(orient="records")


def _clean(obj: Any) -> Any:
    """NaN/inf -> None and numpy scalars -> Python (strict JSON)."""
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if isinstance(obj, (np.floating, float)):
        f = float(obj)
        return f if math.isfinite(f) else None
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    return obj


def supported_methods(family: str, config: Any = None) -> list[str]:
    """Methods that apply to a family, or to a model of `config` in it (the others are skipped
    with a note)."""
    explainer = get_family(family).explainer
    unavailable = explainer.unavailable if config is None else explainer.unavailable_for(config)
    return [m for m in METHODS if m not in unavailable]


def _run_method(m: str, q: Any, rec: am.Recording | None, opts: AnalysisOptions) -> at.Attribution:
    """One method by name on a query (``rec``: the recorded forward, for the attention methods)."""
    if m == "attention":
        return am.attention(q, rec, opts.layer, opts.head)  # type: ignore[arg-type]
    if m == "attention_mean":
        return am.mean_attention(q, rec)  # type: ignore[arg-type]
    if m == "rollout":
        return am.rollout(q, rec)  # type: ignore[arg-type]
    if m == "flow":
        return am.flow(q, rec, max_tokens=opts.flow_max_tokens)  # type: ignore[arg-type]
    if m == "norm":
        return am.norm_weighted(q, rec, opts.layer, opts.head)  # type: ignore[arg-type]
    if m == "relevancy":
        return am.grad_relevancy(q)
    if m == "saliency":
        return at.saliency(q)
    if m == "ixg":
        return at.input_x_gradient(q)
    if m == "jw_grad":
        return at.jw_gradient(q)
    if m == "ig":
        return at.integrated_gradients(q, opts.ig_steps, opts.ig_auto, opts.ig_max_steps)
    if m in ("loo", "loo_delete"):
        return at.leave_one_out(q, "replace" if m == "loo" else "delete")
    if m == "deeplift":
        return at.deeplift(q)
    raise PlaygroundError(f"Unknown method {m!r}.")


def analyze_prepared(prepared: Prepared, options: AnalysisOptions | None = None,
                     progress: Callable[[float, str], None] | None = None) -> InputAnalysis:
    """Run the chosen methods on a prepared query (see :mod:`playground.analysis.inputs`)."""
    opts = options or AnalysisOptions()
    if opts.float64:
        prepared = replace(prepared, query=query_in_float64(prepared.query))
    q = prepared.query
    notes: list[str] = []
    skip = q.explainer.unavailable
    methods = [m for m in opts.methods if m not in skip]
    for m in opts.methods:
        if m in skip:
            notes.append(f"{m}: not available for {prepared.family} ({METHODS[m].split(' (')[0]}).")
    has_attention = bool(am.explaining_maps(q))
    if not has_attention:
        notes += [f"{m}: this model has no attention." for m in methods if m in ATTENTION_METHODS]
        methods = [m for m in methods if m not in ATTENTION_METHODS]
    if "flow" in methods and q.explainer.attention_keys(q) > opts.flow_max_tokens:
        notes.append(f"flow: skipped, the input has more than {opts.flow_max_tokens} tokens (flow is capped; use rollout).")
        methods.remove("flow")

    values: dict[str, torch.Tensor] = {}
    signed: dict[str, bool] = {}
    timings: dict[str, float] = {}
    ig_info = dl_info = None
    rec = None
    heads = None

    def step(i: int, name: str) -> None:
        if progress is not None:
            progress(i / max(1, len(methods)), name)

    if any(m in at.CAPTUM_METHODS for m in methods):
        at.load_captum()  # outside the timings: its import is not the first gradient method's cost
    t0 = time.perf_counter()
    if has_attention:
        rec = am.record(q, values="norm" in methods)
        heads = head_grid(prepared, rec, opts.head_window)
    timings["record"] = time.perf_counter() - t0
    for i, m in enumerate(methods):
        step(i, m)
        t = time.perf_counter()
        try:
            r = _run_method(m, q, rec, opts)
        except PlaygroundError as exc:  # e.g. a method this particular model cannot support
            notes.append(f"{m}: {exc}")
            continue
        timings[m] = time.perf_counter() - t
        values[m] = r.values
        signed[m] = r.signed
        if m == "ig":
            ig_info = {"delta": r.delta.tolist(), "steps": r.steps.tolist(), "f_input": r.f_inputs.tolist(),
                       "f_baseline": r.f_baselines.tolist(), "converged": r.converged.tolist(),
                       "tolerance": r.tolerance().tolist()}
            if not bool(r.converged.all()):
                notes.append(f"ig: completeness not reached within {opts.ig_max_steps} steps for "
                             f"{int((~r.converged).sum())} row(s); read those attributions with care.")
        if m == "deeplift":
            dl_info = {"delta": r.delta.tolist(), "note": "experimental: DeepLift's rules do not cover softmax, "
                       "LayerNorm or GELU, so its attributions need not sum to F(x) - F(x')"}
    step(len(methods), "agreement")
    importances = {m: wide(v.detach()).cpu().numpy() for m, v in values.items()}  # a float64 run stays float64
    keep = q.units_mask[prepared.selected].cpu().numpy()  # real units the output can see
    sel = {m: v[prepared.selected] for m, v in importances.items()}
    table = agreement_table(sel, keep=keep, k=opts.k)
    result = InputAnalysis(prepared, importances, signed, table, heads, ig_info, dl_info,
                           timings=timings, notes=notes, numerics=numerics_check(q, values))
    if result.numerics["warning"]:
        notes.append(result.numerics["warning"])
    result.agreement = flag_noisy_pairs(table, result.numerics, prepared.selected)
    if prepared.mask is not None:  # an image with its object's mask (vit-shapes)
        result.pointing = pointing_table(result)
    if prepared.gold_alignment:  # a validation pair whose output matches the reference
        result.alignment = alignment_table(result)
    return result


def numerics_check(q: Any, values: dict[str, torch.Tensor]) -> dict[str, Any]:
    """Whether the importances sit at floating-point noise: the output saturated within
    NOISE_ULPS machine epsilons, or every leave-one-out change that small; ``warning`` says so
    ('' when neither), beside the numbers."""
    sat = saturation(q)
    dtype = model_dtype(q.model)
    loo_noise = {m: loo_at_noise(values[m], dtype) for m in ("loo", "loo_delete") if m in values}
    warning = sat.note()
    if not warning and any(loo_noise.values()):
        warning = (f"numerical precision: every leave-one-out change is within {NOISE_ULPS} × machine epsilon of "
                   f"{sat.dtype}; their ranking can be rounding noise. Rerun in float64 to check.")
    return {**sat.to_dict(), "loo_at_noise": loo_noise, "warning": warning}


def flag_noisy_pairs(table: pd.DataFrame, numerics: dict[str, Any], row: int) -> pd.DataFrame:
    """The agreement table with a ``precision`` column: beside each pair, '' or which method ranks
    values at floating-point noise for the shown row, and the remedy (float64)."""
    saturated = bool(numerics["saturated"][row]) if numerics.get("saturated") else False
    methods = list(dict.fromkeys([*table["method_a"], *table["method_b"]]))
    noisy = noisy_methods(methods, saturated, numerics.get("loo_at_noise", {}))
    notes = [pair_note(a, b, noisy, numerics["dtype"]) for a, b in zip(table["method_a"], table["method_b"])]
    return table.assign(precision=pd.Series(notes, index=table.index, dtype=object))


def pointing_table(result: InputAnalysis) -> pd.DataFrame:
    """Pointing-game score of each method against the object's mask (vit-shapes)."""
    p = result.prepared
    pm = p.query.explainer.unit_mask(p.query, p.mask)  # [U] object patches / rationale tokens
    rows = [pointing_game(result.row(m), pm, method=m).to_dict() for m in result.importances]
    return pd.DataFrame(rows, columns=["method", "mass_share", "hit", "k"])


def alignment_table(result: InputAnalysis) -> pd.DataFrame:
    """Alignment accuracy of each method's target x source matrix against the gold alignment."""
    p = result.prepared
    rows = [{"method": m, "alignment_accuracy": alignment_accuracy(v, p.gold_alignment or [], p.special)}
            for m, v in result.importances.items()]
    return pd.DataFrame(rows, columns=["method", "alignment_accuracy"])


def head_grid(prepared: Prepared, rec: am.Recording, window: int = 24) -> HeadGrid:
    """Per layer x head maps for the grid view and the entropy of each head's explaining row."""
    q = prepared.query
    names = am.explaining_maps(q)
    full = torch.stack([rec.maps[n][prepared.selected] for n in names])  # [L,H,Q,K]
    maps, ent, query_labels, key_labels, layout = q.explainer.head_maps(prepared, full, window)
    return HeadGrid(names, maps.cpu().numpy(), ent.cpu().numpy(), query_labels, key_labels, layout,
                    full=wide(full.detach()).cpu().numpy())


# ----------------------------------------------------------------------------------------
# One call from a checkpoint


@dataclass
class InputSpec:
    """Raw input for :func:`prepare_input`: text (prompt or source), an image, or a sample index."""

    text: str | None = None
    image: Any | None = None
    sample: int | None = None  # index into data_samples(...) (validation data)
    position: int | None = None  # lm: token index (negative from the end); seq2seq: output step
    target: int | str | None = None  # lm: token text or id; classifier: class name or index
    ids: list[int] | None = None  # lm: token ids to use instead of encoding ``text``
    output_ids: list[int] | None = None  # seq2seq: output to teacher-force instead of the greedy one


def prepare_input(bundle: Bundle, spec: InputSpec, device: str | torch.device = "cpu") -> Prepared:
    """A Prepared query for a loaded bundle (playground.bundle.Bundle) and raw input."""
    sample = None
    if spec.sample is not None:
        samples = data_samples(bundle.config, bundle.family, n=max(50, spec.sample + 1))
        if not samples:
            raise PlaygroundError("This checkpoint's data cannot be rebuilt here (an upload, or not written by the "
                                  "trainer); type or upload an input instead.")
        if not 0 <= spec.sample < len(samples):
            raise PlaygroundError(f"Sample {spec.sample} does not exist; choose 0..{len(samples) - 1}.")
        sample = samples[spec.sample]
    return get_family(bundle.family).explainer.prepare(bundle, spec, sample, device)


def analyze_checkpoint(bundle: Bundle, spec: InputSpec, options: AnalysisOptions | None = None,
                       device: str | torch.device = "cpu", private: bool = True,
                       progress: Callable[[float, str], None] | None = None) -> InputAnalysis:
    """Prepare and analyse one input. ``private`` copies the model first (captum hooks must not
    touch a model other threads share, e.g. the app's bundle cache)."""
    if private:
        bundle = replace(bundle, model=at.private_model(bundle.model))
    prepared = prepare_input(bundle, spec, device)
    return analyze_prepared(prepared, options, progress)
