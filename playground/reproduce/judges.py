"""The numbers each claim is judged on and its verdict: pure functions of the runs' measurements
(tested on synthetic numbers). Thresholds are named here and said in every verdict line."""
from __future__ import annotations

import math
from typing import Any

import pandas as pd

from playground.reproduce.base import Numbers, Runs, Verdict

# a: exact-match points a model may lose from its shortest to its longest sources and still be "flat",
# and the least fall that counts as "falls"
FLAT_POINTS = 10.0
FALL_POINTS = 20.0
MIN_BUCKET = 20  # a length bucket with fewer validation sentences is left out
# b: nats the loss past the trained length may rise above the loss in the trained window's second half
EXTRAPOLATION_TOL = 0.10
# c, f: nats that make a difference (between final validation losses)
CLEAR_GAP = 0.10
# d, g: nats between two final losses below which they are the same (seed noise at this size)
NOISE = 0.02
# Tiny Shakespeare: cross-entropy of the training split's letter frequencies on the validation split
# (3.347 nats); a character model within STUCK of it has learned nothing beyond them
UNIGRAM_NATS = 3.347
STUCK = 0.05


def _stuck(loss: float) -> str:
    return " (letter frequencies only)" if abs(loss - UNIGRAM_NATS) <= STUCK else ""


def _loss(runs: Runs, name: str) -> float:
    return float(runs[name]["final"]["val_loss"])


def _fmt(x: float, digits: int = 3) -> str:
    return f"{x:.{digits}f}"


def curve_frame(runs: Runs) -> pd.DataFrame:
    """Validation loss against step, one series per run."""
    rows = [{"x": step, "y": val, "series": r["label"]} for r in runs.values() for step, _, val in r["curve"]]
    return pd.DataFrame(rows, columns=["x", "y", "series"])


def final_table(runs: Runs, keys: tuple[str, ...] = ("val_loss",)) -> pd.DataFrame:
    """One row per run: its label, final metrics and wall time."""
    rows = []
    for r in runs.values():
        row: dict[str, Any] = {"run": r["label"]}
        row.update({k.replace("_", " "): r["final"].get(k) for k in keys})
        row["wall s"] = r.get("wall_s")
        rows.append(row)
    return pd.DataFrame(rows)


# -- a. the bottleneck ---------------------------------------------------------------------------

BOTTLENECK_METRIC = "token_accuracy"  # per word, like BLEU; exact match compounds every word's error


def bottleneck_numbers(runs: Runs) -> Numbers:
    """Token accuracy (%) on the shortest and longest well-filled length buckets, and the fall between."""
    out: Numbers = {}
    for name, r in runs.items():
        buckets = [b for b in r.get("by_length", []) if (b.get("n") or 0) >= MIN_BUCKET]
        if not buckets:
            continue
        short, long = buckets[0], buckets[-1]
        m = BOTTLENECK_METRIC
        out[name] = {"short_bucket": short["bucket"], "long_bucket": long["bucket"],
                     "short": round(100 * short[m], 1), "long": round(100 * long[m], 1),
                     "fall": round(100 * (short[m] - long[m]), 1)}
    return out


def bottleneck_verdict(numbers: Numbers) -> Verdict:
    """Holds when attention falls by at most FLAT_POINTS while no attention falls by FALL_POINTS or more."""
    if "attention" not in numbers or "noattn" not in numbers:
        return Verdict(None, "cannot tell: a run has no length bucket with enough sentences.")
    a, n = numbers["attention"], numbers["noattn"]
    span = f"from {a['short_bucket']} to {a['long_bucket']} words"
    text = (f"word accuracy with attention {a['short']:.0f}% → {a['long']:.0f}% (falls {a['fall']:.0f} points), "
            f"without {n['short']:.0f}% → {n['long']:.0f}% (falls {n['fall']:.0f}) {span}")
    if a["short"] < 50:
        return Verdict(None, f"cannot tell: the attention model has not learned even short sources ({text}).")
    holds = a["fall"] <= FLAT_POINTS and n["fall"] >= FALL_POINTS
    rule = f"flat = falls ≤ {FLAT_POINTS:.0f} points, falls = ≥ {FALL_POINTS:.0f}"
    return Verdict(holds, f"{'holds' if holds else 'does not hold'}: {text} ({rule}).")


def bottleneck_table(runs: Runs, numbers: Numbers) -> pd.DataFrame:
    """Token accuracy and exact match (%) per source-length bucket, one column each per run."""
    rows: dict[str, dict[str, Any]] = {}
    for r in runs.values():
        for b in r.get("by_length", []):
            row = rows.setdefault(b["bucket"], {"source words": b["bucket"], "sentences": b.get("n"), "lo": b["lo"]})
            row[f"{r['label']}: words %"] = round(100 * b["token_accuracy"], 1)
            row[f"{r['label']}: exact %"] = round(100 * b["exact_match"], 1)
    table = pd.DataFrame(sorted(rows.values(), key=lambda r: r["lo"]))
    return table.drop(columns=["lo"]) if not table.empty else table


def bottleneck_chart(runs: Runs) -> pd.DataFrame:
    """Token accuracy (%) against source length (bucket start), one series per run."""
    rows = [{"x": b["lo"], "y": 100 * b[BOTTLENECK_METRIC], "series": r["label"]}
            for r in runs.values() for b in r.get("by_length", []) if (b.get("n") or 0) >= MIN_BUCKET]
    return pd.DataFrame(rows, columns=["x", "y", "series"])


# -- b. positions past the training length -------------------------------------------------------

def positions_numbers(runs: Runs) -> Numbers:
    """Per encoding: mean loss on the second half of the trained window, past it (T .. 4T), and the rise."""
    out: Numbers = {}
    for name, r in runs.items():
        pos = r["positions"]
        trained, losses = pos["trained"], pos["loss"]
        inside = sum(losses[trained // 2:trained]) / (trained - trained // 2)
        row: dict[str, Any] = {"trained": trained, "evaluated": pos["positions"], "inside": round(inside, 4)}
        if pos["positions"] > trained:
            beyond = losses[trained:]
            row["beyond"] = round(sum(beyond) / len(beyond), 4)
            row["worst"] = round(max(beyond), 4)
            row["rise"] = round(row["beyond"] - inside, 4)
        out[name] = row
    return out


EXTRAPOLATING = ("sinusoidal", "rope", "alibi")  # what the notes say extrapolates
NAMES = {"rope": "RoPE", "alibi": "ALiBi"}


def _names(keys: list[str]) -> str:
    return ", ".join(NAMES.get(k, k) for k in keys)


def positions_verdict(numbers: Numbers) -> Verdict:
    """Holds when learned stops at the trained length and each of sinusoidal, RoPE, ALiBi stays
    within EXTRAPOLATION_TOL nats past it."""
    missing = [k for k in ("learned", *EXTRAPOLATING) if k not in numbers]
    if missing:
        return Verdict(None, f"cannot tell: no run for {', '.join(missing)}.")
    learned = numbers["learned"]
    stops = "rise" not in learned
    ok = [k for k in EXTRAPOLATING if numbers[k].get("rise") is not None and numbers[k]["rise"] <= EXTRAPOLATION_TOL]
    bad = [k for k in EXTRAPOLATING if k not in ok]
    far = numbers[EXTRAPOLATING[0]]["evaluated"]
    parts = [f"learned {'stops at' if stops else 'runs past'} {learned['trained']} positions"]
    if ok:
        parts.append(f"{_names(ok)} {'stays' if len(ok) == 1 else 'stay'} within {EXTRAPOLATION_TOL} nats out to {far}")
    for k in bad:
        parts.append(f"{_names([k])} rises by {numbers[k]['rise']:.2f} nats")
    if "none" in numbers and numbers["none"].get("rise") is not None:
        parts.append(f"no positions: {numbers['none']['rise']:+.2f}")
    holds = stops and not bad
    word = "holds" if holds else ("partly holds" if ok else "does not hold")
    return Verdict(holds, f"{word}: " + "; ".join(parts) + ".")


def positions_table(runs: Runs, numbers: Numbers) -> pd.DataFrame:
    """Per encoding: loss inside the trained window (second half), past it, the rise."""
    rows = []
    far = max(n["evaluated"] for n in numbers.values())
    for name, r in runs.items():
        n = numbers[name]
        rows.append({"encoding": r["label"], "val loss": r["final"]["val_loss"],
                     f"loss at {n['trained'] // 2}..{n['trained'] - 1}": n["inside"],
                     f"loss at {n['trained']}..{far - 1}": n.get("beyond", "no vectors"),
                     "rise (nats)": n.get("rise", "—")})
    return pd.DataFrame(rows)


def positions_chart(runs: Runs, smooth: int = 4) -> pd.DataFrame:
    """Loss against position (means over `smooth` positions), one series per encoding."""
    rows = []
    for r in runs.values():
        losses = r["positions"]["loss"]
        for i in range(0, len(losses), smooth):
            chunk = losses[i:i + smooth]
            rows.append({"x": i + (len(chunk) - 1) / 2, "y": sum(chunk) / len(chunk), "series": r["label"]})
    return pd.DataFrame(rows, columns=["x", "y", "series"])


# -- c. warm-up: post-LN vs pre-LN ---------------------------------------------------------------

def warmup_numbers(runs: Runs) -> Numbers:
    """Final val loss of each run and what warm-up buys each placement (loss without − with)."""
    out: Numbers = {name: _loss(runs, name) for name in runs}
    for norm in ("post", "pre"):
        if f"{norm}_nowarmup" in runs and f"{norm}_warmup" in runs:
            out[f"{norm}_gain"] = round(out[f"{norm}_nowarmup"] - out[f"{norm}_warmup"], 4)
    return out


def warmup_table(runs: Runs, numbers: Numbers) -> pd.DataFrame:
    """Final val loss and wall time per run."""
    return final_table(runs)


def warmup_verdict(numbers: Numbers) -> Verdict:
    """Holds when warm-up buys post-LN at least CLEAR_GAP nats and pre-LN less than that."""
    if "post_gain" not in numbers or "pre_gain" not in numbers:
        return Verdict(None, "cannot tell: the four runs (post/pre × with/without warm-up) are needed.")
    post, pre = numbers["post_gain"], numbers["pre_gain"]
    holds = post >= CLEAR_GAP and pre < CLEAR_GAP
    text = (f"without warm-up post-LN ends at {_fmt(numbers['post_nowarmup'])} nats"
            f"{_stuck(numbers['post_nowarmup'])}, with it at "
            f"{_fmt(numbers['post_warmup'])} (warm-up gains {post:+.2f}); pre-LN ends at "
            f"{_fmt(numbers['pre_nowarmup'])} without and {_fmt(numbers['pre_warmup'])} with it (gains {pre:+.2f}); "
            f"a gain counts from {CLEAR_GAP} nats")
    return Verdict(holds, f"{'holds' if holds else 'does not hold'}: {text}.")


# -- d. √d_k --------------------------------------------------------------------------------------

def _pairs_by_size(runs: Runs, size: str, worse: str, better: str) -> Numbers:
    """Per size (the run name's suffix, e.g. "scaled_64"): each kind's final val loss, and the
    gap (worse − better) where both kinds ran; rows in increasing size."""
    out: Numbers = {}
    for name, r in runs.items():
        kind, value = name.rsplit("_", 1)
        row = out.setdefault(value, {size: int(value)})
        row[kind] = r["final"]["val_loss"]
    for row in out.values():
        if worse in row and better in row:
            row["gap"] = round(row[worse] - row[better], 4)
    return dict(sorted(out.items(), key=lambda kv: kv[1][size]))


def scale_numbers(runs: Runs) -> Numbers:
    """Per head size d_k: final loss scaled and unscaled, and the gap (unscaled − scaled)."""
    return _pairs_by_size(runs, "d_k", worse="unscaled", better="scaled")  # runs "scaled_64", "unscaled_64"


def scale_verdict(numbers: Numbers) -> Verdict:
    """Holds when the unscaled model's extra loss grows with d_k and is beyond noise at the largest."""
    rows = [r for r in numbers.values() if "gap" in r]
    if len(rows) < 2:
        return Verdict(None, "cannot tell: two head sizes with both runs are needed.")
    small, large = rows[0], rows[-1]
    gaps = ", ".join(f"d_k {r['d_k']}: {r['gap']:+.3f}" for r in rows)
    holds = large["gap"] > NOISE and large["gap"] > small["gap"] + NOISE
    return Verdict(holds, f"{'holds' if holds else 'does not hold'}: unscaled minus scaled loss {gaps} nats "
                          f"(noise ≈ {NOISE}).")


def scale_table(runs: Runs, numbers: Numbers) -> pd.DataFrame:
    return pd.DataFrame([{"d_k": r["d_k"], "scaled": r.get("scaled"), "unscaled": r.get("unscaled"),
                          "unscaled − scaled": r.get("gap")} for r in numbers.values()])


def final_by_group_chart(runs: Runs) -> pd.DataFrame:
    """Final val loss per run as bars: x = the number after the last '_' of the run name, series = the rest."""
    rows = []
    for name, r in runs.items():
        kind, value = name.rsplit("_", 1)
        rows.append({"x": int(value), "y": r["final"]["val_loss"], "series": kind})
    return pd.DataFrame(rows, columns=["x", "y", "series"])


# -- e. label smoothing ---------------------------------------------------------------------------

def smoothing_numbers(runs: Runs) -> Numbers:
    """Per run: validation perplexity (exp of the unsmoothed loss), exact match and token accuracy (%)."""
    out: Numbers = {}
    for name, r in runs.items():
        f = r["final"]
        out[name] = {"perplexity": round(math.exp(f["val_loss"]), 4),
                     "exact_match": round(100 * f.get("exact_match", float("nan")), 2),
                     "token_accuracy": round(100 * f.get("token_accuracy", float("nan")), 2)}
    return out


def smoothing_verdict(numbers: Numbers) -> Verdict:
    """Holds when smoothing raises perplexity and does not lower exact match (by more than 0.5 points)."""
    if "ls0" not in numbers or "ls01" not in numbers:
        return Verdict(None, "cannot tell: the runs with ε = 0 and ε = 0.1 are needed.")
    a, b = numbers["ls0"], numbers["ls01"]
    hurts = b["perplexity"] > a["perplexity"]
    helps = b["exact_match"] >= a["exact_match"] - 0.5
    text = (f"perplexity {a['perplexity']:.3f} → {b['perplexity']:.3f} "
            f"({'higher' if hurts else 'not higher'}), exact match {a['exact_match']:.1f}% → {b['exact_match']:.1f}%, "
            f"token accuracy {a['token_accuracy']:.1f}% → {b['token_accuracy']:.1f}% with ε = 0.1")
    return Verdict(hurts and helps, f"{'holds' if hurts and helps else 'does not hold'}: {text}.")


def smoothing_table(runs: Runs, numbers: Numbers) -> pd.DataFrame:
    return pd.DataFrame([{"run": runs[k]["label"], "perplexity": v["perplexity"], "exact match %": v["exact_match"],
                          "token accuracy %": v["token_accuracy"], "wall s": runs[k].get("wall_s")}
                         for k, v in numbers.items()])


# -- f. residual connections ------------------------------------------------------------------------

def residual_numbers(runs: Runs) -> Numbers:
    """Per depth: final loss with and without residual connections, and the gap (without − with)."""
    return _pairs_by_size(runs, "layers", worse="plain", better="residual")  # runs "residual_8", "plain_8"


def residual_verdict(numbers: Numbers) -> Verdict:
    """Holds when removing residuals costs the deep stack ≥ CLEAR_GAP nats, more than the shallow one."""
    rows = [r for r in numbers.values() if "gap" in r]
    if len(rows) < 2:
        return Verdict(None, "cannot tell: a shallow and a deep stack, each with and without residuals, are needed.")
    shallow, deep = rows[0], rows[-1]
    holds = deep["gap"] >= CLEAR_GAP and deep["gap"] > shallow["gap"]
    text = (f"{deep['layers']} layers end at {_fmt(deep['plain'])} nats without residuals{_stuck(deep['plain'])} and "
            f"{_fmt(deep['residual'])} with them ({deep['gap']:+.2f}); {shallow['layers']} layers at "
            f"{_fmt(shallow['plain'])} and {_fmt(shallow['residual'])} ({shallow['gap']:+.2f})")
    return Verdict(holds, f"{'holds' if holds else 'does not hold'}: {text}; a difference counts from {CLEAR_GAP} nats.")


def residual_table(runs: Runs, numbers: Numbers) -> pd.DataFrame:
    return pd.DataFrame([{"layers": r["layers"], "with residuals": r.get("residual"), "without": r.get("plain"),
                          "without − with": r.get("gap")} for r in numbers.values()])


# -- g. heads ---------------------------------------------------------------------------------------

SEED_SPREAD_FACTOR = 3.0  # heads: a difference counts when it is this many times the seeds' spread
MIN_SPREAD = 0.002  # ... and never below this many nats (a spread of zero is luck, not precision)


def heads_numbers(runs: Runs) -> Numbers:
    """Final val loss per head count, the spread of the repeated run over seeds, and how far one
    head is from the best of several."""
    losses = {int(name.split("_")[1]): r["final"]["val_loss"] for name, r in runs.items() if name.startswith("heads_")}
    out: Numbers = {"loss": {str(h): losses[h] for h in sorted(losses)}}
    seeds = {name: r["final"]["val_loss"] for name, r in runs.items() if name.startswith("seed")}
    if seeds:
        repeated = int(next(iter(seeds)).split("_")[1])
        values = [*seeds.values()] + ([losses[repeated]] if repeated in losses else [])
        out.update(seed_heads=repeated, seed_losses=sorted(values), spread=round(max(values) - min(values), 5))
    several = {h: v for h, v in losses.items() if h > 1}
    if 1 in losses and several:
        best = min(several, key=several.get)
        out.update(best_heads=best, best_loss=several[best], single_loss=losses[1],
                   single_gap=round(losses[1] - several[best], 4))
    return out


def heads_verdict(numbers: Numbers) -> Verdict:
    """Holds when one head ends worse than the best multi-head run by more than SEED_SPREAD_FACTOR
    times the seeds' spread (NOISE when no seeds were repeated)."""
    if "single_gap" not in numbers:
        return Verdict(None, "cannot tell: runs with one head and with several are needed.")
    gap = numbers["single_gap"]
    if "spread" in numbers:
        bar = max(SEED_SPREAD_FACTOR * numbers["spread"], MIN_SPREAD)
        noise = (f"{len(numbers['seed_losses'])} seeds of the {numbers['seed_heads']}-head run spread over "
                 f"{numbers['spread']:.4f}; a difference counts from {bar:.3f}")
    else:
        bar, noise = NOISE, f"noise ≈ {NOISE}"
    holds = gap > bar
    text = (f"one head ends at {_fmt(numbers['single_loss'])}, {numbers['best_heads']} heads at "
            f"{_fmt(numbers['best_loss'])} ({gap:+.3f} nats; {noise})")
    return Verdict(holds, f"{'holds' if holds else 'does not hold'}: {text}.")


def heads_chart(runs: Runs) -> pd.DataFrame:
    """Final val loss per head count (x), one bar per seed (series)."""
    rows = [{"x": int(name.split("_")[1]), "y": r["final"]["val_loss"],
             "series": f"seed {name[4:].split('_')[0]}" if name.startswith("seed") else "preset seed"}
            for name, r in runs.items()]
    return pd.DataFrame(rows, columns=["x", "y", "series"])


def heads_table(runs: Runs, numbers: Numbers) -> pd.DataFrame:
    """One row per run: heads, its label (the seed for repeats), final val loss, wall time."""
    rows = [{"heads": int(name.split("_")[1]), "run": r["label"], "val loss": r["final"]["val_loss"],
             "wall s": r.get("wall_s")} for name, r in runs.items()]
    return pd.DataFrame(rows).sort_values(["heads", "run"]).reset_index(drop=True)
