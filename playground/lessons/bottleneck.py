"""Bottleneck, attention and recurrence: the shipped toy-translation GRUs with and without attention
(accuracy against source length from their metrics.csv, and one sentence translated by both with
the attention model's alignment), then RNN vs Transformer throughput measured live."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from playground.bundle import cached_bundle
from playground.charts.generation import alignment_chart, alignment_frame
from playground.charts.lessons_models import throughput_chart
from playground.charts.training import bottleneck_chart
from playground.data.toy_translation import lexicon_words, translate
from playground.errors import PlaygroundError
from playground.generation.api import GenerateRequest, generate
from playground.lessons.base import Lesson, LessonInputError, LessonView, Param
from playground.lessons.seq2seq_speed import BATCH, throughput
from playground.settings import SHIPPED_LIBRARY
from playground.training.runs import bucket_table
from playground.workspace import Workspace

ATTENTION = "seq2seq-toytranslation-bahdanau"
NO_ATTENTION = "seq2seq-toytranslation-noattn"
MAX_WORDS = 60  # the longest source the shipped models were trained on
LENGTHS = (16, 32, 64, 128, 256)
LONG = (40, 60)  # buckets of 40 to 59 source words count as "long sources"
EXAMPLES = {
    "Adjectives reordered": "the big black dog sees the small white cat",
    "European economic area": "the famous european economic area has the old markets",
    "A long sentence (39 words)": (
        "the young teacher finds the cold river near the old bridge while my happy children paint the green "
        "trees and the famous woman visits our quiet garden but the strong horses follow the long road near the "
        "dark city"),
}


def accuracy_by_length(workspace: Workspace, names: list[str]) -> pd.DataFrame:
    """Each run's last evaluation per source-length bucket (exact match, token accuracy, n)."""
    return bucket_table(workspace, names)


def long_source_summary(buckets: pd.DataFrame, measure: str, span: tuple[int, int] = LONG) -> dict[str, float]:
    """Per run, `measure` over the buckets starting in [span), weighted by each bucket's examples."""
    long = buckets[(buckets["length"] >= span[0]) & (buckets["length"] < span[1])]
    return {run: float(np.average(g[measure], weights=g["n"])) for run, g in long.groupby("run")}


def check_sentence(sentence: str) -> list[str]:
    """The sentence's words, or LessonInputError naming those outside the toy language."""
    words = sentence.lower().split()
    if not words:
        raise LessonInputError("Type an English sentence of the toy language (e.g. the big black dog sees the cat).")
    if len(words) > MAX_WORDS:
        raise LessonInputError(f"The sentence has {len(words)} words; the models were trained on at most {MAX_WORDS}.")
    known = set(lexicon_words())
    unknown = sorted({w for w in words if w not in known})
    if unknown:
        sample = ", ".join(sorted(known)[:: max(1, len(known) // 12)][:12])
        raise LessonInputError(f"Not in the toy language: {', '.join(repr(w) for w in unknown)}. It knows "
                               f"{len(known)} words, e.g. {sample}.")
    return words


def gold_agreement(alignment: np.ndarray, gold: list[tuple[int, int]], n_targets: int) -> float | None:
    """Share of output words whose most-attended source word is one the reference aligns them to."""
    links: dict[int, set[int]] = {}
    for t, s in gold:
        links.setdefault(t, set()).add(s)
    rows = [t for t in range(min(n_targets, alignment.shape[0])) if t in links]
    if not rows:
        return None
    return float(np.mean([int(np.argmax(alignment[t])) in links[t] for t in rows]))


def translate_with(model_dir: Path, sentence: str) -> Any:
    """Greedy translation by one shipped checkpoint: its SampleResult (output, alignment [T,S])."""
    bundle = cached_bundle(model_dir)
    request = GenerateRequest(prompt=sentence, max_new_tokens=2 * MAX_WORDS + 10)
    return generate(bundle, request).samples[0]


def compute(sentence: str, measure: str, max_length: str) -> LessonView:
    """The bottleneck curve from the shipped metrics, one sentence through both models, and the throughput probe."""
    words = check_sentence(sentence)
    sentence = " ".join(words)
    workspace = Workspace(SHIPPED_LIBRARY)
    present = [n for n in (ATTENTION, NO_ATTENTION) if workspace.exists("models", n)]
    buckets = accuracy_by_length(workspace, present)
    numbers: dict[str, Any] = {"runs": present}
    notes: list[str] = []
    if not buckets.empty:
        summary = long_source_summary(buckets, measure)
        numbers["buckets"] = buckets.to_dict("records")
        numbers[f"{measure}_long_sources"] = summary
        notes.append(f"Read from the shipped runs' metrics.csv (last evaluation, 500 validation pairs): "
                     f"{measure.replace('_', ' ')} on sources of {LONG[0]} to {LONG[1] - 1} words is "
                     + ", ".join(f"{v:.2f} for {k}" for k, v in summary.items()) + ".")
    if NO_ATTENTION not in present:
        notes.append(f"The run without attention ({NO_ATTENTION}) is not installed; "
                     f"`python -m playground train {NO_ATTENTION}` trains it (the attention run took 12 minutes on an "
                     "idle 2-core CPU).")
    notes.append("Bahdanau et al. (2015, Table 1) saw the same on WMT'14 English→French: trained on sentences up to 50 "
                 "words, the encoder-decoder without attention scored 17.82 BLEU and the one with attention 26.75.")

    reference = None
    try:
        reference = translate(sentence)
    except PlaygroundError as exc:
        notes.append(f"No reference translation: {exc}.")
    rows = [{"model": "reference (the toy grammar)", "output": reference.tgt if reference else "—", "exact": None}]
    attention_result = None
    for name in present:
        result = translate_with(workspace.path("models", name), sentence)
        exact = (result.text == reference.tgt) if reference else None
        rows.append({"model": name, "output": result.text, "exact": exact})
        numbers[f"output:{name}"] = result.text
        if name == ATTENTION:
            attention_result = result
    outputs = pd.DataFrame(rows)
    charts = [bottleneck_chart(buckets, measure)]
    if attention_result is not None:
        alignment = np.asarray(attention_result.alignment)  # [T,S]
        frame = alignment_frame(alignment, attention_result.source_tokens, attention_result.target_tokens)
        charts.append(alignment_chart(frame, title=f"Where {ATTENTION} looks for each output word"))
        if reference is not None and attention_result.text == reference.tgt:
            agreement = gold_agreement(alignment, reference.alignment or [], len(reference.tgt.split()))
            numbers["alignment_agrees_with_gold"] = agreement
            if agreement is not None:
                notes.append(f"For {agreement:.0%} of the output words the most-attended source word is the one the "
                             "grammar aligns it to (adjectives after the noun, in mirrored order).")

    lengths = [t for t in LENGTHS if t <= int(max_length)]
    speed, sizes = throughput(lengths)
    numbers["throughput"] = speed.round(3).to_dict("records")
    numbers["throughput_parameters"] = sizes
    charts.append(throughput_chart(speed))
    notes.append(f"Throughput measured now on this server (one CPU thread, batch {BATCH}, untrained models: the GRU of "
                 f"{sizes['rnn_seq2seq']:,} parameters, a 2+2-layer Transformer of {sizes['transformer_seq2seq']:,}). "
                 "Teacher-forced passes are what training runs: the Transformer takes all target positions at once, "
                 "the GRU one after another; greedy decoding is one step per token for both.")
    tables = {"Accuracy by source length": buckets, "One sentence, both models": outputs, "Throughput": speed}
    return LessonView(numbers=numbers, tables=tables, charts=charts, notes=notes)


LESSON = Lesson(
    name="bottleneck",
    title="Bottleneck, attention and recurrence",
    short="Bottleneck",
    text=("An encoder-decoder without attention must pack the whole source into one fixed vector, so the longer "
          "the sentence, the more it forgets. Attention lets every output step look back at every source word, and "
          "accuracy stays up as sentences grow. Recurrence still reads one token after another, which is what the "
          "Transformer removes."),
    formula=(r"without attention $c=h_S$ for every step; with it $c_t=\sum_s \alpha_{ts} h_s$, "
             r"$\alpha_{ts}=\mathrm{softmax}_s\big(v^\top\tanh(W[s_{t-1};h_s])\big)$."),
    see_also=("Train: the presets seq2seq-toytranslation-bahdanau and -noattn re-run both curves (Bottleneck chart); "
              "Generate: the same alignment for any sentence; Analyze: how much each source word mattered."),
    params=(
        Param("sentence", "English sentence (toy language)", "text", EXAMPLES["Adjectives reordered"], max_chars=600),
        Param("measure", "Accuracy", "choice", "exact_match", choices=("exact_match", "token_accuracy")),
        Param("max_length", "Longest length in the throughput probe", "choice", "128",
              choices=tuple(str(t) for t in LENGTHS)),
    ),
    compute=compute,
    presets={name: {"sentence": text} for name, text in EXAMPLES.items()},
    max_charts=3,
    max_tables=3,
)
