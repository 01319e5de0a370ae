"""Repeated and dropped source words: what coverage (See et al. 2017) is meant to fix.

For validation pairs, a seq2seq model decodes greedily and its attention rows are summed per
source token (the total attention that token received over the whole output):

- repeated attention: a token that received >= 1.5 (looked at again and again);
- dropped attention: a token that received <= 0.5 (hardly looked at);
- repeated output: consecutive equal output tokens beyond those the reference has;
- missing content: reference tokens the output lacks (counted as a multiset).

``attention_coverage`` works on any model with ``start`` / ``step`` returning the attention row
(both seq2seq families); ``checkpoint_coverage`` runs it on a checkpoint's own validation pairs.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from itertools import pairwise
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor, nn

from playground.errors import PlaygroundError
from playground.generation.text import token_text

if TYPE_CHECKING:  # bundle imports the family registry
    from playground.bundle import Bundle
    from playground.workspace import Workspace

MAX_EXAMPLES = 2000
REPEATED_AT = 1.5
DROPPED_AT = 0.5


@dataclass
class ExampleCoverage:
    """One pair: its tokens, output and per-source-token attention received."""

    source: list[int]
    reference: list[int]
    output: list[int]
    received: list[float]  # [S] attention summed over the output steps
    repeated_attention: int
    dropped_attention: int
    repeated_output: int
    missing: int


@dataclass
class CoverageCounts:
    """Totals over the examples (see the module docstring for each count)."""

    n_examples: int = 0
    source_tokens: int = 0
    reference_tokens: int = 0
    output_steps: int = 0
    attention_mass: float = 0.0  # sum of every attention row: output_steps when rows sum to 1
    repeated_attention: int = 0
    dropped_attention: int = 0
    repeated_output: int = 0
    missing: int = 0
    exact: int = 0
    examples: list[ExampleCoverage] = field(default_factory=list)
    token_names: dict[int, str] = field(default_factory=dict)  # source token id -> text (for the profile)

    def profile(self, k: int = 5, repeated_at: float = REPEATED_AT,
                dropped_at: float = DROPPED_AT) -> dict[str, list[tuple[str, int]]]:
        """The ``k`` source tokens most often repeated (received >= repeated_at) and dropped
        (<= dropped_at), with how many times: which words the counts are made of."""
        found: dict[str, Counter] = {"repeated": Counter(), "dropped": Counter()}
        for ex in self.examples:
            for tok, r in zip(ex.source, ex.received):
                name = self.token_names.get(tok, str(tok))
                if r >= repeated_at:
                    found["repeated"][name] += 1
                elif r <= dropped_at:
                    found["dropped"][name] += 1
        return {kind: c.most_common(k) for kind, c in found.items()}

    def rates(self) -> dict[str, float]:
        """Shares: repeated/dropped per source token, missing per reference token, the rest per example."""
        return {
            "repeated_attention": self.repeated_attention / max(1, self.source_tokens),
            "dropped_attention": self.dropped_attention / max(1, self.source_tokens),
            "repeated_output_per_example": self.repeated_output / max(1, self.n_examples),
            "missing_per_reference_token": self.missing / max(1, self.reference_tokens),
            "exact_match": self.exact / max(1, self.n_examples),
            "attention_per_step": self.attention_mass / max(1, self.output_steps),
        }

    def to_dict(self, with_examples: bool = False) -> dict[str, Any]:
        out = {k: v for k, v in asdict(self).items() if k not in ("examples", "token_names")}
        out["rates"] = self.rates()
        out["profile"] = {kind: [list(p) for p in pairs] for kind, pairs in self.profile().items()}
        if with_examples:
            out["examples"] = [asdict(e) for e in self.examples]
        return out


def consecutive_repeats(ids: list[int]) -> int:
    """How many tokens equal the one before them."""
    return sum(1 for a, b in pairwise(ids) if a == b)


def missing_tokens(reference: list[int], output: list[int]) -> int:
    """Reference tokens the output lacks, as multisets (a word needed twice and written once: 1)."""
    return sum((Counter(reference) - Counter(output)).values())


def score_example(source: list[int], reference: list[int], output: list[int], rows: Tensor,
                  repeated_at: float = REPEATED_AT, dropped_at: float = DROPPED_AT) -> ExampleCoverage:
    """Counts of one pair from its attention rows [steps, S] (S = len(source), no padding)."""
    received = rows.sum(0).tolist() if rows.shape[0] else [0.0] * len(source)  # [S]
    return ExampleCoverage(
        source=list(source), reference=list(reference), output=list(output), received=received,
        repeated_attention=sum(r >= repeated_at for r in received),
        dropped_attention=sum(r <= dropped_at for r in received),
        repeated_output=max(0, consecutive_repeats(output) - consecutive_repeats(reference)),
        missing=missing_tokens(reference, output),
    )


@torch.no_grad()
def greedy_with_attention(model: nn.Module, src: Tensor, bos_id: int, eos_id: int,
                          max_len: int) -> tuple[list[list[int]], list[Tensor]]:
    """Batched greedy decoding src [B,S] -> (outputs without <eos>, attention rows [steps_b, S] per
    row: every step decoded, the one that wrote <eos> included)."""
    state = model.start(src)
    B = src.shape[0]
    y = torch.full((B,), bos_id, dtype=torch.long, device=src.device)
    done = torch.zeros(B, dtype=torch.bool, device=src.device)
    tokens, alphas, live = [], [], []
    for _ in range(max_len):
        logits, alpha, state = model.step(state, y)  # [B,V], [B,S]
        y = logits.argmax(-1)  # [B]
        tokens.append(y)
        alphas.append(alpha.float())
        live.append(~done)
        done = done | (y == eos_id)
        if bool(done.all()):
            break
    tok = torch.stack(tokens, 1).tolist()  # [B,T]
    att = torch.stack(alphas, 1).cpu()  # [B,T,S]
    alive = torch.stack(live, 1).cpu()  # [B,T] steps decoded before <eos>
    outputs, rows = [], []
    for b in range(B):
        steps = int(alive[b].sum())
        out = tok[b][:steps]
        outputs.append(out[:-1] if out and out[-1] == eos_id else out)
        rows.append(att[b, :steps])
    return outputs, rows


def attention_coverage(model: nn.Module, sources: list[list[int]], references: list[list[int]], *, pad_id: int,
                       bos_id: int, eos_id: int, batch_size: int = 64, extra_steps: int = 5,
                       repeated_at: float = REPEATED_AT, dropped_at: float = DROPPED_AT) -> CoverageCounts:
    """Decode every source greedily (references + ``extra_steps`` steps at most) and count the
    repeated / dropped source tokens and the repeated / missing output tokens."""
    if len(sources) != len(references):
        raise PlaygroundError(f"{len(sources)} sources but {len(references)} references.")
    if not 1 <= len(sources) <= MAX_EXAMPLES:
        raise PlaygroundError(f"Use 1 to {MAX_EXAMPLES} examples, got {len(sources)}.")
    device = next(model.parameters()).device
    counts = CoverageCounts()
    was_training = model.training
    model.eval()
    try:
        for lo in range(0, len(sources), batch_size):
            chunk = sources[lo:lo + batch_size]
            refs = references[lo:lo + batch_size]
            S = max(1, max(map(len, chunk)))
            src = torch.full((len(chunk), S), pad_id, dtype=torch.long)
            for i, s in enumerate(chunk):
                src[i, : len(s)] = torch.tensor(s, dtype=torch.long)
            outputs, rows = greedy_with_attention(model, src.to(device), bos_id, eos_id,
                                                  max(map(len, refs)) + extra_steps)
            for s, ref, out, r in zip(chunk, refs, outputs, rows):
                ex = score_example(s, ref, out, r[:, : len(s)], repeated_at, dropped_at)
                _add(counts, ex, float(r.sum()), int(r.shape[0]))
    finally:
        model.train(was_training)
    return counts


def _add(counts: CoverageCounts, ex: ExampleCoverage, mass: float, steps: int) -> None:
    counts.n_examples += 1
    counts.source_tokens += len(ex.source)
    counts.reference_tokens += len(ex.reference)
    counts.output_steps += steps
    counts.attention_mass += mass
    counts.repeated_attention += ex.repeated_attention
    counts.dropped_attention += ex.dropped_attention
    counts.repeated_output += ex.repeated_output
    counts.missing += ex.missing
    counts.exact += int(ex.output == ex.reference)
    counts.examples.append(ex)


def checkpoint_coverage(bundle: Bundle, n: int = 200, workspace: Workspace | None = None) -> CoverageCounts:
    """:func:`attention_coverage` on the first ``n`` validation pairs of a seq2seq checkpoint."""
    # the trainer loads only when asked
    from playground.analysis.experiments.data import prepare_data

    if not 1 <= n <= MAX_EXAMPLES:
        raise PlaygroundError(f"Use 1 to {MAX_EXAMPLES} validation examples, got {n}.")
    model = bundle.model
    if not (hasattr(model, "start") and hasattr(model, "step")):
        raise PlaygroundError(f"{bundle.name!r} is not an encoder-decoder; the repeated/dropped view reads a seq2seq "
                              "model's attention over its source.")
    _, prep, _ = prepare_data(bundle, workspace)
    data = prep.payload
    idx = range(min(n, len(data.val_src)))
    if not idx:
        raise PlaygroundError(f"{bundle.name!r} has no validation pairs to decode.")
    counts = attention_coverage(model, [data.val_src[i] for i in idx], [data.val_tgt[i] for i in idx],
                                pad_id=data.pad_id, bos_id=data.bos_id, eos_id=data.eos_id)
    if bundle.tokenizer is not None:
        ids = {t for ex in counts.examples for t in ex.source}
        counts.token_names = {t: token_text(bundle.tokenizer, t) for t in ids}
    return counts


COLUMNS = ("repeated attention (>= 1.5)", "dropped attention (<= 0.5)", "repeated output tokens / example",
           "missing reference tokens", "exact match", "attention per output step")


def comparison_rows(reports: dict[str, CoverageCounts]) -> list[list[Any]]:
    """One row per checkpoint: its name and the COLUMNS as shares."""
    rows = []
    for name, c in reports.items():
        r = c.rates()
        rows.append([name, round(r["repeated_attention"], 4), round(r["dropped_attention"], 4),
                     round(r["repeated_output_per_example"], 3), round(r["missing_per_reference_token"], 4),
                     round(r["exact_match"], 4), round(r["attention_per_step"], 3)])
    return rows


def comparison_text(reports: dict[str, CoverageCounts]) -> str:
    """A Markdown table of :func:`comparison_rows` with a short reading guide."""
    head = "| checkpoint | " + " | ".join(COLUMNS) + " |"
    lines = [head, "|" + "---|" * (len(COLUMNS) + 1)]
    for row in comparison_rows(reports):
        lines.append("| " + " | ".join(str(v) for v in row) + " |")
    first = next(iter(reports.values()))
    lines.append("")
    for name, c in reports.items():
        prof = c.profile()
        words = {kind: ", ".join(f"{w!r} x{n}" for w, n in pairs) or "none" for kind, pairs in prof.items()}
        lines.append(f"{name}: most repeated {words['repeated']}; most dropped {words['dropped']}  ")
    lines.append("")
    lines.append(f"{first.n_examples} validation pairs, greedy outputs. Repeated/dropped: share of source tokens "
                 "whose attention summed over the output is at least 1.5 / at most 0.5. Missing: reference tokens "
                 "the output lacks, per reference token. A row that sums to less than 1 per step (local-p's "
                 "Gaussian) makes 'dropped' larger by itself.")
    return "\n".join(lines)
