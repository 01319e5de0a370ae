"""Each claim's verdict on synthetic numbers: a case where it holds, one where it does not, one it cannot tell."""
from __future__ import annotations

import math

import pytest

from playground.reproduce import judges as j


def _run(loss: float, label: str = "r", **extra) -> dict:
    return {"label": label, "final": {"val_loss": loss, **extra.pop("final", {})}, "curve": [[10, loss + 1, loss]],
            "wall_s": 1.0, **extra}


def _buckets(ems: list[float], n: int = 50) -> list[dict]:
    return [{"bucket": f"{10 * i}-{10 * i + 9}", "lo": 10 * i, "exact_match": em, "token_accuracy": em, "n": n}
            for i, em in enumerate(ems)]


def test_bottleneck_holds_when_attention_stays_and_noattn_falls():
    runs = {"noattn": _run(1.0, by_length=_buckets([0.9, 0.5, 0.2])),
            "attention": _run(0.5, by_length=_buckets([0.95, 0.93, 0.9]))}
    numbers = j.bottleneck_numbers(runs)
    assert numbers["noattn"]["fall"] == pytest.approx(70.0) and numbers["attention"]["fall"] == pytest.approx(5.0)
    v = j.bottleneck_verdict(numbers)
    assert v.holds is True and v.text.startswith("holds") and "falls 70" in v.text


def test_bottleneck_fails_when_both_fall_and_cannot_tell_when_nothing_learned():
    both = {"noattn": _run(1.0, by_length=_buckets([0.9, 0.2])), "attention": _run(1.0, by_length=_buckets([0.9, 0.4]))}
    assert j.bottleneck_verdict(j.bottleneck_numbers(both)).holds is False
    weak = {"noattn": _run(1.0, by_length=_buckets([0.1, 0.0])), "attention": _run(1.0, by_length=_buckets([0.2, 0.1]))}
    assert j.bottleneck_verdict(j.bottleneck_numbers(weak)).holds is None


def test_bottleneck_leaves_out_thin_buckets():
    runs = {"noattn": _run(1.0, by_length=_buckets([0.9, 0.5]) + [{"bucket": "20-29", "lo": 20, "exact_match": 0.0,
                                                                     "token_accuracy": 0.0, "n": 3}])}
    assert j.bottleneck_numbers(runs)["noattn"]["long_bucket"] == "10-19"


def _positions(trained: int, losses: list[float]) -> dict:
    return {"trained": trained, "positions": len(losses), "loss": losses}


def test_positions_verdict_holds_partly_and_not():
    flat = [2.0] * 16
    rising = [2.0] * 4 + [3.0] * 12
    runs = {"learned": _run(2.0, positions=_positions(4, [2.0] * 4)),
            "sinusoidal": _run(2.0, positions=_positions(4, flat)),
            "rope": _run(2.0, positions=_positions(4, flat)),
            "alibi": _run(2.0, positions=_positions(4, flat))}
    numbers = j.positions_numbers(runs)
    assert "rise" not in numbers["learned"] and numbers["rope"]["rise"] == 0.0
    assert j.positions_verdict(numbers).holds is True
    runs["sinusoidal"] = _run(2.0, positions=_positions(4, rising))
    numbers = j.positions_numbers(runs)
    assert numbers["sinusoidal"]["rise"] == pytest.approx(1.0)
    v = j.positions_verdict(numbers)
    assert v.holds is False and v.text.startswith("partly holds") and "sinusoidal rises by 1.00" in v.text
    del runs["alibi"]
    assert j.positions_verdict(j.positions_numbers(runs)).holds is None


def test_positions_inside_is_the_second_half_of_the_trained_window():
    numbers = j.positions_numbers({"rope": _run(2.0, positions=_positions(4, [9.0, 9.0, 2.0, 4.0, 3.0, 3.0]))})
    assert numbers["rope"]["inside"] == pytest.approx(3.0) and numbers["rope"]["rise"] == pytest.approx(0.0)


def test_warmup_verdict():
    runs = {"post_nowarmup": _run(3.3), "post_warmup": _run(2.5), "pre_nowarmup": _run(2.45), "pre_warmup": _run(2.44)}
    numbers = j.warmup_numbers(runs)
    assert numbers["post_gain"] == pytest.approx(0.8) and numbers["pre_gain"] == pytest.approx(0.01)
    assert j.warmup_verdict(numbers).holds is True
    runs["post_nowarmup"] = _run(2.52)
    assert j.warmup_verdict(j.warmup_numbers(runs)).holds is False
    assert j.warmup_verdict(j.warmup_numbers({"post_warmup": _run(1.0)})).holds is None


def test_scale_verdict():
    runs = {"scaled_16": _run(2.0), "unscaled_16": _run(2.005), "scaled_128": _run(2.0), "unscaled_128": _run(2.2)}
    numbers = j.scale_numbers(runs)
    assert list(numbers) == ["16", "128"] and numbers["128"]["gap"] == pytest.approx(0.2)
    assert j.scale_verdict(numbers).holds is True
    runs["unscaled_128"] = _run(2.01)
    assert j.scale_verdict(j.scale_numbers(runs)).holds is False
    assert j.scale_verdict(j.scale_numbers({"scaled_16": _run(2.0)})).holds is None


def test_smoothing_verdict_uses_unsmoothed_perplexity_and_exact_match():
    runs = {"ls0": _run(0.10, final={"exact_match": 0.90, "token_accuracy": 0.97}),
            "ls01": _run(0.20, final={"exact_match": 0.92, "token_accuracy": 0.97})}
    numbers = j.smoothing_numbers(runs)
    assert numbers["ls01"]["perplexity"] == pytest.approx(math.exp(0.2), abs=1e-4)
    assert j.smoothing_verdict(numbers).holds is True
    runs["ls01"] = _run(0.20, final={"exact_match": 0.80, "token_accuracy": 0.9})
    assert j.smoothing_verdict(j.smoothing_numbers(runs)).holds is False


def test_residual_verdict():
    runs = {"residual_2": _run(2.5), "plain_2": _run(2.6), "residual_12": _run(2.4), "plain_12": _run(3.3)}
    numbers = j.residual_numbers(runs)
    assert numbers["12"]["gap"] == pytest.approx(0.9)
    assert j.residual_verdict(numbers).holds is True
    runs["plain_12"] = _run(2.45)
    assert j.residual_verdict(j.residual_numbers(runs)).holds is False


def test_heads_verdict_against_the_noise_floor():
    runs = {"heads_1": _run(2.10), "heads_4": _run(2.00), "heads_8": _run(2.03)}
    numbers = j.heads_numbers(runs)
    assert numbers["best_heads"] == 4 and numbers["single_gap"] == pytest.approx(0.1)
    assert j.heads_verdict(numbers).holds is True
    runs["heads_1"] = _run(2.01)
    assert j.heads_verdict(j.heads_numbers(runs)).holds is False
    assert j.heads_verdict(j.heads_numbers({"heads_4": _run(2.0)})).holds is None


def test_heads_verdict_against_the_seeds_spread():
    runs = {"heads_1": _run(2.015), "heads_4": _run(2.000), "seed1_4": _run(2.001), "seed2_4": _run(2.003)}
    numbers = j.heads_numbers(runs)
    assert numbers["spread"] == pytest.approx(0.003) and numbers["seed_losses"] == [2.0, 2.001, 2.003]
    v = j.heads_verdict(numbers)
    assert v.holds is True and "3 seeds of the 4-head run spread over 0.0030" in v.text  # 0.015 > 3 x 0.003
    runs["seed2_4"] = _run(2.006)
    assert j.heads_verdict(j.heads_numbers(runs)).holds is False  # 0.015 < 3 x 0.006
    chart = j.heads_chart(runs)
    assert set(chart["series"]) == {"preset seed", "seed 1", "seed 2"} and set(chart["x"]) == {1, 4}


def test_the_letter_frequency_loss_is_that_of_tiny_shakespeare():
    import collections

    from playground.training.data import load_text

    text, _ = load_text("tinyshakespeare", None, 0, None, None)
    split = int(len(text) * 0.9)  # the presets' val_fraction 0.1, the tail
    counts = collections.Counter(text[:split])
    total = sum(counts.values())
    val = text[split:]
    ce = -sum(math.log(counts[ch] / total) for ch in val) / len(val)
    assert ce == pytest.approx(j.UNIGRAM_NATS, abs=1e-3)
    assert j._stuck(3.33) and not j._stuck(2.5)
