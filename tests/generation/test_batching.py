"""Continuous batching: batched logits equal single ones, every user gets the tokens they get
alone with the same seed (joining and leaving at any step, any sampling settings, windows
that jump), cancelling or failing one request leaves the others alone, and the caps hold."""
from __future__ import annotations

import threading

import pytest
import torch

from playground.errors import TooBigError
from playground.generation import (
    GenerateRequest,
    SamplingConfig,
    batching,
    generate_lm,
    stream,
)
from playground.generation.batching import (
    GPTBatcher,
    RowKVCache,
    stream_batched,
)
from playground.generation.events import Done
from playground.generation.lm import LMRun
from playground.models.gpt import GPT, GPTConfig
from playground.torch_threads import process_default
from tests.generation.conftest import sharpen

# float32 logits of a batched pass vs one sequence alone: batched matrix products and the
# masked attention sum round differently; measured max |diff| 3e-6 on the demo GPT.
LOGITS_ATOL = 1e-4

SETTINGS = [
    SamplingConfig(),
    SamplingConfig(temperature=0.8, top_k=5),
    SamplingConfig(temperature=0),
    SamplingConfig(top_p=0.8, repetition_penalty=1.3),
    SamplingConfig(temperature=1.3, min_p=0.05, frequency_penalty=0.5, presence_penalty=0.3),
]


def _requests(tok, prompts: list[str], new_tokens: int) -> list[dict]:
    """Requests that differ in everything a user can set."""
    out = []
    for i in range(8):
        out.append({"prompt_ids": tok.encode(prompts[i % len(prompts)]).ids, "max_new_tokens": new_tokens - 3 * i,
                        "sampling": SETTINGS[i % len(SETTINGS)], "seed": 100 + i, "num_samples": 1 + (i % 3 == 0),
                        "stop": ("e.",) if i % 4 == 1 else ()})
    return out


def _alone(model, tok, req: dict) -> Done:
    return generate_lm(model, tok, **req)


def _drain(gen) -> Done:
    done = None
    for event in gen:
        if isinstance(event, Done):
            done = event
    assert done is not None
    return done


def _same(a: Done, b: Done) -> None:
    assert len(a.samples) == len(b.samples)
    for sa, sb in zip(a.samples, b.samples):
        assert sb.ids == sa.ids
        assert sb.text == sa.text
        assert sb.stop_reason == sa.stop_reason
        assert [e.prob for e in sb.events] == pytest.approx([e.prob for e in sa.events], abs=1e-4)


def _batched_staggered(model, tok, reqs: list[dict], batcher: GPTBatcher) -> list[Done]:
    """Half the requests start, run a few steps, then the rest join mid-flight."""
    half = len(reqs) // 2
    gens = [stream_batched(model, tok, batcher=batcher, **r) for r in reqs]
    for g in gens[:half]:
        next(g)  # submitted, and at least one step done
    for g in gens[half:]:
        next(g)
    results = []
    for g in gens:
        results.append(_drain(g))
    return results


@pytest.mark.parametrize("lengths", [[3, 17, 9, 31], [12, 12, 12]], ids=["masked", "in-step"])
def test_batched_decode_logits_equal_single_forward(lengths):
    """Rows at different positions in one pass (a key mask), or all at one position (none),
    give the logits each gets alone."""
    torch.manual_seed(0)
    model = sharpen(GPT(GPTConfig(vocab_size=40, block_size=32, n_layer=2, n_head=2, d_model=32))).eval()
    seqs = [torch.randint(0, 40, (1, n + 1)) for n in lengths]
    cache = RowKVCache(2, 32, 2, 16, capacity=8, dtype=torch.float32, device=torch.device("cpu"))
    with torch.inference_mode():
        for s, n in zip(seqs, lengths):
            kv = model.new_cache()
            model(s[:, :n], cache=kv)
            cache.load(cache.add_rows(1), kv, 0, 1, n)
        batched = model.decode_rows(torch.cat([s[:, -1:] for s in seqs]), cache)  # [4,V]
        single = torch.cat([model(s)[:, -1] for s in seqs])
    assert cache.lengths == [n + 1 for n in lengths]
    assert torch.allclose(batched, single, atol=LOGITS_ATOL, rtol=0)
    assert (batched.argmax(-1) == single.argmax(-1)).all()


def test_concurrent_users_get_what_they_get_alone(gpt_bundle):
    """8 requests, every sampling knob, 1-2 samples, stop strings, 20-40 tokens past a block of
    16 (the windows jump and are rebuilt), half joining mid-flight: identical to alone."""
    model, tok = gpt_bundle.model, gpt_bundle.tokenizer
    reqs = _requests(tok, ["the", "the quick brown", "over the lazy dog. THE", "fox"], 40)
    alone = [_alone(model, tok, r) for r in reqs]
    batcher = GPTBatcher(model, idle_s=0.5)
    for a, b in zip(alone, _batched_staggered(model, tok, reqs, batcher)):
        _same(a, b)
    assert batcher.max_batch_seen > 1  # they really shared passes


def test_demo_checkpoint_users_get_what_they_get_alone():
    from playground.bundle import cached_bundle
    from playground.settings import SHIPPED_LIBRARY

    bundle = cached_bundle(SHIPPED_LIBRARY / "models" / "gpt-python-docs-char")
    model, tok = bundle.model, bundle.tokenizer
    reqs = _requests(tok, ["def ", "The ", "# a comment\nimport os\n", "class A:\n    "], 60)[:4]
    alone = [_alone(model, tok, r) for r in reqs]
    batcher = GPTBatcher(model, idle_s=0.5)
    for a, b in zip(alone, _batched_staggered(model, tok, reqs, batcher)):
        _same(a, b)


def test_threads_through_the_api_match_alone(gpt_bundle):
    """The app's path (api.stream) from concurrent threads: each thread its own output."""
    reqs = [GenerateRequest(prompt=p, max_new_tokens=30, sampling=SETTINGS[i % 5], seed=i, num_samples=1 + i % 2)
            for i, p in enumerate(["the", "quick", "lazy dog", "THE END", "over", "fox jumps"])]
    results: list[Done | None] = [None] * len(reqs)

    def user(i: int) -> None:
        results[i] = _drain(stream(gpt_bundle, reqs[i]))

    threads = [threading.Thread(target=user, args=(i,)) for i in range(len(reqs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for req, got in zip(reqs, results):
        assert got is not None and got.info.get("batched")
        ids = gpt_bundle.tokenizer.encode(req.prompt).ids
        _same(generate_lm(gpt_bundle.model, gpt_bundle.tokenizer, ids, max_new_tokens=30, sampling=req.sampling,
                          seed=req.seed, num_samples=req.num_samples), got)


def test_closing_one_stream_leaves_the_others_undisturbed(gpt_bundle):
    model, tok = gpt_bundle.model, gpt_bundle.tokenizer
    reqs = _requests(tok, ["the", "fox"], 40)[:4]
    batcher = GPTBatcher(model, idle_s=0.5)
    gens = [stream_batched(model, tok, batcher=batcher, **r) for r in reqs]
    for g in gens:
        next(g)
    gens[1].close()  # the user pressed Stop
    rest = [_drain(g) for i, g in enumerate(gens) if i != 1]
    for r, got in zip([r for i, r in enumerate(reqs) if i != 1], rest):
        _same(_alone(model, tok, r), got)
    assert not batcher._active


def test_an_error_in_one_request_does_not_reach_the_others(gpt_bundle):
    model, tok = gpt_bundle.model, gpt_bundle.tokenizer
    reqs = _requests(tok, ["the", "fox"], 30)[:3]
    batcher = GPTBatcher(model, idle_s=0.5)
    runs = [LMRun(model, tok, **r) for r in reqs]
    real_step = runs[1].step

    def failing(logits):
        if runs[1].step_index == 5:
            raise RuntimeError("boom in request 1")
        return real_step(logits)

    runs[1].step = failing  # type: ignore[method-assign]
    jobs = [batcher.submit(run) for run in runs]
    outcomes = []
    for job in jobs:
        while True:
            item = job.out.get(timeout=30)
            if isinstance(item, (Done, BaseException)):
                outcomes.append(item)
                break
    assert isinstance(outcomes[1], RuntimeError) and "boom" in str(outcomes[1])
    for i in (0, 2):
        _same(_alone(model, tok, reqs[i]), outcomes[i])


def test_caps_rows_and_waiting(gpt_bundle):
    """At most max_rows sequences per pass (a bigger request runs alone, still correct) and at
    most max_waiting queued requests."""
    model, tok = gpt_bundle.model, gpt_bundle.tokenizer
    batcher = GPTBatcher(model, max_rows=3, idle_s=0.5)
    reqs = [{"prompt_ids": tok.encode("the").ids, "max_new_tokens": 20, "seed": i, "num_samples": 2} for i in range(3)]
    big = {"prompt_ids": tok.encode("fox").ids, "max_new_tokens": 10, "seed": 9, "num_samples": 4}
    gens = [stream_batched(model, tok, batcher=batcher, **r) for r in [*reqs, big]]
    for r, g in zip([*reqs, big], gens):
        _same(_alone(model, tok, r), _drain(g))
    assert 0 < batcher.max_batch_seen <= 3
    blocked = GPTBatcher(model, max_waiting=0)
    with pytest.raises(TooBigError, match="try again"):
        blocked.submit(LMRun(model, tok, tok.encode("the").ids, max_new_tokens=3, seed=0))


def test_switch_off_runs_alone(gpt_bundle, monkeypatch):
    monkeypatch.setenv("PLAYGROUND_GENERATE_BATCHING", "0")
    done = _drain(stream(gpt_bundle, GenerateRequest(prompt="the", max_new_tokens=5, seed=1)))
    assert "batched" not in done.info


def test_row_cap_follows_the_memory_budget():
    """Rows are capped by what their keys/values would take, before anything is allocated."""
    from playground.generation import batching

    model = GPT(GPTConfig(vocab_size=10, block_size=1024, n_layer=12, n_head=12, d_model=768))
    per_row = RowKVCache.row_bytes(12, 1024, 768, 4)
    batcher = GPTBatcher(model)
    assert batcher.max_rows == min(batching.MAX_ROWS, batching.KV_BUDGET_BYTES // per_row) < batching.MAX_ROWS
    assert batcher._cache is None  # nothing allocated until a request joins


def test_same_settings_are_drawn_together(gpt_bundle, monkeypatch):
    """Requests with equal settings (no penalties) are filtered and drawn in one call per
    step, and still get their tokens alone; a request with penalties samples alone."""
    import playground.generation.batching as batching_module

    model, tok = gpt_bundle.model, gpt_bundle.tokenizer
    shared = SamplingConfig(temperature=0.8, top_k=5)
    reqs = [{"prompt_ids": tok.encode(p).ids, "max_new_tokens": 12, "sampling": shared, "seed": 7 + i,
             "num_samples": 1 + (i == 1)} for i, p in enumerate(["the", "fox", "over the lazy"])]
    reqs.append({"prompt_ids": tok.encode("dog").ids, "max_new_tokens": 12, "seed": 3,
                 "sampling": SamplingConfig(repetition_penalty=1.3)})
    alone = [_alone(model, tok, r) for r in reqs]
    rows_per_call: list[int] = []
    real = batching_module.sample_together

    def counting(samplers, logits):
        rows_per_call.append(logits.shape[0])
        return real(samplers, logits)

    monkeypatch.setattr(batching_module, "sample_together", counting)
    batcher = GPTBatcher(model, idle_s=0.5)
    gens = [stream_batched(model, tok, batcher=batcher, **r) for r in reqs]
    for g in gens:
        next(g)
    for a, g in zip(alone, gens):
        _same(a, _drain(g))
    assert rows_per_call and max(rows_per_call) == 4  # the three shared-settings requests' 4 rows


def test_close_ends_the_worker_after_what_runs(gpt_bundle):
    """close() lets a running generation finish, then the worker thread ends at once (not after
    idle_s): the CLI calls it before the process exits."""
    model, tok = gpt_bundle.model, gpt_bundle.tokenizer
    batcher = GPTBatcher(model, idle_s=60.0)
    gen = stream_batched(model, tok, tok.encode("the").ids, batcher=batcher, max_new_tokens=8, seed=1)
    next(gen)
    thread = batcher._thread
    done = _drain(gen)
    batcher.close(timeout_s=5.0)
    assert len(done.samples[0].ids) == 8
    assert thread is not None and not thread.is_alive() and not batcher.alive()
    again = _drain(stream_batched(model, tok, tok.encode("the").ids, batcher=batcher, max_new_tokens=8, seed=1))
    assert again.samples[0].ids == done.samples[0].ids  # a later request starts a new worker


def test_the_worker_decodes_on_its_own_thread_count_only(gpt_bundle):
    """On the CPU the worker runs torch on DECODE_THREADS threads; the caller's count and the
    count a new request thread starts with stay the process's."""
    from playground.generation.batching import DECODE_THREADS

    model, tok = gpt_bundle.model, gpt_bundle.tokenizer
    default, mine = process_default(), torch.get_num_threads()
    batcher = GPTBatcher(model, idle_s=60.0)
    _drain(stream_batched(model, tok, tok.encode("the").ids, batcher=batcher, max_new_tokens=4, seed=1))
    batcher.close(timeout_s=5.0)
    assert batcher.worker_threads == DECODE_THREADS == 1
    assert torch.get_num_threads() == mine and process_default() == default


def test_a_wide_prefill_runs_on_the_helper_and_changes_no_token(gpt_bundle, monkeypatch):
    """Prefills of at least WIDE_PREFILL_TOKENS (lowered here to fit the tiny model) run on the
    worker's helper thread at the process's thread count; every user still gets what they get
    alone, and the worker's own count stays DECODE_THREADS."""
    if process_default() < 2:
        pytest.skip("one intra-op thread in this process: there is no wider count to prefill on")
    monkeypatch.setattr(batching, "WIDE_PREFILL_TOKENS", 8)
    model, tok = gpt_bundle.model, gpt_bundle.tokenizer
    reqs = _requests(tok, ["the quick brown", "over the lazy dog. THE"], 30)
    alone = [_alone(model, tok, r) for r in reqs]
    batcher = GPTBatcher(model, idle_s=0.5)
    for a, b in zip(alone, _batched_staggered(model, tok, reqs, batcher)):
        _same(a, b)
    assert batcher.wide_prefills > 0 and batcher.wide_threads == process_default()
    assert batcher.worker_threads == batching.DECODE_THREADS


def test_the_op_counter_counts_what_computes_and_skips_views():
    """The bench's launch count (`step_ops.OpCounter`) on ops whose count is known: a matrix
    product and an addition are two; a view, a transpose and a slice launch nothing."""
    from playground.bench.step_ops import OpCounter

    a, b = torch.randn(3, 4), torch.randn(4, 5)
    with OpCounter() as counter:
        c = a @ b + 1.0
        c.view(-1), c.t(), c[:, 1:]
    assert counter.ops == 2


def test_a_decode_step_dispatches_no_more_ops_for_eight_users_than_for_one(gpt_bundle):
    """What batching buys where a step is bound by kernel launches (a GPU), checked on the CPU:
    a step that only decodes and draws dispatches the same torch ops for eight users with the
    same settings as for one (plus the key mask and the logits' concatenation, a few ops in
    all), never an op per user. (A 64-position model: no window jumps in 30 tokens, so every
    step after the users joined is a decode-only one.)"""
    from playground.bench.step_ops import count_step_ops

    tok = gpt_bundle.tokenizer
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=tok.get_vocab_size(), block_size=64, n_layer=2, n_head=2, d_model=32)).eval()
    shared = SamplingConfig(temperature=0.8, top_k=5)
    prompts = ["the", "fox", "over the lazy", "dog. THE", "quick brown", "a", "jumps over", "lazy"]
    reqs = [{"prompt_ids": tok.encode(p).ids, "max_new_tokens": 30, "sampling": shared, "seed": i}
            for i, p in enumerate(prompts)]
    one, eight = count_step_ops(model, tok, reqs[:1]), count_step_ops(model, tok, reqs)
    assert (one.decode_passes, one.prefill_passes, len(one.decode_ops)) == (29, 1, 29)  # 30 tokens: 1 prefill, 29 decodes
    assert len(eight.decode_ops) >= 20 and 1 <= eight.prefill_passes <= 8
    assert one.median_ops > 30  # the decode pass of a 2-layer GPT and its draw: dozens of ops
    assert eight.median_ops <= one.median_ops + 4
    moves = 2 * 2 * 2  # a step where a user left moves the rows behind it: select + copy per key/value buffer
    assert max(eight.decode_ops) <= max(one.decode_ops) + 4 + moves
