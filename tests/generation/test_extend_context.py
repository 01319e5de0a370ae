"""Generation past block_size ('extend' mode) and the windowed KV cache of sliding-window models."""
from __future__ import annotations

import pytest
import torch

from playground.errors import ConfigError, PlaygroundError, TooBigError
from playground.generation.batching import GPTBatcher
from playground.generation.filters import SamplingConfig
from playground.generation.lm import LMRun, generate_lm
from playground.models.attention import WindowedKVCache, causal_mask
from playground.models.gpt import GPT, GPTConfig

from .conftest import sharpen

VOCAB = 11
GREEDY = SamplingConfig(temperature=0)


def tiny_gpt(pos: str, window: int = 0, block: int = 8, kv_heads: int = 0, seed: int = 0) -> GPT:
    """A sharpened random 2-layer GPT (its tokens depend on the context), in eval mode."""
    torch.manual_seed(seed)
    cfg = GPTConfig(vocab_size=VOCAB, block_size=block, n_layer=2, n_head=2, d_model=16, pos_encoding=pos,
                    attn_window=window, n_kv_heads=kv_heads)
    return sharpen(GPT(cfg), 6.0).eval()


def greedy_by_recomputation(model: GPT, prompt: list[int], n: int) -> list[int]:
    """Independent reference for 'extend': argmax of a full forward over every token so far,
    positions 0 .. len - 1 (no window, no cache), the model's own band mask when windowed."""
    tokens = list(prompt)
    with torch.no_grad():
        for _ in range(n):
            logits = model.forward_beyond(torch.tensor([tokens]))[0, -1]
            tokens.append(int(logits.argmax()))
    return tokens[len(prompt):]


@pytest.mark.parametrize("pos", ["rope", "alibi", "sinusoidal", "none"])
def test_extend_cache_equals_recomputation_past_the_block(pos):
    model = tiny_gpt(pos)
    prompt = [1, 2, 3]
    cached = generate_lm(model, None, prompt, max_new_tokens=20, sampling=GREEDY, context="extend")
    uncached = generate_lm(model, None, prompt, max_new_tokens=20, sampling=GREEDY, context="extend", use_cache=False)
    reference = greedy_by_recomputation(model, prompt, 20)  # 23 positions, block 8
    assert cached.samples[0].ids == reference
    assert uncached.samples[0].ids == reference
    assert len(set(reference)) > 1  # the tokens depend on the context
    assert cached.info["context"] == "extend"
    cfg = SamplingConfig(temperature=1.3, top_k=6)  # sampling: same seed, cache or not, same tokens
    a = generate_lm(model, None, prompt, max_new_tokens=20, sampling=cfg, seed=5, context="extend")
    b = generate_lm(model, None, prompt, max_new_tokens=20, sampling=cfg, seed=5, context="extend", use_cache=False)
    assert a.samples[0].ids == b.samples[0].ids


def test_extend_differs_from_the_window_only_past_the_block():
    model = tiny_gpt("rope")
    prompt = [4, 5]
    cfg = SamplingConfig(temperature=1.0)
    for new in (1, 6):  # prompt + generation within block_size 8: the same tokens in both modes
        ext = generate_lm(model, None, prompt, max_new_tokens=new, sampling=cfg, seed=9, context="extend")
        win = generate_lm(model, None, prompt, max_new_tokens=new, sampling=cfg, seed=9, context="window")
        assert ext.samples[0].ids == win.samples[0].ids
    ext = generate_lm(model, None, prompt, max_new_tokens=30, sampling=GREEDY, context="extend")
    win = generate_lm(model, None, prompt, max_new_tokens=30, sampling=GREEDY, context="window")
    assert ext.samples[0].ids[:6] == win.samples[0].ids[:6]
    assert ext.samples[0].ids != win.samples[0].ids  # the window jumped, 'extend' kept every token


def test_extend_reads_a_prompt_longer_than_the_block():
    model = tiny_gpt("alibi")
    prompt = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 1, 2]  # 12 > block 8: not cropped
    done = generate_lm(model, None, prompt, max_new_tokens=5, sampling=GREEDY, context="extend")
    assert done.samples[0].ids == greedy_by_recomputation(model, prompt, 5)


def test_learned_positions_refuse_extend_and_say_why():
    model = tiny_gpt("learned")
    with pytest.raises(ConfigError, match=r"learned table.*position 8.*'window' mode"):
        generate_lm(model, None, [1], max_new_tokens=3, context="extend")
    with pytest.raises(PlaygroundError, match="never trained"):
        model.new_cache(9)
    with pytest.raises(ConfigError, match="context must be one of"):
        generate_lm(model, None, [1], max_new_tokens=3, context="stretch")
    assert generate_lm(model, None, [1], max_new_tokens=12, sampling=GREEDY).samples[0].ids  # the window still works


def test_extend_length_is_capped_before_allocating():
    model = tiny_gpt("rope")
    with pytest.raises(TooBigError, match="'extend' mode"):
        LMRun(model, None, [1, 2], max_new_tokens=5000, context="extend")


def test_extend_runs_alone_not_in_the_batch():
    model = tiny_gpt("none")
    batcher = GPTBatcher(model)
    assert batcher.can_take(LMRun(model, None, [1], max_new_tokens=4))
    assert not batcher.can_take(LMRun(model, None, [1], max_new_tokens=4, context="extend"))


@pytest.mark.parametrize("pos,kv_heads", [("rope", 0), ("alibi", 1), ("sinusoidal", 0), ("none", 2)])
def test_windowed_cache_equals_band_mask_recomputation(pos, kv_heads):
    """Window 3, block 8: a 5-token prompt, single tokens, a 4-token chunk at an offset, single
    tokens again, out to 25 positions (past the block) with the ring cache; every position's
    logits equal a full forward with the band mask."""
    model = tiny_gpt(pos, window=3, kv_heads=kv_heads)
    ids = torch.randint(0, VOCAB, (2, 25), generator=torch.Generator().manual_seed(1))  # [B,T]
    with torch.no_grad():
        full = model.forward_beyond(ids)  # [B,25,V], band mask over all 25 positions
        cache = model.new_cache(25, windowed=True)
        assert isinstance(cache, WindowedKVCache)
        got, t = [], 0
        for size in [5] + [1] * 6 + [4] + [1] * 10:  # chunks of more than W tokens, at offset 0 and 11
            got.append(model(ids[:, t : t + size], cache=cache))
            t += size
    torch.testing.assert_close(torch.cat(got, dim=1), full, atol=1e-4, rtol=1e-4)
    assert cache.nbytes() == 2 * 2 * 2 * 3 * model.config.kv_heads * 8 * 4  # K and V, 2 layers, B 2, W 3, hd 8, fp32


def test_windowed_cache_ring_positions_and_band_mask():
    ring = WindowedKVCache(1, 4, 100)
    keys = torch.arange(10.0)[None, None, :, None]  # [1,1,10,1]: each key's value is its position
    k, _ = ring.append(0, keys[:, :, :6], keys[:, :, :6], 0)  # 6 tokens at once: all returned in order
    assert k.flatten().tolist() == [0, 1, 2, 3, 4, 5]
    for p in range(6, 10):  # one at a time: the ring holds positions p-3 .. p in slots p % 4
        k, _ = ring.append(0, keys[:, :, p : p + 1], keys[:, :, p : p + 1], p)
        pos = ring.key_positions(p, 1, k.device)
        assert k.flatten().tolist() == pos.float().tolist()
        assert sorted(pos.tolist()) == list(range(p - 3, p + 1))
    mask = causal_mask(1, 4, 9, k.device, 4, ring.key_positions(9, 1, k.device))
    assert mask.all()  # every key in the ring is in the window of the newest query
    with pytest.raises(ValueError, match="only be emptied"):
        ring.length = 10
        ring.crop(5)


def test_window_mode_with_a_sliding_window_model_decodes_with_the_ring():
    """Default mode: the ring cache gives the tokens full recomputation of each window gives."""
    model = tiny_gpt("learned", window=3)
    cached = generate_lm(model, None, [1, 2], max_new_tokens=20, sampling=GREEDY)
    uncached = generate_lm(model, None, [1, 2], max_new_tokens=20, sampling=GREEDY, use_cache=False)
    assert cached.samples[0].ids == uncached.samples[0].ids
    extended = generate_lm(tiny_gpt("rope", window=3), None, [1, 2], max_new_tokens=30, sampling=GREEDY, context="extend")
    assert extended.samples[0].ids == greedy_by_recomputation(tiny_gpt("rope", window=3), [1, 2], 30)


def test_positions_past_the_table_are_computed_row_by_row_as_in_the_full_table():
    """Decoding past block_size computes only the new positions' angles / vectors: the same rows."""
    from playground.models.positional import Rotary, sinusoidal_table

    assert torch.equal(sinusoidal_table(300, 16)[250:], sinusoidal_table(300, 16, start=250))
    rotary = Rotary(8, 16)
    cos, sin = rotary.table(300)
    assert torch.equal(cos[250:], rotary.table(300, start=250)[0]) and torch.equal(sin[250:], rotary.table(300, start=250)[1])
    x = torch.randn(1, 1, 5, 8)
    torch.testing.assert_close(rotary(x, offset=250), Rotary(8, 300)(x, offset=250))  # computed vs looked up
