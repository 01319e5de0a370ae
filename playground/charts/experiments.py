"""Altair charts of the dataset-level experiments: DataFrame in, Chart out (pure, testable).

Each builder takes the experiment result's frame (``result.to_frame()``, one row per example
or per example × method) and returns a chart; :func:`experiment_chart` picks the right one
for a result. Frames are small (hundreds of rows); the 5000-row limit is lifted per chart.
"""
from __future__ import annotations

import math
from typing import Any

import altair as alt
import numpy as np
import pandas as pd

from playground.analysis.experiments.jain_wallace import (
    jw_reference_column,
    jw_reference_frame,
)
from playground.charts.causal import causal_experiment_chart
from playground.charts.layout import FULL, fit_width

WIDTH, HEIGHT = 460, 240
LN2 = math.log(2.0)


def _empty(title: str, text: str = "no finished examples yet") -> alt.Chart:
    return (alt.Chart(pd.DataFrame({"x": [0], "y": [0], "text": [text]})).mark_text(color="gray")
            .encode(x=alt.X("x:Q", axis=None), y=alt.Y("y:Q", axis=None), text="text:N")
            .properties(title=title, width=WIDTH, height=80))


def _data(frame: pd.DataFrame) -> alt.Data:
    return alt.Data(values=frame.replace({np.nan: None}).to_dict(orient="records"))


# ----------------------------------------------------------------------------------------
# Jain & Wallace


def agreement_chart(rows: pd.DataFrame, reference: pd.DataFrame | None = None) -> alt.Chart | alt.LayerChart:
    """Box plots of Kendall τ per method pair (one box per pair) with the mean as a diamond.

    ``rows``: example, method_a, method_b, tau, p_value. ``reference`` (J&W Table 2) adds
    red ticks at the published BiLSTM means for pairs against gradient-like (saliency, ixg, ig)
    and leave-one-out references.
    """
    frame = rows.dropna(subset=["tau"]).copy()
    if frame.empty:
        return _empty("Kendall τ per example")
    frame["pair"] = "τ(" + frame["method_a"] + ", " + frame["method_b"] + ")"
    order = list(dict.fromkeys(frame["pair"]))
    y = alt.Y("tau:Q", title="Kendall τ", scale=alt.Scale(domain=[-1, 1]))
    x = alt.X("pair:N", sort=order, title=None, axis=alt.Axis(labelAngle=-30))
    box = alt.Chart(_data(frame)).mark_boxplot(extent="min-max", size=22, color="#4c78a8").encode(x=x, y=y)
    means = (alt.Chart(_data(frame)).mark_point(shape="diamond", filled=True, color="black", size=60)
             .encode(x=x, y=alt.Y("mean(tau):Q"), tooltip=["pair:N", alt.Tooltip("mean(tau):Q", format=".3f"),
                                                                alt.Tooltip("count(tau):Q", title="examples")]))
    layers = [box, means]
    refs = []
    pairs = frame.drop_duplicates("pair")[["pair", "method_a", "method_b"]].itertuples(index=False)
    for pair, a, b in pairs if reference is not None else ():
        col = jw_reference_column(a, b)
        if col is not None:
            refs += [{"pair": pair, "tau": float(r[col]), "dataset": f"J&W BiLSTM {r['dataset']}"}
                     for _, r in reference.iterrows()]  # type: ignore[union-attr]
    if refs:
        layers.append(alt.Chart(_data(pd.DataFrame(refs))).mark_tick(color="crimson", thickness=2, size=18)
                      .encode(x=x, y="tau:Q", tooltip=["dataset:N", alt.Tooltip("tau:Q", format=".2f")]))
    title = "Kendall τ per example" + (" (red ticks: Jain & Wallace's BiLSTM means)" if refs else "")
    chart = alt.layer(*layers).properties(title=title, height=HEIGHT)
    return fit_width(chart, min(FULL, max(WIDTH, 60 * len(order)) + 80))  # + the τ axis


def permutation_chart(rows: pd.DataFrame) -> alt.HConcatChart | alt.Chart:
    """Histogram of each example's median TVD, and median TVD against the example's maximum attention."""
    if rows.empty:
        return _empty("Random permutation")
    frame = rows.copy()
    frame["log_tvd"] = np.log10(frame["median_tvd"].clip(lower=1e-9))
    frame["tvd_shown"] = frame["median_tvd"].clip(lower=1e-7)  # exact zeros drawn at 1e-7 on the log axis
    hist = (alt.Chart(_data(frame)).mark_bar()
            .encode(x=alt.X("log_tvd:Q", bin=alt.Bin(maxbins=30), title="median TVD per example (log10)"),
                    y=alt.Y("count():Q", title="examples"))
            .properties(title="How much does permuting attention move the output?", width=WIDTH // 1.3, height=HEIGHT))
    scatter = (alt.Chart(_data(frame)).mark_circle(size=40, opacity=0.7)
               .encode(x=alt.X("max_attention:Q", title="maximum attention weight", scale=alt.Scale(domain=[0, 1])),
                       y=alt.Y("tvd_shown:Q", title="median TVD (log; 0 shown at 1e-7)", scale=alt.Scale(type="log")),
                       tooltip=["example:Q", alt.Tooltip("max_attention:Q", format=".3f"),
                                alt.Tooltip("median_tvd:Q", format=".2e"), "n_units:Q", alt.Tooltip("flip_share:Q", format=".0%")])
               .properties(title="Median TVD vs peakiness of the attention", width=WIDTH // 1.3, height=HEIGHT))
    return alt.hconcat(hist, scatter)


def adversarial_chart(rows: pd.DataFrame) -> alt.LayerChart | alt.Chart:
    """Histogram of the maximum JSD reached within ε per example, with ln 2 marked."""
    frame = rows.dropna(subset=["max_jsd"])
    if frame.empty:
        return _empty("Adversarial attention", "no adversary within ε yet")
    hist = (alt.Chart(_data(frame)).mark_bar()
            .encode(x=alt.X("max_jsd:Q", bin=alt.Bin(extent=[0, 0.7], step=0.025), title="maximum JSD within ε",
                            scale=alt.Scale(domain=[0, 0.72])),
                    y=alt.Y("count():Q", title="examples")))
    rule = (alt.Chart(pd.DataFrame({"x": [LN2], "label": ["ln 2"]})).mark_rule(color="crimson", strokeDash=[4, 4])
            .encode(x="x:Q", tooltip=["label:N"]))
    return fit_width(alt.layer(hist, rule).properties(title="How different can attention be with the same output?",
                                                      height=HEIGHT), WIDTH + 80)


def attention_pair_chart(units: list[str], original: list[float], adversarial: list[float] | None,
                         real: list[bool] | None = None) -> alt.Chart:
    """Original vs adversarial attention (head mean) of one example, one bar pair per input unit."""
    if not original:
        return _empty("Original vs adversarial attention")
    n = len(original)
    labels = [f"{i}:{u}" for i, u in enumerate(units[:n])] + [str(i) for i in range(len(units), n)]
    keep = real if real is not None else [True] * n
    recs = []
    for i in range(n):
        if not keep[i] and original[i] == 0 and (adversarial is None or adversarial[i] == 0):
            continue
        recs.append({"unit": labels[i], "order": i, "which": "original", "weight": original[i]})
        if adversarial is not None:
            recs.append({"unit": labels[i], "order": i, "which": "adversarial", "weight": adversarial[i]})
    frame = pd.DataFrame(recs)
    return fit_width(alt.Chart(_data(frame)).mark_bar()
            .encode(x=alt.X("unit:N", sort=alt.EncodingSortField("order"), title=None, axis=alt.Axis(labelAngle=-60)),
                    xOffset="which:N", y=alt.Y("weight:Q", title="attention (head mean)"),
                    color=alt.Color("which:N", title=None, legend=alt.Legend(orient="top"),
                                    scale=alt.Scale(domain=["original", "adversarial"], range=["#4c78a8", "#e45756"])),
                    tooltip=["unit:N", "which:N", alt.Tooltip("weight:Q", format=".3f")])
            .properties(title="Original vs adversarial attention (same output within ε)", height=HEIGHT),
                     min(FULL, max(WIDTH, 14 * len(frame)) + 80))  # + the attention axis and legend


# ----------------------------------------------------------------------------------------
# Wiegreffe & Pinter


def uniform_chart(rows: pd.DataFrame) -> alt.Chart:
    """Grouped bars: each metric for learned vs uniform (frozen / retrained) attention."""
    if rows.empty:
        return _empty("Uniform baseline")
    return (alt.Chart(_data(rows)).mark_bar()
            .encode(x=alt.X("metric:N", title=None), xOffset="variant:N", y=alt.Y("value:Q", title="value"),
                    color=alt.Color("variant:N", title=None, legend=alt.Legend(orient="top")),
                    tooltip=["variant:N", "metric:N", alt.Tooltip("value:Q", format=".4f")])
            .properties(title="Learned vs uniform attention (validation metrics)", width=WIDTH, height=HEIGHT))


def seeds_chart(rows: pd.DataFrame) -> alt.Chart:
    """Per-example JSD: between seeds (mean over model pairs) and the adversarial maximum."""
    if rows.empty:
        return _empty("Seed variance")
    long = rows.melt(id_vars=["example"], value_vars=["mean_jsd", "adversarial_jsd"], var_name="what", value_name="jsd")
    long = long.dropna(subset=["jsd"])
    long["what"] = long["what"].map({"mean_jsd": "between seeds", "adversarial_jsd": "adversarial (within ε)"})
    return (alt.Chart(_data(long)).mark_boxplot(extent="min-max", size=30)
            .encode(x=alt.X("what:N", title=None), y=alt.Y("jsd:Q", title="JSD from the attention", scale=alt.Scale(domain=[0, LN2])),
                    color=alt.Color("what:N", legend=None))
            .properties(title="Attention differences: seeds vs adversaries", width=WIDTH // 1.5, height=HEIGHT))


def diagnostic_chart(rows: pd.DataFrame, model_accuracy: float | None = None,
                     majority: float | None = None) -> alt.Chart | alt.LayerChart:
    """Bars of diagnostic accuracy per pooling variant, with the full model and majority class as rules."""
    if rows.empty:
        return _empty("Diagnostic classifier", "not fitted (too few labelled examples?)")
    bars = (alt.Chart(_data(rows)).mark_bar()
            .encode(x=alt.X("variant:N", sort=list(rows["variant"]), title="pooling weights"),
                    y=alt.Y("accuracy:Q", title="test accuracy", scale=alt.Scale(domain=[0, 1])),
                    color=alt.Color("variant:N", legend=None),
                    tooltip=["variant:N", alt.Tooltip("accuracy:Q", format=".3f"), "n_train:Q", "n_test:Q"]))
    layers: list[Any] = [bars]
    refs = [{"y": v, "label": lab} for v, lab in ((model_accuracy, "full model"), (majority, "majority class"))
            if v is not None and math.isfinite(v)]
    if refs:
        layers.append(alt.Chart(pd.DataFrame(refs)).mark_rule(strokeDash=[4, 4])
                      .encode(y="y:Q", color=alt.Color("label:N", title=None, legend=alt.Legend(orient="top")),
                              tooltip=["label:N", alt.Tooltip("y:Q", format=".3f")]))
    return alt.layer(*layers).resolve_scale(color="independent").properties(
        title="Non-contextual predictor on attention-pooled embeddings", width=WIDTH, height=HEIGHT)


# ----------------------------------------------------------------------------------------
# Erasure, AOPC, pointing


def erasure_chart(rows: pd.DataFrame) -> alt.HConcatChart | alt.Chart:
    """Box plots of the fraction removed until the flip per method, and the share never flipped."""
    if rows.empty:
        return _empty("Erasure to decision flip")
    order = list(dict.fromkeys(rows["method"]))
    flips = rows.dropna(subset=["fraction"])
    box = (alt.Chart(_data(flips)).mark_boxplot(extent="min-max", size=22)
           .encode(x=alt.X("method:N", sort=order, title=None), y=alt.Y("fraction:Q", title="fraction removed at the flip",
                                                                       scale=alt.Scale(domain=[0, 1])),
                   color=alt.Color("method:N", legend=None))
           .properties(title="Units removed until the decision flips", width=WIDTH // 1.3, height=HEIGHT))
    never = rows.assign(never=1 - rows["flipped"]).groupby("method", sort=False)["never"].mean().reset_index()
    bars = (alt.Chart(_data(never)).mark_bar()
            .encode(x=alt.X("method:N", sort=order, title=None),
                    y=alt.Y("never:Q", title="share never flipped", scale=alt.Scale(domain=[0, 1]), axis=alt.Axis(format="%")),
                    color=alt.Color("method:N", legend=None), tooltip=["method:N", alt.Tooltip("never:Q", format=".0%")])
            .properties(title="Never flipped", width=WIDTH // 2, height=HEIGHT))
    return alt.hconcat(box, bars)


def curves_chart(curves: pd.DataFrame) -> alt.Chart:
    """Mean deletion and insertion curves per method: p(explained output) against the fraction of units."""
    if curves.empty:
        return _empty("Deletion / insertion curves")
    return (alt.Chart(_data(curves)).mark_line(point=True)
            .encode(x=alt.X("fraction:Q", title="fraction of units removed (deletion) / kept (insertion)",
                            axis=alt.Axis(format="%")),
                    y=alt.Y("score:Q", title="p(explained output)"),
                    color=alt.Color("method:N", title=None, legend=alt.Legend(orient="top")),
                    tooltip=["method:N", "curve:N", alt.Tooltip("fraction:Q", format=".0%"), alt.Tooltip("score:Q", format=".4f")])
            .properties(width=WIDTH // 1.3, height=HEIGHT)
            .facet(column=alt.Column("curve:N", title=None, sort=["deletion", "insertion"])))


def aopc_chart(stats: pd.DataFrame) -> alt.Chart:
    """Bars of AOPC (deletion, insertion), comprehensiveness and sufficiency per method (means)."""
    if stats.empty:
        return _empty("AOPC")
    cols = [c for c in ("aopc_deletion", "aopc_insertion", "comprehensiveness", "sufficiency") if c in stats]
    long = stats.melt(id_vars=["method"], value_vars=cols, var_name="measure", value_name="value")
    return (alt.Chart(_data(long)).mark_bar()
            .encode(x=alt.X("method:N", sort=list(stats["method"]), title=None), xOffset="measure:N",
                    y=alt.Y("value:Q", title="mean over examples"),
                    color=alt.Color("measure:N", title=None, legend=alt.Legend(orient="top")),
                    tooltip=["method:N", "measure:N", alt.Tooltip("value:Q", format=".4f")])
            .properties(title="AOPC and ERASER scores (sufficiency: lower is better)", width=WIDTH, height=HEIGHT))


def pointing_chart(rows: pd.DataFrame) -> alt.Chart:
    """Mean share of top-k importance on the object, per method."""
    if rows.empty:
        return _empty("Pointing game")
    means = rows.groupby("method", sort=False).agg(mass_share=("mass_share", "mean"), hit_rate=("hit", "mean"),
                                                   n=("mass_share", "size")).reset_index()
    return (alt.Chart(_data(means)).mark_bar()
            .encode(x=alt.X("method:N", sort=list(means["method"]), title=None),
                    y=alt.Y("mass_share:Q", title="top-k importance on the object / rationale", scale=alt.Scale(domain=[0, 1]),
                            axis=alt.Axis(format="%")),
                    color=alt.Color("method:N", legend=None),
                    tooltip=["method:N", alt.Tooltip("mass_share:Q", format=".1%"), alt.Tooltip("hit_rate:Q", format=".0%"), "n:Q"])
            .properties(title="Pointing game: does the importance land on the object (rationale)?", width=WIDTH, height=HEIGHT))


def sanity_chart(curve: pd.DataFrame, layers: list[str], threshold: float) -> alt.LayerChart | alt.Chart:
    """Mean Spearman ρ (absolute maps) with the trained model's map per layers randomised, one line per method.

    ``curve``: method, step, layer, spearman, spearman_abs, n (SanityResult.curve_frame); x = layers
    randomised from the output side (0 = trained); a dashed rule at the flag threshold.
    """
    if curve.empty:
        return _empty("Cascading randomisation")
    labels = ["trained", *layers]
    frame = curve.assign(randomised=[labels[int(s)] if int(s) < len(labels) else str(s) for s in curve["step"]])
    lines = (alt.Chart(_data(frame)).mark_line(point=True)
             .encode(x=alt.X("step:O", title="layers randomised from the output (0 = trained)"),
                     y=alt.Y("spearman_abs:Q", title="Spearman ρ with the trained map", scale=alt.Scale(domain=[-1, 1])),
                     color=alt.Color("method:N", title=None, legend=alt.Legend(orient="top")),
                     tooltip=["method:N", "step:O", alt.Tooltip("randomised:N", title="last randomised"),
                              alt.Tooltip("spearman_abs:Q", format=".3f", title="ρ (|map|)"),
                              alt.Tooltip("spearman:Q", format=".3f", title="ρ (signed)"), "n:Q"]))
    rule = (alt.Chart(pd.DataFrame({"y": [threshold]})).mark_rule(strokeDash=[4, 4], color="gray")
            .encode(y="y:Q"))
    return (lines + rule).properties(title="Sanity check: does each map change as the model is randomised?",
                                     width=WIDTH, height=HEIGHT)


def label_randomisation_chart(bars: pd.DataFrame, threshold: float) -> alt.LayerChart | alt.Chart:
    """Mean Spearman ρ (absolute maps) of each method's map of the model retrained on shuffled
    labels with the trained model's map; flagged methods (above the dashed threshold) in red.

    ``bars``: method, spearman_abs, spearman, n, flagged (SanityResult.label_frame).
    """
    if bars.empty:
        return _empty("Data-label randomisation")
    frame = bars.assign(verdict=["flagged: barely changes" if f else "changes" for f in bars["flagged"]])
    chart = (alt.Chart(_data(frame)).mark_bar()
             .encode(x=alt.X("method:N", sort=list(frame["method"]), title=None),
                     y=alt.Y("spearman_abs:Q", title="Spearman ρ with the trained map", scale=alt.Scale(domain=[-1, 1])),
                     color=alt.Color("verdict:N", title=None, legend=alt.Legend(orient="top"),
                                     scale=alt.Scale(domain=["changes", "flagged: barely changes"],
                                                     range=["#4c78a8", "#e45756"])),
                     tooltip=["method:N", alt.Tooltip("spearman_abs:Q", format=".3f", title="ρ (|map|)"),
                              alt.Tooltip("spearman:Q", format=".3f", title="ρ (signed)"), "n:Q", "verdict:N"]))
    rule = (alt.Chart(pd.DataFrame({"y": [threshold]})).mark_rule(strokeDash=[4, 4], color="gray")
            .encode(y="y:Q"))
    return (chart + rule).properties(title="Data-label randomisation: the maps of a model trained on shuffled labels",
                                     width=WIDTH, height=HEIGHT)


def experiment_chart(result: Any) -> Any:
    """The main chart of any experiment result."""
    kind = result.experiment
    frame = result.to_frame()
    if kind == "agreement":
        return agreement_chart(frame, jw_reference_frame())
    if kind == "permutation":
        return permutation_chart(frame)
    if kind == "adversarial":
        return adversarial_chart(frame)
    if kind == "uniform":
        return uniform_chart(frame)
    if kind == "seeds":
        return seeds_chart(frame)
    if kind == "diagnostic":
        st = result.stats()
        return diagnostic_chart(frame, st.get("model_accuracy"), st.get("majority_accuracy"))
    if kind == "erasure":
        return erasure_chart(frame)
    if kind == "aopc":
        return alt.vconcat(curves_chart(result.curve_frame()),
                           aopc_chart(pd.DataFrame(result.stats()["methods"]))).resolve_scale(color="independent")
    if kind == "pointing":
        return pointing_chart(frame)
    if kind == "causal":
        return causal_experiment_chart(result.table())
    if kind == "sanity":
        threshold = result.stats()["threshold"]
        cascade = sanity_chart(result.curve_frame(), result.settings.get("layers", []), threshold)
        labels = result.label_frame()
        if labels.empty:
            return cascade
        return alt.vconcat(cascade, label_randomisation_chart(labels, threshold)).resolve_scale(color="independent")
    return _empty(kind, "no chart for this experiment")
