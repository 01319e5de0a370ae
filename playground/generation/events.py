"""What the decoders stream: one `StepEvent` per generated token, then one `Done`."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class StepEvent:
    """One generated token of one sample.

    `prob` is the model's own probability of the token (softmax of the raw logits, T = 1);
    `sampled_prob` its probability under the filtered distribution it was drawn from (1.0 for
    greedy / beam search). `alternatives` are the model's top tokens: (id, text, prob).
    """

    sample: int
    index: int  # 0-based index among the sample's generated tokens
    position: int  # absolute position in prompt + generated tokens
    token_id: int
    text: str  # the text this token adds ("" while a UTF-8 character is incomplete)
    prob: float
    sampled_prob: float
    alternatives: list[tuple[int, str, float]]
    stopped: bool = False  # this token completed a stop string / end token (sample finished)


@dataclass
class SampleResult:
    """One finished sample: its tokens, text and why it stopped."""

    prompt: str
    prompt_ids: list[int]
    ids: list[int]  # generated ids (stop string tokens included, end token excluded)
    text: str  # generated text (cut before a stop string)
    stop_reason: str  # "length" | "stop" | "eos"
    events: list[StepEvent] = field(default_factory=list)
    alignment: Any | None = None  # seq2seq: numpy [target, source]
    source_tokens: list[str] | None = None
    target_tokens: list[str] | None = None
    score: float | None = None  # seq2seq: log-probability (beam: length-penalised)

    @property
    def full_text(self) -> str:
        return self.prompt + self.text


@dataclass
class Done:
    """The end of a stream: every sample's result plus run facts."""

    samples: list[SampleResult]
    seed: int | None
    new_tokens: int  # generated tokens over all samples
    elapsed_s: float
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def tokens_per_s(self) -> float:
        return self.new_tokens / self.elapsed_s if self.elapsed_s > 0 else float("nan")
