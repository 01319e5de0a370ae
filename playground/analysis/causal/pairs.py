"""Clean / corrupted input pairs of the same length, typed or made for built-in tasks.

- typed: two texts; the answer defaults to the model's top token on the clean input and the
  wrong answer to its top token on the corrupted one (metric: their logit difference).
- ``ioi``: Wang et al.'s indirect-object template; the corruption swaps which name repeats,
  so the answer changes from one name to the other.
- ``dates``: a date written twice; the corruption changes one digit of the year in the first
  copy, so the copy's next digit changes.
- ``induction``: random tokens repeated; the corruption changes the token *before* the
  answer's first occurrence, so the pattern "after X comes Y" the model could copy is gone
  (metric: the answer's log-probability).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from tokenizers import Tokenizer
from torch import Tensor, nn

from playground.analysis.causal.patching import Metric
from playground.analysis.inputs import encode_input, token_label
from playground.errors import PlaygroundError

TASKS = ("ioi", "dates", "induction")
IOI_TEMPLATE = "When {a} and {b} went to the store, {s} gave a drink to"
IOI_NAMES = ("Mary", "John")
DATE_CLEAN, DATE_CORRUPT = "On 12/05/1987 and again on 12/05/19", "On 12/05/1957 and again on 12/05/19"


@dataclass
class Pair:
    """Ids [1,T] of both inputs, the metric, token labels and a one-line description."""

    clean_ids: Tensor
    corrupted_ids: Tensor
    metric: Metric
    tokens: list[str]
    corrupted_tokens: list[str]
    description: str

    def to_dict(self) -> dict:
        return {"clean_ids": self.clean_ids[0].tolist(), "corrupted_ids": self.corrupted_ids[0].tolist(),
                "tokens": self.tokens, "corrupted_tokens": self.corrupted_tokens, "metric": self.metric.name,
                "position": self.metric.position, "answer": self.metric.answer, "wrong": self.metric.wrong,
                "description": self.description}


def _labels(tokenizer: Tokenizer | None, ids: Sequence[int]) -> list[str]:
    return [token_label(tokenizer, int(i)) for i in ids]


def _top(model: nn.Module, ids: Tensor) -> int:
    with torch.no_grad():
        return int(model(ids)[0, -1].argmax())


def _same_length(a: list[int], b: list[int]) -> None:
    if len(a) != len(b):
        raise PlaygroundError(f"The clean input is {len(a)} tokens and the corrupted one {len(b)}; patching compares "
                              "position by position, so change tokens without changing the count.")
    if a == b:
        raise PlaygroundError("The clean and corrupted inputs are the same tokens; change at least one.")


def typed_pair(model: nn.Module, tokenizer: Tokenizer | None, clean: str, corrupted: str,
               answer: int | None = None, wrong: int | None = None, device: str = "cpu") -> Pair:
    """Two typed texts. Answer: the model's top token on the clean input; wrong: its top token on
    the corrupted one (the log-probability of the answer when both are the same token)."""
    V = model.config.vocab_size
    a = encode_input(tokenizer, clean, V, "clean input")
    b = encode_input(tokenizer, corrupted, V, "corrupted input")
    _same_length(a, b)
    if len(a) > model.config.block_size:
        raise PlaygroundError(f"The inputs have {len(a)} tokens; this model reads at most {model.config.block_size}.")
    ca, cb = torch.tensor([a], device=device), torch.tensor([b], device=device)
    answer = _top(model, ca) if answer is None else int(answer)
    wrong = _top(model, cb) if wrong is None else int(wrong)
    metric = Metric(-1, answer, None if wrong == answer else wrong)
    what = f"logit('{token_label(tokenizer, answer)}') - logit('{token_label(tokenizer, wrong)}')" \
        if metric.wrong is not None else f"log p('{token_label(tokenizer, answer)}')"
    return Pair(ca, cb, metric, _labels(tokenizer, a), _labels(tokenizer, b), f"typed pair; metric {what}")


def _answer_split(tokenizer: Tokenizer | None, V: int, prompt: str, answer: str, other: str) -> tuple[list[int], int, int]:
    """Ids of ``prompt`` up to where ``prompt + answer`` and ``prompt + other`` first differ, and
    the two tokens there (a char tokenizer puts the shared space into the prompt)."""
    x = encode_input(tokenizer, prompt + answer, V)
    y = encode_input(tokenizer, prompt + other, V)
    k = next((i for i, (u, v) in enumerate(zip(x, y)) if u != v), min(len(x), len(y)))
    if k >= min(len(x), len(y)) or k == 0:
        raise PlaygroundError(f"'{answer}' and '{other}' do not start with different tokens after the prompt.")
    return x[:k], x[k], y[k]


def text_task(model: nn.Module, tokenizer: Tokenizer | None, task: str, device: str = "cpu") -> Pair:
    """The ``ioi`` or ``dates`` pair for this tokenizer (metric: logit difference of the two answers)."""
    V = model.config.vocab_size
    if task == "ioi":
        a, b = IOI_NAMES
        clean_p, corrupt_p = IOI_TEMPLATE.format(a=a, b=b, s=b), IOI_TEMPLATE.format(a=a, b=b, s=a)
        ans, other = " " + a, " " + b
    elif task == "dates":
        clean_p, corrupt_p, ans, other = DATE_CLEAN, DATE_CORRUPT, "87", "57"
    else:
        raise PlaygroundError(f"Unknown task {task!r}; choose one of {', '.join(TASKS)}.")
    clean_ids, good, bad = _answer_split(tokenizer, V, clean_p, ans, other)
    corrupt_ids, bad2, good2 = _answer_split(tokenizer, V, corrupt_p, other, ans)
    if (bad2, good2) != (bad, good):
        raise PlaygroundError("This tokenizer splits the two answers differently after each prompt; type a pair instead.")
    _same_length(clean_ids, corrupt_ids)
    t = lambda ids: torch.tensor([ids], device=device)
    return Pair(t(clean_ids), t(corrupt_ids), Metric(-1, good, bad), _labels(tokenizer, clean_ids),
                _labels(tokenizer, corrupt_ids),
                f"{task}: logit('{token_label(tokenizer, good)}') - logit('{token_label(tokenizer, bad)}')")


def induction_pair(vocab: Sequence[int], length: int = 8, answer_at: int = 4, seed: int = 0,
                   tokenizer: Tokenizer | None = None, device: str = "cpu") -> Pair:
    """Random tokens r (``length``, distinct) then r[:answer_at] again; the answer is r[answer_at].

    The corrupted input changes r[answer_at - 1] in the first copy to a token not in r: the
    induction head can no longer find "the token after the last one's earlier occurrence".
    """
    pool = list(dict.fromkeys(int(v) for v in vocab))
    if len(pool) < length + 1 or not 1 <= answer_at < length:
        raise PlaygroundError(f"The induction pair needs {length + 1} distinct tokens and 1 <= answer_at < {length}.")
    g = torch.Generator().manual_seed(seed)
    order = torch.randperm(len(pool), generator=g).tolist()
    r = [pool[i] for i in order[:length]]
    spare = pool[order[length]]
    clean = r + r[:answer_at]
    corrupt = list(clean)
    corrupt[answer_at - 1] = spare
    t = lambda ids: torch.tensor([ids], device=device)
    return Pair(t(clean), t(corrupt), Metric(-1, r[answer_at]), _labels(tokenizer, clean), _labels(tokenizer, corrupt),
                f"induction: log p('{token_label(tokenizer, r[answer_at])}') after a repeat of {length} tokens")


def make_pair(model: nn.Module, tokenizer: Tokenizer | None, task: str | None = None, clean: str = "",
              corrupted: str = "", answer: int | None = None, wrong: int | None = None, seed: int = 0,
              device: str = "cpu") -> Pair:
    """The pair a view or the CLI asks for: a built-in ``task`` or two typed texts."""
    if task == "induction":
        vocab = [i for i in range(model.config.vocab_size) if not token_label(tokenizer, i).startswith("<")]
        length = max(4, min(12, (model.config.block_size - 1) // 2))
        return induction_pair(vocab, length, answer_at=length // 2, seed=seed, tokenizer=tokenizer, device=device)
    if task:
        return text_task(model, tokenizer, task, device)
    if not clean or not corrupted:
        raise PlaygroundError("Type a clean and a corrupted input (or pick a built-in task).")
    return typed_pair(model, tokenizer, clean, corrupted, answer, wrong, device)
