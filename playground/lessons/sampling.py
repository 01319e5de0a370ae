"""Sampling: temperature, top-k, top-p and min-p on any logits, with the app's own filters
(playground.generation.filters, the ones Generate uses), and the notes' temperature table."""
from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from playground.charts.lessons_math import (
    sampling_stages_chart,
    temperature_sweep_chart,
)
from playground.generation.filters import SamplingConfig, filter_stages
from playground.generation.filters import temperature as divide_by
from playground.lessons.base import Lesson, LessonView, Param
from playground.lessons.inputs import parse_vector

MAX_LOGITS = 32
NOTES_LOGITS = (2.0, 1.0, 0.5, -0.5)
NOTES_TEMPERATURES = (0.1, 0.5, 1.0, 2.0, 5.0)
# The notes' printed table for NOTES_LOGITS (probabilities at each temperature).
NOTES_PRINTED = {0.1: (1.000, 0.000, 0.000, 0.000), 0.5: (0.844, 0.114, 0.038, 0.004),
                 1.0: (0.506, 0.186, 0.113, 0.042), 2.0: (0.356, 0.224, 0.192, 0.120),
                 5.0: (0.281, 0.258, 0.248, 0.213)}
STAGES = {"raw": "model (T = 1)", "temperature": "÷ temperature", "top_k": "top-k", "top_p": "top-p",
          "min_p": "min-p = sampled from"}


def entropy_nats(p: np.ndarray) -> float:
    """Shannon entropy in nats (0 · log 0 = 0)."""
    nz = p[p > 0]
    return float(-(nz * np.log(nz)).sum())


def probabilities(logits: np.ndarray, t: float) -> np.ndarray:
    """softmax(logits / t) with the app's temperature filter (t = 0: greedy)."""
    return divide_by(torch.from_numpy(logits), t).softmax(-1).numpy()


def temperature_table(logits: np.ndarray, temperatures: tuple[float, ...], labels: list[str]) -> pd.DataFrame:
    """One row per temperature: each token's probability, their sum and the entropy."""
    rows = []
    for t in temperatures:
        p = probabilities(logits, t)
        rows.append({"temperature": t, **dict(zip(labels, p)), "sum": float(p.sum()), "entropy (nats)": entropy_nats(p)})
    return pd.DataFrame(rows)


def _printed_notes(logits: np.ndarray, table: pd.DataFrame, labels: list[str]) -> list[str]:
    """For the notes' own logits: each printed row that differs from the exact one."""
    if logits.shape != (len(NOTES_LOGITS),) or not np.allclose(logits, NOTES_LOGITS):
        return []
    notes = []
    for t, printed in NOTES_PRINTED.items():
        ours = table.loc[table["temperature"] == t, labels].to_numpy()[0]
        if not np.allclose(np.round(ours, 3), printed, atol=6e-4):
            notes.append(f"T = {t:g}: the notes print ({', '.join(f'{v:.3f}' for v in printed)}), summing to "
                         f"{sum(printed):.3f}; exactly it is ({', '.join(f'{v:.3f}' for v in ours)}).")
    return notes


def compute(logits: str, temperature: float, top_k: int, top_p: float, min_p: float) -> LessonView:
    """The distribution after each filter, and softmax(logits / T) over a range of temperatures."""
    values = parse_vector(logits, "Logits", MAX_LOGITS, min_len=2)
    labels = [f"#{i + 1}" for i in range(len(values))]
    cfg = SamplingConfig(temperature=temperature, top_k=top_k, top_p=top_p, min_p=min_p)
    stages = {k: v.numpy() for k, v in filter_stages(torch.from_numpy(values), cfg).items() if k in STAGES}
    stage_table = pd.DataFrame({"token": labels, "logit": values, **{STAGES[k]: p for k, p in stages.items()}})
    final = stages["min_p"]
    temps = tuple(sorted({*NOTES_TEMPERATURES, *([temperature] if temperature > 0 else [])}))
    table = temperature_table(values, temps, labels)
    sweep_t = np.geomspace(0.05, 10, 60)
    sweep = pd.DataFrame([{"temperature": float(t), "token": lab, "probability": float(p)}
                          for t in sweep_t for lab, p in zip(labels, probabilities(values, float(t)))])
    long = stage_table.melt(id_vars=["token"], value_vars=list(STAGES.values()), var_name="stage",
                            value_name="probability")
    kept = [lab for lab, p in zip(labels, final) if p > 0]
    notes = [(f"Sampled from: {len(kept)} of {len(labels)} tokens ({', '.join(kept)}), entropy "
             f"{entropy_nats(final):.3f} nats (uniform over all would be {np.log(len(labels)):.3f}).")]
    notes += _printed_notes(values, table, labels)
    return LessonView(
        numbers={"stages": {k: [round(float(x), 6) for x in p] for k, p in stages.items()},
                 "kept": kept, "entropy_final": round(entropy_nats(final), 6),
                 "temperature_table": {f"{t:g}": [round(float(x), 6) for x in table.loc[i, labels]]
                                       for i, t in enumerate(table["temperature"])}},
        tables={"After each filter": stage_table, "softmax(logits / T)": table},
        charts=[sampling_stages_chart(long, list(STAGES.values())), temperature_sweep_chart(sweep, temperature)],
        notes=notes,
    )


LESSON = Lesson(
    name="sampling",
    title="Sampling: temperature, top-k, top-p",
    short="Sampling",
    text=("A model gives scores (logits); softmax turns them into the probabilities a token is drawn from. "
          "Temperature divides the scores first (below 1 sharpens, above 1 flattens, 0 always picks the top "
          "token); top-k keeps the k likeliest tokens, top-p the fewest whose total reaches p, min-p those at "
          "least p times as likely as the top one."),
    formula=(r"$p_i=\dfrac{e^{z_i/T}}{\sum_j e^{z_j/T}}$; top-k: keep the $k$ largest $z_i$; top-p: keep the "
             r"likeliest tokens until $\sum p_i\ge p$; min-p: keep $p_i\ge p\cdot\max_j p_j$; then renormalise."),
    see_also=("Generate: the temperature, top-k, top-p and min-p controls apply exactly these filters, in this order, "
              "to the model's logits at every step."),
    params=(
        Param("logits", "Logits (numbers, ',' between)", "text", ", ".join(f"{v:g}" for v in NOTES_LOGITS),
              max_chars=400, help=f"2 to {MAX_LOGITS} scores"),
        Param("temperature", "Temperature (0 = greedy)", "float", 1.0, minimum=0.0, maximum=5.0, step=0.05),
        Param("top_k", "Top-k (0 = off)", "int", 0, minimum=0, maximum=MAX_LOGITS, step=1),
        Param("top_p", "Top-p (1 = off)", "float", 1.0, minimum=0.01, maximum=1.0, step=0.01),
        Param("min_p", "Min-p (0 = off)", "float", 0.0, minimum=0.0, maximum=1.0, step=0.01),
    ),
    compute=compute,
    presets={
        "The notes' scores (2, 1, 0.5, −0.5)": {"logits": "2, 1, 0.5, -0.5", "temperature": 1.0, "top_k": 0,
                                                 "top_p": 1.0, "min_p": 0.0},
        "Sharp: T = 0.5, top-k 2": {"logits": "2, 1, 0.5, -0.5", "temperature": 0.5, "top_k": 2, "top_p": 1.0,
                                    "min_p": 0.0},
        "Nucleus p = 0.9 on a long tail": {"logits": "3, 2.5, 2, 1, 0.5, 0, -0.5, -1, -1.5, -2", "temperature": 1.0,
                                           "top_k": 0, "top_p": 0.9, "min_p": 0.0},
        "Min-p 0.1 at T = 1.5": {"logits": "3, 2.5, 2, 1, 0.5, 0, -0.5, -1, -1.5, -2", "temperature": 1.5,
                                 "top_k": 0, "top_p": 1.0, "min_p": 0.1},
    },
    max_charts=2,
    max_tables=2,
)
