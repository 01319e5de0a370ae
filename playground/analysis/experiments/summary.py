"""Plain-language summaries of the experiments: what came out, with the numbers, and what the
experiment can and cannot show.

``summarize(result) -> Summary``; ``Summary.to_markdown()`` is what the view and the CLI print.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from playground.analysis.causal.proxies import summary_parts as causal_parts
from playground.analysis.divergences import LN2
from playground.analysis.experiments.core import ExperimentResult
from playground.analysis.experiments.jain_wallace import (
    GRADIENT_REFERENCES,
    JW_TABLE2,
    LOO_REFERENCES,
)
from playground.analysis.experiments.wiegreffe_pinter import LEARNED, RETRAINED, UNIFORM
from playground.analysis.explainer import FamilyExplainer
from playground.families import FAMILIES

SIGNIFICANCE = 0.05  # a relationship is stated only when its test's p-value is at most this


@dataclass
class Summary:
    """A headline, the findings in words, and the experiment's reach."""

    title: str
    findings: list[str]
    can_show: str
    cannot_show: str
    notes: list[str] = field(default_factory=list)

    def to_markdown(self) -> str:
        lines = [f"### {self.title}", ""]
        lines += [f"- {f}" for f in self.findings]
        lines += ["", f"**What this can show:** {self.can_show}", "", f"**What it cannot show:** {self.cannot_show}"]
        if self.notes:
            lines += [""] + [f"_Note: {n}_" for n in self.notes]
        return "\n".join(lines)

    def to_text(self) -> str:
        return self.to_markdown().replace("### ", "").replace("**", "").replace("_Note:", "Note:").replace("_\n", "\n").rstrip("_")

    def to_dict(self) -> dict[str, Any]:
        return {"title": self.title, "findings": self.findings, "can_show": self.can_show,
                "cannot_show": self.cannot_show, "notes": self.notes}


def _g(x: Any, digits: int = 3) -> str:
    """A number for prose: 3 significant digits, 'n/a' for NaN/None."""
    if x is None:
        return "n/a"
    try:
        f = float(x)
    except (TypeError, ValueError):
        return str(x)
    if not math.isfinite(f):
        return "n/a"
    if f != 0 and abs(f) < 10 ** -(digits):
        return f"{f:.1e}"
    return f"{f:.{digits}g}" if abs(f) >= 1 else f"{f:.{digits}f}".rstrip("0").rstrip(".") if f else "0"


def _pct(x: Any) -> str:
    try:
        f = float(x)
    except (TypeError, ValueError):
        return "n/a"
    return "n/a" if not math.isfinite(f) else f"{100 * f:.0f}%"


def _output_name(kind: str | None) -> str:
    """How the families of a task (the results' recorded kind) name their explained distribution."""
    names = [f.explainer.output_name for f in FAMILIES.values() if f.explainer.kind == kind]
    return names[0] if names else FamilyExplainer.output_name


def _where(settings: dict[str, Any]) -> str:
    module = settings.get("module") or "the last layer"
    heads = settings.get("heads")
    layer = _layer_words(module)
    return layer + (f" (heads {', '.join(map(str, heads))})" if heads else " (all heads)")


def _layer_words(module: str) -> str:
    parts = module.split(".")
    nums = [p for p in parts if p.isdigit()]
    if module == "decoder.attention":
        return "the decoder's attention"
    if "cross_attn" in module and nums:
        return f"decoder layer {int(nums[0]) + 1}'s cross-attention"
    if nums:
        return f"layer {int(nums[0]) + 1} ({module})"
    return module


def _stopped(result: ExperimentResult) -> list[str]:
    if result.stopped:
        return [f"Stopped early: {result.examples_done} of {result.n_requested} examples finished; the numbers cover those."]
    return []


# ----------------------------------------------------------------------------------------


def summarize_permutation(result: Any) -> Summary:
    st = result.stats()
    n = result.n_done
    med = st["median_tvd"]
    small = st["small_tvd"]
    below = st["share_below"]
    k_below = round(below * n) if n else 0
    s = result.settings
    findings = []
    if n == 0:
        findings.append("No example had two or more real positions to permute.")
    else:
        findings.append(
            f"Permuting attention in {_where(s)} {s.get('n_perm', 100)} times per example changed the "
            f"{_output_name(s.get('kind'))} by a median TVD of {_g(med['median'])} (per-example medians "
            f"{_g(med['min'])}–{_g(med['max'])}); on {k_below} of {n} examples the median TVD stayed at or below {_g(small)}.")
        flips = [r.flip_share for r in result.rows]
        findings.append(f"{_pct(sum(flips) / len(flips))} of the permutations changed the predicted output.")
        if below >= 0.8:
            findings.append("Attention there is not needed for the prediction on most examples: where it points hardly matters.")
        elif below <= 0.2:
            findings.append("The prediction depends on where this attention points: scrambling it moves the output.")
        else:
            findings.append("The picture is mixed: on some examples the attention matters, on others it does not.")
        rho, p = st.get("corr_max_attention"), st.get("corr_max_attention_p")
        if rho is not None and p is not None and math.isfinite(rho) and math.isfinite(p):
            stat = f"Spearman ρ = {_g(rho, 2)} between maximum weight and median TVD, p = {_g(p, 2)}, {n} examples"
            if p <= SIGNIFICANCE:
                findings.append(f"Examples with peakier attention (higher maximum weight) changed "
                                f"{'more' if rho > 0 else 'less'} ({stat}).")
            else:
                findings.append(f"These examples show no clear link between how peaked the attention is and how "
                                f"much permuting it changed the output ({stat}; p > {SIGNIFICANCE}).")
    if st.get("n_skipped"):
        findings.append(f"{st['n_skipped']} example(s) had fewer than two real positions and were skipped.")
    return Summary(
        "Random permutation (Jain & Wallace 2019)", findings,
        "Whether this one attention row matters for this output when everything computed before it is held fixed: "
        "a small TVD means the output does not depend on how the weights are arranged over the positions.",
        "That attention explains (or fails to explain) the prediction. A row that does not matter can be "
        "bypassed through the residual stream or other heads; a row that matters may still not be the reason "
        "in human terms. Layers after this one recompute from the permuted result.",
        _stopped(result))


def summarize_adversarial(result: Any) -> Summary:
    st = result.stats()
    s = result.settings
    n = result.n_done
    mj = st["max_jsd"]
    findings = []
    if n == 0:
        findings.append("No example had two or more real positions to redistribute attention over.")
    else:
        found = st["share_found"]
        findings.append(
            f"Within ε = {_g(s.get('epsilon'))} TVD of the {_output_name(s.get('kind'))}, the search "
            f"({s.get('k')} adversaries, {s.get('steps')} Adam steps) found different attention in {_where(s)} on "
            f"{round(found * n)} of {n} examples.")
        findings.append(
            f"The largest JSD from the original attention per example had median {_g(mj['median'])} "
            f"(mean {_g(mj['mean'])}, max {_g(mj['max'])}; ln 2 = {LN2:.3f} is the most two distributions can differ); "
            f"{_pct(st['share_above'])} of examples reached JSD ≥ {_g(st['high_jsd'])}.")
        if math.isfinite(mj["median"]) and mj["median"] >= 0.4:
            findings.append("Very different attention gives practically the same output: this attention is not the "
                            "unique way the model can reach its prediction.")
        elif math.isfinite(mj["median"]) and mj["median"] < 0.15:
            findings.append("Attention could hardly be changed without changing the output: it is tightly tied to "
                            "the prediction here.")
    return Summary(
        "Adversarial attention (Jain & Wallace 2019)", findings,
        "How far the attention can be pushed, example by example, while the output stays within ε: a large JSD "
        "means the same output is reachable with very different attention.",
        "That the model would ever produce such attention: the adversaries are set per example, not learned by a "
        "model (Wiegreffe & Pinter: compare with the JSD between seeds, and with adversaries trained as models). "
        "A failure to find adversaries is not proof that none exist (the search is local).",
        _stopped(result))


def _table2_range(key: str) -> str:
    """The range of one J&W Table 2 column over its five datasets, e.g. '0.13–0.44'."""
    vals = [row[key] for row in JW_TABLE2]
    return f"{min(vals):.2f}–{max(vals):.2f}"


def _published_figure(settings: dict[str, Any], a: str, b: str) -> str | None:
    """The sentence quoting J&W Table 2 for pair (a, b) when it used the same definitions on the
    same kind of model; a sentence saying why there is none otherwise; None for pairs J&W did not report."""
    if a == "attention" and b in GRADIENT_REFERENCES:
        same, col, sig, what = b == "jw_grad", "tau_attn_grad", "sig_attn_grad", "τ(α, gradient)"
    elif a == "attention" and b in LOO_REFERENCES:
        same, col, sig, what = b == "loo_delete", "tau_attn_loo", "sig_attn_loo", "τ(α, leave-one-out)"
    elif {a, b} <= set(GRADIENT_REFERENCES + LOO_REFERENCES) and bool({a, b} & set(GRADIENT_REFERENCES)) and bool(
            {a, b} & set(LOO_REFERENCES)):
        same, col, sig, what = {a, b} == {"jw_grad", "loo_delete"}, "tau_grad_loo", None, "τ(gradient, leave-one-out)"
    else:
        return None
    family = FAMILIES.get(str(settings.get("family")))
    if family is None or not family.explainer.jain_wallace_setting:
        return f"τ({a}, {b}): there is no published figure for this model kind (J&W's Table 2 is for text classifiers)."
    if not same:
        return (f"τ({a}, {b}) uses another definition than J&W's (their gradient is jw_grad, attention detached; "
                f"their leave-one-out deletes the token: loo_delete), so their Table 2 is not quoted beside it.")
    encoder = settings.get("encoder")
    line = f"J&W Table 2, {what} over five datasets (BiLSTM + additive attention): mean {_table2_range(col)}"
    line += f", share p ≤ 0.05 {_table2_range(sig)}" if sig else ""
    if encoder == "transformer":
        line += " (J&W's encoders were BiLSTM / CNN / averaging, not a transformer: a neighbouring, not the same, model)"
    return line + "."


def _reference_pair_finding(main: list[dict[str, Any]], refs: list[dict[str, Any]]) -> list[str]:
    """J&W's comparison, true by construction: for each (gradient, leave-one-out) reference pair,
    its τ against the best τ of any attention view with either of those two references."""
    cross = [p for p in refs if {p["method_a"], p["method_b"]} & set(GRADIENT_REFERENCES)
             and {p["method_a"], p["method_b"]} & set(LOO_REFERENCES)]
    if not cross:
        return [("No gradient / leave-one-out pair among the references (J&W compare τ(gradient, leave-one-out) with "
                "attention's τ against each); add one of each to make that comparison.")]
    out = []
    for p in cross:
        pair = {p["method_a"], p["method_b"]}
        against = [m for m in main if m["method_b"] in pair and math.isfinite(m["mean_tau"])]
        if not against or not math.isfinite(p["mean_tau"]):
            continue
        best = max(against, key=lambda m: m["mean_tau"])
        ref = f"τ({p['method_a']}, {p['method_b']}) = {_g(p['mean_tau'], 2)}"
        top = f"τ({best['method_a']}, {best['method_b']}) = {_g(best['mean_tau'], 2)}"
        if p["mean_tau"] > best["mean_tau"]:
            out.append(f"As in Jain & Wallace, {p['method_a']} and {p['method_b']} agree with each other ({ref}) more "
                       f"than any attention view agrees with either of them (best: {top}).")
        else:
            out.append(f"Unlike Jain & Wallace's BiLSTMs, an attention view agrees with {best['method_b']} ({top}) at "
                       f"least as well as {p['method_a']} and {p['method_b']} agree with each other ({ref}).")
    return out


def summarize_agreement(result: Any) -> Summary:
    pairs = result.stats()["pairs"]
    findings = []
    main = [p for p in pairs if not p["reference_pair"]]
    refs = [p for p in pairs if p["reference_pair"]]
    for p in main:
        findings.append(f"τ({p['method_a']}, {p['method_b']}) = {_g(p['mean_tau'], 2)} ± {_g(p['std_tau'], 2)} over "
                        f"{p['n']} examples; p ≤ 0.05 on {_pct(p['share_p05'])}.")
    for p in refs:
        findings.append(f"Reference: τ({p['method_a']}, {p['method_b']}) = {_g(p['mean_tau'], 2)} ± {_g(p['std_tau'], 2)} "
                        f"(p ≤ 0.05 on {_pct(p['share_p05'])}).")
    if main and refs:
        findings += _reference_pair_finding(main, refs)
    quotes = [_published_figure(result.settings, p["method_a"], p["method_b"]) for p in main + refs]
    findings += list(dict.fromkeys(q for q in quotes if q))
    notes = _stopped(result)
    if result.settings.get("skipped_methods"):
        notes.append(f"Not available for this model: {', '.join(result.settings['skipped_methods'])}.")
    return Summary(
        "Agreement with gradients and leave-one-out (Jain & Wallace 2019)", findings,
        "How similarly attention and other importance measures rank the input units, example by example, "
        "and how that compares with the published BiLSTM numbers.",
        "Which ranking is right: gradients and leave-one-out are explanations with their own failure modes. "
        "Kendall τ weighs every swap equally, so disagreement among many unimportant units lowers τ even when "
        "the top units agree (look at top-k overlap in the per-input view).",
        notes)


def summarize_uniform(result: Any) -> Summary:
    v = result.stats()["variants"]
    learned, uni, re = v.get(LEARNED, {}), v.get(UNIFORM, {}), v.get(RETRAINED, {})
    findings = []
    for metric in learned:
        line = f"{metric}: {_g(learned[metric])} with learned attention, {_g(uni.get(metric))} with attention frozen uniform"
        if metric in re:
            line += f", {_g(re[metric])} for a model retrained with uniform attention"
        findings.append(line + ".")
    key = next((m for m in ("accuracy", "exact_match", "token_accuracy") if m in learned), None)
    if key is not None and key in uni:
        drop = learned[key] - uni[key]
        ref = re.get(key, uni[key])
        gap = learned[key] - ref
        if gap <= 0.02:
            findings.append(f"Uniform attention does about as well ({key} {_g(ref)} vs {_g(learned[key])}): attention is not needed "
                            "for this task, so showing that it can be manipulated says little (Wiegreffe & Pinter).")
        else:
            findings.append(f"Uniform attention costs {_g(drop)} in {key}: the task needs learned attention, so "
                            "manipulation experiments on it are meaningful.")
    elif "val_loss" in learned and "val_loss" in uni:
        findings.append(f"Frozen uniform attention changes the validation loss by {_g(uni['val_loss'] - learned['val_loss'])} nats.")
    return Summary(
        "Uniform-attention baseline (Wiegreffe & Pinter 2019)", findings,
        "Whether the task needs learned attention at all; if uniform attention does as well, the permutation and "
        "adversarial results say nothing about explanation.",
        "Freezing attention at test time puts the model off its training distribution, so a drop overstates "
        "attention's necessity; only a model retrained with uniform attention is the fair comparison.",
        _stopped(result))


def summarize_seeds(result: Any) -> Summary:
    st = result.stats()
    findings = [(f"Across {result.settings.get('n_models')} models of the same preset with different seeds, the explained "
                f"attention rows differed by a mean JSD of {_g(st['mean_jsd']['mean'])} (median {_g(st['mean_jsd']['median'])}, "
                f"largest pair on one example {_g(st['max_jsd']['max'])}) over {result.n_done} examples.")]
    adv = st["adversarial_jsd"]
    if adv["n"]:
        findings.append(f"The adversarial search reached a mean JSD of {_g(adv['mean'])} on the same examples.")
        if adv["mean"] > 2 * st["mean_jsd"]["mean"]:
            findings.append("The adversaries go well beyond the variation between seeds: they are unusual attention, "
                            "not something training would plausibly produce.")
        else:
            findings.append("The adversaries stay within the range seeds already produce: attention this different "
                            "arises naturally from retraining, so it is weak evidence against explanation.")
    return Summary(
        "Seed variance (Wiegreffe & Pinter 2019)", findings,
        "How much attention varies between equally good models — the yardstick for reading adversarial JSD.",
        "Whether either model's attention is a faithful explanation; short runs may not have converged, which "
        "inflates the seed variance.",
        _stopped(result))


def summarize_diagnostic(result: Any) -> Summary:
    st = result.stats()
    acc = st["accuracy"]
    findings = []
    if not acc:
        findings.append(result.extra.get("note", "No diagnostic was fitted."))
    else:
        parts = ", ".join(f"{k} {_g(v)}" for k, v in acc.items())
        findings.append(f"A logistic regression on attention-weighted averages of the frozen input embeddings reached "
                        f"test accuracy: {parts} (the full model: {_g(st.get('model_accuracy'))}; always guessing the "
                        f"majority class: {_g(st.get('majority_accuracy'))}).")
        if "learned" in acc and "uniform" in acc:
            if acc["learned"] > acc["uniform"] + 0.02:
                findings.append("Learned attention weights help a model that has no context of its own: they carry "
                                "information about which inputs matter for the task.")
            else:
                findings.append("Learned attention does not help the non-contextual predictor beyond uniform weights.")
        if "adversarial" in acc and "learned" in acc and acc["adversarial"] + 0.02 < acc["learned"]:
            findings.append("Adversarial weights, although they leave the original model's output unchanged, are less "
                            "useful to the diagnostic: they are not interchangeable with the learned ones.")
    return Summary(
        "Diagnostic classifier (Wiegreffe & Pinter 2019)", findings,
        "Whether the learned attention weights carry task-relevant information that is usable outside the model.",
        "How the original model itself uses that information; a linear probe on averaged embeddings is a "
        "weak reader, so a small gain is not proof of no information.",
        _stopped(result))


def summarize_erasure(result: Any) -> Summary:
    stats = sorted(result.stats()["methods"], key=lambda m: m["mean_fraction_censored"])
    level = result.settings.get("level", "attention")
    how = ("zeroing their attention weights and renormalising" if level == "attention"
           else "replacing them with the baseline token/patch")
    findings = [f"Units were removed in each method's order ({how}) until the decision flipped."]
    for m in stats:
        if math.isfinite(m["mean_fraction"]):
            findings.append(f"{m['method']}: flipped after removing {_pct(m['mean_fraction'])} of the units on average "
                            f"(median {_pct(m['median_fraction'])}); never flipped on {_pct(m['share_never'])} of examples.")
        else:
            findings.append(f"{m['method']}: never flipped the decision.")
    by = {m["method"]: m for m in stats}
    att = by.get("attention")
    if att is not None:
        a = att["mean_fraction_censored"]
        better = [m["method"] for m in stats if m["method"] not in ("attention", "random") and m["mean_fraction_censored"] < a]
        if better:
            findings.append(f"{', '.join(better)} flipped decisions with fewer removals than attention (counting a "
                            "never-flipped example as all units), as Serrano & Smith found: attention ranks the decisive "
                            "units less sharply.")
        elif all(m["share_never"] == 1.0 for m in stats):
            findings.append("No ranking flipped any decision: the predictions are robust to these removals.")
        else:
            findings.append("Attention's ranking flipped decisions at least as fast as the other rankings here.")
    return Summary(
        "Erasure to decision flip (Serrano & Smith 2019)", findings,
        "Which ranking identifies the units whose removal changes the decision soonest — a test of how well each "
        "ranking tracks what the decision depends on.",
        "Removing units creates inputs the model never saw; a late flip can mean redundancy in the input rather than "
        "a bad ranking. Many examples never flipping makes the fractions rest on few examples.",
        _stopped(result))


def summarize_curves(result: Any) -> Summary:
    stats = sorted(result.stats()["methods"], key=lambda m: -m["aopc_deletion"])
    bins = ", ".join(f"{round(100 * b)}%" for b in result.settings.get("bins", []))
    findings = [f"Deletion AOPC over the bins {bins} (higher = removing the top-ranked units hurts the prediction more):"]
    for m in stats:
        findings.append(f"{m['method']}: deletion AOPC {_g(m['aopc_deletion'])}, insertion AOPC {_g(m['aopc_insertion'])}, "
                        f"comprehensiveness {_g(m['comprehensiveness'])}, sufficiency {_g(m['sufficiency'])} (lower is better).")
    rnd = next((m for m in stats if m["method"] == "random"), None)
    if rnd is not None:
        worse = [m["method"] for m in stats if m["method"] != "random" and m["aopc_deletion"] <= rnd["aopc_deletion"]]
        if worse:
            findings.append(f"{', '.join(worse)} did no better than a random order on deletion.")
    return Summary(
        "Deletion / insertion curves, AOPC and ERASER faithfulness", findings,
        "How quickly the probability of the explained output falls when each method's top units are removed "
        "(and rises when only they are kept), compared with a random order.",
        "Replacing units with a baseline token or black patch is out of distribution, so part of the change is the "
        "model reacting to the odd input; and it says nothing about whether a ranking is plausible to people.",
        _stopped(result))


def summarize_pointing(result: Any) -> Summary:
    stats = sorted(result.stats()["methods"], key=lambda m: -m["mean_mass_share"])
    family = FAMILIES.get(str(result.settings.get("family")))
    t = (family.explainer if family is not None else FamilyExplainer).truth_terms
    findings = [f"{m['method']}: {_pct(m['mean_mass_share'])} of the top-k importance lies on {t['truth']}; the top "
                f"{t['unit']} hits it on {_pct(m['hit_rate'])} of {m['n']} {t['inputs']}." for m in stats]
    return Summary(
        f"Pointing game (plausibility) on {t['set']}", findings,
        f"Whether each method's importance lands on {t['defines']}.",
        f"Faithfulness: a model may legitimately use other {t['unit']}s, and a method that points at {t['truth']} "
        "may do so because it is salient, not because the model relies on it.",
        _stopped(result))


def summarize_sanity(result: Any) -> Summary:
    """Adebayo et al.'s cascading randomisation: per method, ρ with the trained map; flagged methods named."""
    st = result.stats()
    layers = result.settings.get("layers", [])
    half, n = st["half_step"], st["n_layers"]
    findings = [(f"Layers re-initialised from the output down, one more per step ({' → '.join(layers)}); each map's "
                f"Spearman ρ with the trained model's map (absolute values) after the top {half} of {n} layers and "
                "after all of them:")]
    for m in st["methods"]:
        control = " (control: defined to depend only on the input embedding)" if m["control"] else ""
        findings.append(f"{m['method']}{control}: ρ {_g(m['rho_abs_half'])} after {half}, {_g(m['rho_abs_all'])} after "
                        f"all {n} (signed maps: {_g(m['rho_all'])}).")
    for method in st["flagged"]:
        findings.append(f"**{method} does not depend on the weights it explains**: its map stays correlated above "
                        f"{_g(st['threshold'])} with half of the model randomised.")
    if not st["flagged"] and st["methods"]:
        findings.append(f"No method stayed above ρ = {_g(st['threshold'])} with half of the model randomised: every map "
                        "changes when the weights it explains change.")
    labels_run = st.get("labels_run", False)
    if labels_run:
        findings += _label_findings(result, st)
    return Summary(
        "Sanity checks: cascading model randomisation" + (" and data-label randomisation" if labels_run else "")
        + " (Adebayo et al. 2018)", findings,
        "Whether each explanation depends on the learned weights at all: a map that survives randomising the "
        "layers it claims to explain reflects the input (or the architecture), not what the model learned."
        + (" Likewise a map that looks the same for a model that could only memorise shuffled labels does not show "
           "what the true labels taught." if labels_run else ""),
        "Passing is necessary, not sufficient: a map can change with the weights and still be unfaithful. "
        + ("The shuffled-label model is a quick retrain from the same preset (and initial seed), so part of a high "
           "ρ can be the shared initialisation." if labels_run else
           "Data-label randomisation (retraining on shuffled labels) was not run; turn it on to add it."),
        _stopped(result))


def _label_findings(result: Any, st: dict[str, Any]) -> list[str]:
    """The data-label test's lines: the retrained model's accuracy (did shuffling work?) and each method's ρ."""
    info = result.settings.get("label_randomisation") or {}
    chance = info.get("chance")
    out = [f"Data-label randomisation: {info.get('checkpoint', 'a copy')} was retrained on the same inputs with the "
           f"training labels shuffled ({info.get('steps')} steps"
           + (", reused" if info.get("reused") else "") + f"); validation accuracy on the true labels "
           f"{_pct(info.get('val_accuracy_shuffled'))} against the trained model's {_pct(info.get('val_accuracy_trained'))}"
           + (f" (chance {_pct(chance)})." if chance else ".")]
    for m in st["methods"]:
        if "rho_abs_labels" in m:
            out.append(f"{m['method']}: ρ with the trained map {_g(m['rho_abs_labels'])} (signed {_g(m['rho_labels'])}).")
    for method in st.get("flagged_labels", []):
        out.append(f"**{method} barely changes when the labels are shuffled**: its map stays correlated above "
                   f"{_g(st['threshold'])} with the trained one, so it does not reflect what the labels taught.")
    if not st.get("flagged_labels"):
        out.append(f"Every map moved below ρ = {_g(st['threshold'])} for the model trained on shuffled labels.")
    return out


def summarize_causal(result: Any) -> Summary:
    """Proxies vs causal effect (playground.analysis.causal.proxies)."""
    return Summary(*causal_parts(result), notes=_stopped(result))


SUMMARIZERS = {
    "causal": summarize_causal,
    "permutation": summarize_permutation,
    "adversarial": summarize_adversarial,
    "agreement": summarize_agreement,
    "uniform": summarize_uniform,
    "seeds": summarize_seeds,
    "diagnostic": summarize_diagnostic,
    "erasure": summarize_erasure,
    "aopc": summarize_curves,
    "pointing": summarize_pointing,
    "sanity": summarize_sanity,
}


def summarize(result: ExperimentResult) -> Summary:
    """The plain-language summary of any experiment result."""
    fn = SUMMARIZERS.get(result.experiment)
    if fn is None:
        return Summary(result.experiment, [f"{result.n_done} examples."], "", "")
    summary = fn(result)
    warning = numerics_warning(result.extra.get("numerics") or {})
    if warning:
        summary.notes.insert(0, warning)
    return summary


def numerics_warning(numerics: dict[str, Any]) -> str:
    """The saturation warning for a result's ``extra["numerics"]`` ('' when no example is saturated)."""
    n_sat = numerics.get("n_saturated", 0)
    if not n_sat:
        return ""
    dtype = numerics.get("dtype", "float32")
    line = (f"Numerical precision: {n_sat} of {numerics.get('n')} examples have a saturated output in {dtype} "
            f"(1 − p down to {_g(numerics.get('min_complement'))}, within {numerics.get('noise_ulps')} × machine "
            f"epsilon {_g(numerics.get('eps'))}): their gradients and leave-one-out changes are at rounding-noise "
            f"level, so per-example τ on them can rank noise.")
    return line + (" Rerun with --float64 (the float64 option) to check." if dtype != "float64" else "")
