"""Pair-set registry, synthetic tasks, TSV loading, and the deterministic splits."""

import pytest
import torch

from playground.data.pairs import (PAIR_SETS, PairExample, load_pair_set, load_tsv, make_copy,
                                   make_reverse, make_sort, pair_set_unit, pair_tokenizer)
from playground.data.splits import min_tokens_for_block, split_indices, split_text
from playground.errors import ConfigError, DataError, NotFoundError

GENERATED = [name for name in PAIR_SETS if name != "tsv"]


# ---------------------------------------------------------------- registry

def test_registry_names_and_units():
    assert set(PAIR_SETS) == {"dates", "toy_translation", "copy", "reverse", "sort", "tsv"}
    assert pair_set_unit("dates") == "char"
    assert pair_set_unit("toy_translation") == "word"
    assert {pair_set_unit(n) for n in PAIR_SETS} <= {"char", "word"}


def test_bad_name_lists_the_choices():
    with pytest.raises(ConfigError, match="dates, toy_translation, copy"):
        load_pair_set("datez", 10, 0)
    with pytest.raises(ConfigError, match="toy_translation"):
        pair_set_unit("nope")


def test_bad_option_lists_the_valid_ones():
    with pytest.raises(ConfigError, match="min_len"):
        load_pair_set("copy", 10, 0, length=4)
    with pytest.raises(ConfigError, match="none"):
        load_pair_set("dates", 10, 0, min_len=4)
    with pytest.raises(ConfigError, match="n must be"):
        load_pair_set("copy", 0, 0)


@pytest.mark.parametrize("name", GENERATED)
def test_generated_sets_are_deterministic(name):
    a = load_pair_set(name, 40, seed=3)
    assert len(a) == 40 and all(isinstance(e, PairExample) for e in a)
    assert a == load_pair_set(name, 40, seed=3)
    assert a != load_pair_set(name, 40, seed=4)


@pytest.mark.parametrize("name", GENERATED)
def test_alignment_in_tokenizer_units(name):
    """Alignment indices index the token sequences the set's tokenizer produces (no specials)."""
    examples = load_pair_set(name, 60, seed=1)
    tok = pair_tokenizer(examples, pair_set_unit(name))
    for ex in examples:
        src_ids = tok.encode(ex.src).ids
        tgt_ids = tok.encode(ex.tgt).ids
        unit = len if pair_set_unit(name) == "char" else (lambda s: len(s.split()))
        assert len(src_ids) == unit(ex.src) and len(tgt_ids) == unit(ex.tgt)
        assert ex.alignment
        for t, s in ex.alignment:
            assert 0 <= t < len(tgt_ids) and 0 <= s < len(src_ids)


# ---------------------------------------------------------------- synthetic tasks

@pytest.mark.parametrize("make", [make_copy, make_reverse, make_sort])
def test_synthetic_alignment_points_at_the_same_symbol(make):
    for ex in make(100, seed=2, min_len=2, max_len=15):
        assert 2 <= len(ex.src) <= 15 and len(ex.tgt) == len(ex.src)
        assert [t for t, _ in ex.alignment] == list(range(len(ex.tgt)))
        assert sorted(s for _, s in ex.alignment) == list(range(len(ex.src)))  # a permutation
        for t, s in ex.alignment:
            assert ex.tgt[t] == ex.src[s]


def test_synthetic_targets():
    for ex in make_copy(20, 0):
        assert ex.tgt == ex.src
    for ex in make_reverse(20, 0):
        assert ex.tgt == ex.src[::-1]
        assert ex.alignment == [(t, len(ex.src) - 1 - t) for t in range(len(ex.src))]
    for ex in make_sort(20, 0, alphabet="zyx"):  # rank follows the alphabet's order
        rank = {"z": 0, "y": 1, "x": 2}
        assert list(ex.tgt) == sorted(ex.src, key=rank.__getitem__)
        assert set(ex.src) <= set("zyx")
    ex = make_sort(1, 0, min_len=12, max_len=12, alphabet="ab")[0]
    a_sources = [s for t, s in ex.alignment if ex.tgt[t] == "a"]
    assert a_sources == sorted(a_sources)  # stable: ties keep source order


def test_synthetic_bad_options():
    with pytest.raises(ConfigError, match="alphabet"):
        make_copy(5, 0, alphabet="a")
    with pytest.raises(ConfigError, match="whitespace"):
        make_copy(5, 0, alphabet="a b")
    with pytest.raises(ConfigError, match="min_len"):
        make_reverse(5, 0, min_len=5, max_len=4)


# ---------------------------------------------------------------- TSV

def test_tsv_text_and_file(tmp_path):
    text = "Go.\tVa !\tCC-BY 2.0 (France) Attribution\n\nHi.\tSalut !\r\nRun!\tCours !\n"
    pairs = load_tsv(text)
    assert [(p.src, p.tgt) for p in pairs] == [("Go.", "Va !"), ("Hi.", "Salut !"), ("Run!", "Cours !")]
    assert all(p.alignment is None for p in pairs)
    f = tmp_path / "pairs.tsv"
    f.write_bytes("\ufeffchat\tcat\nchien\tdog\n".encode("utf-8"))  # BOM is dropped
    assert [(p.src, p.tgt) for p in load_tsv(f)] == [("chat", "cat"), ("chien", "dog")]
    assert load_tsv(str(f)) == load_tsv(f) == load_tsv(f.read_bytes())


def test_tsv_line_without_tab_names_its_line():
    with pytest.raises(DataError, match="line 3 .*no tab"):
        load_tsv("a\tb\nc\td\nno tab here\ne\tf\n")


def test_tsv_empty_side_and_empty_file(tmp_path):
    with pytest.raises(DataError, match="line 2 .*empty target"):
        load_tsv("a\tb\nc\t \n")
    empty = tmp_path / "empty.tsv"
    empty.write_text("\n\n")
    with pytest.raises(DataError, match="empty"):
        load_tsv(empty)
    with pytest.raises(DataError, match="empty"):
        load_tsv(b"")


def test_tsv_non_utf8_names_the_byte_offset(tmp_path):
    raw = b"ab\tcd\nx\xe9y\tz\n"  # latin-1 e-acute at byte 7
    with pytest.raises(DataError, match="byte offset 7 .*line 2"):
        load_tsv(raw)
    f = tmp_path / "latin1.tsv"
    f.write_bytes(raw)
    with pytest.raises(DataError, match="latin1.tsv.*byte offset 7"):
        load_tsv(f)


def test_tsv_missing_file_and_size_cap(tmp_path):
    with pytest.raises(NotFoundError, match="nothere.tsv"):
        load_tsv(tmp_path / "nothere.tsv")
    f = tmp_path / "big.tsv"
    f.write_text("a\tb\n" * 100)
    with pytest.raises(DataError, match="limit"):
        load_tsv(f, max_bytes=50)


def test_tsv_pair_set_subset_is_seeded(tmp_path):
    f = tmp_path / "p.tsv"
    f.write_text("".join(f"s{i}\tt{i}\n" for i in range(30)))
    assert len(load_pair_set("tsv", None, 0, path=f)) == 30
    a = load_pair_set("tsv", 10, 1, path=f)
    assert a == load_pair_set("tsv", 10, 1, path=f) and len(a) == 10
    assert a != load_pair_set("tsv", 10, 2, path=f)
    with pytest.raises(ConfigError, match="path"):
        load_pair_set("tsv", 10, 1)


# ---------------------------------------------------------------- splits

def test_split_indices_deterministic_and_disjoint():
    train, val = split_indices(101, 0.2, seed=5)
    assert (train, val) == split_indices(101, 0.2, seed=5)
    assert val != split_indices(101, 0.2, seed=6)[1]
    assert len(val) == 20 and len(train) == 81
    assert not set(train) & set(val)
    assert sorted(train + val) == list(range(101))
    assert train == sorted(train) and val == sorted(val)
    assert split_indices(10, 0.0, 1) == (list(range(10)), [])
    assert len(split_indices(3, 0.01, 1)[1]) == 1  # at least one for validation


def test_split_indices_errors():
    with pytest.raises(DataError, match="only 1 examples"):
        split_indices(1, 0.1, 0)
    with pytest.raises(ConfigError, match="val_fraction"):
        split_indices(10, 1.0, 0)


def test_split_text_head_tail():
    text = "".join(chr(97 + i % 26) for i in range(1000))
    train, val = split_text(text, 0.1)
    assert train == text[:900] and val == text[900:]
    ids = list(range(50))
    assert split_text(ids, 0.2) == (ids[:40], ids[40:])
    t = torch.arange(20)
    tr, va = split_text(t, 0.25, block_size=4)
    assert torch.equal(tr, t[:15]) and torch.equal(va, t[15:])


def test_split_text_too_small_for_block():
    with pytest.raises(DataError, match=r"corpus has 100 characters; block size 64 needs at least 641 .*"
                                        r"lower block_size or add text"):
        split_text("x" * 100, 0.1, block_size=64)
    need = min_tokens_for_block(64, 0.1)
    train, val = split_text(list(range(need)), 0.1, block_size=64)
    assert len(train) >= 65 and len(val) >= 65
    with pytest.raises(DataError, match="tokens"):
        split_text(list(range(need - 1)), 0.1, block_size=64)
    assert split_text("abc", 0.0, block_size=2) == ("abc", "")
