"""Generation: logits filters (pure functions), GPT sampling with a KV cache, seq2seq greedy and
beam search with alignments, ViT classification. Entry points on bundles live in `api`; what
"generate" means for a family is its `FamilyGenerator` (`family`, implemented in playground/families/)."""
from playground.generation.api import (
    GenerateRequest,
    classify_image,
    distribution_table,
    explain_pick,
    explain_target,
    generate,
    generator_of,
    next_token_logits,
    next_token_table,
    stream,
)
from playground.generation.events import Done, SampleResult, StepEvent
from playground.generation.family import Controls, FamilyGenerator
from playground.generation.filters import (
    SamplingConfig,
    apply_filters,
    filter_stages,
    frequency_presence_penalty,
    min_p,
    repetition_penalty,
    temperature,
    top_k,
    top_p,
)
from playground.generation.lm import generate_lm, stream_lm
from playground.generation.seq2seq import beam_search, stream_beam, stream_greedy
from playground.generation.vision import Classification, classify, prepare_image

__all__ = [
    "Controls", "FamilyGenerator", "GenerateRequest", "classify_image", "distribution_table", "explain_pick", "explain_target", "generate",
    "generator_of", "next_token_logits", "next_token_table", "stream", "Done", "SampleResult", "StepEvent", "SamplingConfig",
    "apply_filters", "filter_stages", "frequency_presence_penalty", "min_p", "repetition_penalty", "temperature",
    "top_k", "top_p", "generate_lm", "stream_lm", "beam_search", "stream_beam", "stream_greedy", "Classification",
    "classify", "prepare_image",
]
