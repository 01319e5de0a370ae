"""GPT decoding: greedy = argmax, KV cache = recomputation, seeds, windows, stop strings, errors."""
from __future__ import annotations

import pytest
import torch

from playground.errors import DataError
from playground.generation import (
    GenerateRequest,
    SamplingConfig,
    generate,
    generate_lm,
    stream,
)
from playground.generation.events import Done, StepEvent
from playground.generation.lm import UNIFORM_CHUNK, _Sampler, make_generator, slide_for


def _ids(bundle, text: str) -> list[int]:
    return bundle.tokenizer.encode(text).ids


def recompute_greedy(model, prompt: list[int], n: int, block: int) -> list[int]:
    """Independent reference: argmax of a full forward pass (no cache) on the window the
    documented policy gives: the last `block` tokens of the prompt; when the window is full it
    jumps so that `block - slide` tokens remain, then grows again."""
    tokens = list(prompt)
    window = tokens[-block:]
    out = []
    with torch.no_grad():
        for _ in range(n):
            logits = model(torch.tensor([window]))[0, -1]
            nxt = int(torch.argmax(logits))
            out.append(nxt)
            tokens.append(nxt)
            window = window + [nxt]
            if len(window) > block:
                window = tokens[-(block - slide_for(block)) :]
    return out


def test_temperature_zero_equals_argmax_decoding(gpt_bundle):
    prompt = _ids(gpt_bundle, "the quick")
    done = generate_lm(gpt_bundle.model, gpt_bundle.tokenizer, prompt, max_new_tokens=6,
                       sampling=SamplingConfig(temperature=0))
    expected = recompute_greedy(gpt_bundle.model, prompt, 6, 16)
    assert done.samples[0].ids == expected
    assert len(set(expected)) > 1  # the sharpened random model does depend on its context


@pytest.mark.parametrize("prompt_text", ["the", "the quick brown", "over the lazy dog. THE"])
def test_kv_cache_equals_recomputation_also_past_the_block(gpt_bundle, prompt_text):
    """40 new tokens with block 16: the window jumps several times; the cache is rebuilt."""
    prompt = _ids(gpt_bundle, prompt_text)
    model, tok = gpt_bundle.model, gpt_bundle.tokenizer
    greedy = SamplingConfig(temperature=0)
    cached = generate_lm(model, tok, prompt, max_new_tokens=40, sampling=greedy, use_cache=True)
    uncached = generate_lm(model, tok, prompt, max_new_tokens=40, sampling=greedy, use_cache=False)
    reference = recompute_greedy(model, prompt, 40, 16)
    assert cached.samples[0].ids == reference
    assert uncached.samples[0].ids == reference
    # sampling too: same seed, cache or not, same tokens
    cfg = SamplingConfig(temperature=1.5, top_k=10)
    a = generate_lm(model, tok, prompt, max_new_tokens=40, sampling=cfg, seed=3, use_cache=True)
    b = generate_lm(model, tok, prompt, max_new_tokens=40, sampling=cfg, seed=3, use_cache=False)
    assert a.samples[0].ids == b.samples[0].ids


def test_prompt_longer_than_context_is_cropped_from_the_left(gpt_bundle):
    text = "the quick brown fox jumps over the lazy dog."  # 44 tokens > block 16
    prompt = _ids(gpt_bundle, text)
    assert len(prompt) > 16
    done = generate(gpt_bundle, GenerateRequest(prompt=text, max_new_tokens=5, sampling=SamplingConfig(temperature=0)))
    assert done.samples[0].ids == recompute_greedy(gpt_bundle.model, prompt[-16:], 5, 16)
    assert done.samples[0].prompt == text


def test_top_k_one_equals_greedy(gpt_bundle):
    prompt = _ids(gpt_bundle, "lazy")
    model, tok = gpt_bundle.model, gpt_bundle.tokenizer
    greedy = generate_lm(model, tok, prompt, max_new_tokens=25, sampling=SamplingConfig(temperature=0))
    top1 = generate_lm(model, tok, prompt, max_new_tokens=25, sampling=SamplingConfig(temperature=1.3, top_k=1), seed=9)
    assert top1.samples[0].ids == greedy.samples[0].ids


def test_seed_reproducible_and_global_rng_untouched(gpt_bundle):
    prompt = _ids(gpt_bundle, "fox")
    cfg = SamplingConfig(temperature=2.0)
    model, tok = gpt_bundle.model, gpt_bundle.tokenizer
    state = torch.get_rng_state()
    a = generate_lm(model, tok, prompt, max_new_tokens=30, sampling=cfg, seed=42)
    b = generate_lm(model, tok, prompt, max_new_tokens=30, sampling=cfg, seed=42)
    c = generate_lm(model, tok, prompt, max_new_tokens=30, sampling=cfg, seed=43)
    assert torch.equal(torch.get_rng_state(), state)
    assert a.samples[0].ids == b.samples[0].ids
    assert a.samples[0].ids != c.samples[0].ids
    assert a.seed == 42
    d = generate_lm(model, tok, prompt, max_new_tokens=5, sampling=cfg)  # no seed: a fresh one, reported
    assert isinstance(d.seed, int)
    again = generate_lm(model, tok, prompt, max_new_tokens=5, sampling=cfg, seed=d.seed)
    assert again.samples[0].ids == d.samples[0].ids


def test_several_samples_at_once(gpt_bundle):
    prompt = _ids(gpt_bundle, "the")
    model, tok = gpt_bundle.model, gpt_bundle.tokenizer
    done = generate_lm(model, tok, prompt, max_new_tokens=20, sampling=SamplingConfig(temperature=2.0),
                       seed=0, num_samples=4)
    assert len(done.samples) == 4 and all(len(s.ids) == 20 for s in done.samples)
    assert len({tuple(s.ids) for s in done.samples}) > 1  # independent draws
    assert done.new_tokens == 80
    greedy = generate_lm(model, tok, prompt, max_new_tokens=20, sampling=SamplingConfig(temperature=0), num_samples=3)
    single = recompute_greedy(model, prompt, 20, 16)
    assert all(s.ids == single for s in greedy.samples)


def test_events_report_model_probabilities_and_join_to_the_text(gpt_bundle):
    prompt = _ids(gpt_bundle, "quick")
    model, tok = gpt_bundle.model, gpt_bundle.tokenizer
    events = list(stream(gpt_bundle, GenerateRequest(prompt="quick", max_new_tokens=8,
                                                     sampling=SamplingConfig(top_k=5), seed=1)))
    steps = [e for e in events if isinstance(e, StepEvent)]
    done = events[-1]
    assert isinstance(done, Done) and len(steps) == 8
    assert "".join(e.text for e in steps) == done.samples[0].text == tok.decode(done.samples[0].ids)
    # the first event's probability is the model's softmax at the prompt's last position
    with torch.no_grad():
        probs = model(torch.tensor([prompt]))[0, -1].softmax(-1)
    first = steps[0]
    assert first.prob == pytest.approx(float(probs[first.token_id]), rel=1e-4)
    top5 = torch.topk(probs, 5)
    assert [a[0] for a in first.alternatives] == top5.indices.tolist()
    assert [a[2] for a in first.alternatives] == pytest.approx(top5.values.tolist(), rel=1e-4)
    assert first.token_id in top5.indices.tolist()  # top-k 5 samples among the top 5
    assert 0 < first.sampled_prob <= 1 and first.sampled_prob >= first.prob
    assert [e.position for e in steps] == list(range(len(prompt), len(prompt) + 8))


def test_stop_string_ends_the_sample_and_is_cut(gpt_bundle):
    req = GenerateRequest(prompt="the", max_new_tokens=30, sampling=SamplingConfig(temperature=0))
    full = generate(gpt_bundle, req).samples[0].text
    stop = full[5:7]
    cut = full.find(stop)
    done = generate(gpt_bundle, GenerateRequest(prompt="the", max_new_tokens=30, sampling=SamplingConfig(temperature=0),
                                                stop=(stop,)))
    sample = done.samples[0]
    assert sample.stop_reason == "stop"
    assert sample.text == full[:cut]
    assert sample.events[-1].stopped
    assert len(sample.events) < 30


def test_penalties_change_decoding(gpt_bundle):
    prompt = _ids(gpt_bundle, "the")
    model, tok = gpt_bundle.model, gpt_bundle.tokenizer
    n = 12
    no_repeats = generate_lm(model, tok, prompt, max_new_tokens=n,
                             sampling=SamplingConfig(temperature=0, presence_penalty=1e4))
    assert len(set(no_repeats.samples[0].ids)) == n  # a generated token is never chosen twice
    plain = generate_lm(model, tok, prompt, max_new_tokens=n, sampling=SamplingConfig(temperature=0))
    assert len(set(plain.samples[0].ids)) < n  # (without the penalty the model does repeat)
    rep = generate_lm(model, tok, prompt, max_new_tokens=n, sampling=SamplingConfig(temperature=0, repetition_penalty=50.0))
    assert rep.samples[0].ids != plain.samples[0].ids


def test_unknown_characters_are_named(gpt_bundle):
    with pytest.raises(DataError) as err:
        generate(gpt_bundle, GenerateRequest(prompt="the quick ß fox ☃ß", max_new_tokens=3))
    message = str(err.value)
    assert "'ß'" in message and "'☃'" in message and "vocabulary" in message


def test_empty_prompt_starts_from_a_start_token(gpt_bundle):
    done = generate(gpt_bundle, GenerateRequest(prompt="", max_new_tokens=4, sampling=SamplingConfig(temperature=0)))
    sample = done.samples[0]
    assert sample.prompt_ids == [gpt_bundle.tokenizer.token_to_id("\n")]
    assert sample.ids == recompute_greedy(gpt_bundle.model, sample.prompt_ids, 4, 16)


def test_gpt_given_an_image_gets_a_clear_error(gpt_bundle):
    import numpy as np

    with pytest.raises(DataError, match="reads text, not images"):
        generate(gpt_bundle, GenerateRequest(prompt="the", image=np.zeros((8, 8))))
    from playground.generation import classify_image

    with pytest.raises(DataError, match="reads text, not images"):
        classify_image(gpt_bundle, np.zeros((8, 8)))


def test_uniforms_drawn_in_chunks_are_the_per_step_stream():
    """A sampler draws its uniform numbers UNIFORM_CHUNK steps at a time from the run's CPU
    generator: the same numbers, step by step, as one rand(B) call per step (so the chunking
    does not change a seed's tokens), across chunk boundaries."""
    B, steps = 3, 2 * UNIFORM_CHUNK + 5
    sampler = _Sampler(SamplingConfig(temperature=0.9), B, 10, torch.device("cpu"), make_generator(7, "cpu"), 0,
                       torch.zeros(B, 1, dtype=torch.long))
    ours = [sampler.uniforms() for _ in range(steps)]
    gen = make_generator(7, "cpu")
    per_step = [torch.rand(B, generator=gen).tolist() for _ in range(steps)]
    assert ours == per_step
    greedy = _Sampler(SamplingConfig(temperature=0), B, 10, torch.device("cpu"), make_generator(7, "cpu"), 0,
                      torch.zeros(B, 1, dtype=torch.long))
    assert greedy.uniforms() is None
