"""Training data per family: `[data]` configs, loading, deterministic splits and batches.

Batches are a pure function of (seed, step): the global batch of update `step` is drawn from a
generator seeded with (seed, step) (text: random windows; images and pairs: a seeded
permutation per epoch). A resumed run therefore continues the exact batch sequence, and under
DistributedDataParallel every process slices its share of the same global batch without any
sampler state.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

import torch
from tokenizers import Tokenizer

from playground.data.corpora import load_corpus
from playground.data.pairs import PAIR_SETS, load_pair_set
from playground.data.policy import default_policy
from playground.errors import ConfigError, DataError
from playground.settings import FULL_CAPS
from playground.tokenization.simple import CHAR_PATTERN
from playground.workspace import Workspace

# ---------------------------------------------------------------------------------------------
# configs


@dataclass
class TextDataConfig:
    """`[data]` for GPT: a corpus and the tokenizer to cut it with."""

    corpus: str = "tinyshakespeare"  # python-docs | python-code | tinyshakespeare | upload:<name> | a path (CLI)
    tokenizer: str = "char"  # "char": characters of the corpus; else a tokenizer name in the workspace
    val_fraction: float = 0.1  # the tail of the corpus (nanoGPT's head/tail split)
    max_chars: int = 0  # keep only the first N characters (0 = all)

    def __post_init__(self) -> None:
        if not 0.0 < self.val_fraction < 1.0:
            raise ConfigError(f"data.val_fraction must be in (0, 1), got {self.val_fraction}.")
        if self.max_chars < 0:
            raise ConfigError(f"data.max_chars must be >= 0 (0 = all), got {self.max_chars}.")


@dataclass
class ImageDataConfig:
    """`[data]` for ViT: an image set and a seeded train/val split."""

    dataset: Literal["digits", "shapes", "zip"] = "digits"
    n: int = 0  # examples (0 = all for digits/zip, 2000 for shapes)
    val_fraction: float = 0.2
    seed: int = 0  # data generation and split (kept apart from train.seed)
    image_size: int = 32  # shapes / zip (digits are 8x8)
    classes: list[str] = field(default_factory=lambda: ["circle", "square", "triangle", "cross"])  # shapes
    path: str = ""  # zip: a zip with one folder per class
    augment: Literal["none", "shift"] = "none"  # shift: training images moved by up to max_shift pixels
    max_shift: int = 1
    shuffle_labels: bool = False  # permute the training labels (Adebayo's data test); validation labels stay true

    def __post_init__(self) -> None:
        if not 0.0 < self.val_fraction < 1.0:
            raise ConfigError(f"data.val_fraction must be in (0, 1), got {self.val_fraction}.")
        if self.n < 0:
            raise ConfigError(f"data.n must be >= 0, got {self.n}.")
        if self.max_shift < 0:
            raise ConfigError(f"data.max_shift must be >= 0, got {self.max_shift}.")


@dataclass
class PairDataConfig:
    """`[data]` for seq2seq: a pair set, its seeded split, and source-length buckets for metrics."""

    pairs: str = "dates"  # dates | toy_translation | copy | reverse | sort | tsv
    n: int = 20000  # examples to generate (tsv: 0 = all rows)
    val_fraction: float = 0.1
    seed: int = 0  # data generation and split (kept apart from train.seed)
    min_len: int = 0  # toy_translation / copy / reverse / sort (0 = the set's default)
    max_len: int = 0  # likewise
    path: str = ""  # tsv: a file of source<TAB>target lines
    tokenizer: str = "auto"  # auto: char/word tokenizer over the pairs; else a workspace tokenizer
    bucket_width: int = 10  # source-length buckets (in tokens) for the accuracy-vs-length curve
    length_pool: int = 0  # batch by length: sort pools of this many batches by length (0 = off)

    def __post_init__(self) -> None:
        if self.pairs not in PAIR_SETS:
            raise ConfigError(f"data.pairs = {self.pairs!r} is not valid; choose one of: {', '.join(PAIR_SETS)}.")
        if not 0.0 < self.val_fraction < 1.0:
            raise ConfigError(f"data.val_fraction must be in (0, 1), got {self.val_fraction}.")
        if self.n < 0 or self.bucket_width < 1 or self.length_pool < 0:
            raise ConfigError("data.n and data.length_pool must be >= 0, data.bucket_width >= 1.")


# ---------------------------------------------------------------------------------------------
# seeded sampling


def step_generator(seed: int, step: int, salt: int = 0) -> torch.Generator:
    """A CPU generator seeded from (seed, step, salt): batches are a pure function of the step."""
    return torch.Generator().manual_seed((seed * 1_000_003 + step * 7919 + salt * 104_729) % (2**63 - 1))


class EpochSampler:
    """Example indices for any stretch of the global sample stream: epoch e is a permutation of
    range(n) seeded by (seed, e); global position k is permutation(k // n)[k % n]."""

    def __init__(self, n: int, seed: int) -> None:
        if n < 1:
            raise DataError("no training examples: add data or lower data.val_fraction.")
        self.n = n
        self.seed = seed
        self._cache: tuple[int, torch.Tensor] | None = None

    def _perm(self, epoch: int) -> torch.Tensor:
        if self._cache is None or self._cache[0] != epoch:
            self._cache = (epoch, torch.randperm(self.n, generator=step_generator(self.seed, epoch, salt=1)))
        return self._cache[1]

    def indices(self, start: int, count: int) -> torch.Tensor:
        """Indices of global sample positions start .. start + count - 1 ([count] long)."""
        out: list[int] = []
        pos = start
        while len(out) < count:
            epoch, offset = divmod(pos, self.n)
            take = min(count - len(out), self.n - offset)
            out.extend(self._perm(epoch)[offset:offset + take].tolist())
            pos += take
        return torch.tensor(out, dtype=torch.long)


def random_shift(images: torch.Tensor, max_shift: int, generator: torch.Generator) -> torch.Tensor:
    """Each image [C,H,W] of `images` [B,C,H,W] moved by up to `max_shift` pixels in x and y,
    the uncovered border filled with zeros (pad + seeded random crop)."""
    if max_shift <= 0:
        return images
    B, _, H, W = images.shape
    padded = torch.nn.functional.pad(images, (max_shift,) * 4)  # [B,C,H+2s,W+2s]
    offsets = torch.randint(0, 2 * max_shift + 1, (B, 2), generator=generator)
    return torch.stack([padded[b, :, dy:dy + H, dx:dx + W] for b, (dy, dx) in enumerate(offsets.tolist())])


# ---------------------------------------------------------------------------------------------
# text


def load_text(corpus: str, workspace: Workspace | None, max_chars: int = 0,
              caps: Any | None = None, policy: Any | None = None) -> tuple[str, str]:
    """The text of a named corpus (python-docs, python-code, tinyshakespeare), an upload, or a
    UTF-8 file path where `policy` (playground.data.policy.DataPolicy; None = the CLI's) allows
    paths, cut to `max_chars` (0 = all), and a one-line description (playground.data.corpora)."""
    loaded = load_corpus(corpus, workspace, caps or FULL_CAPS, policy=policy)
    text = loaded.text[:max_chars] if max_chars else loaded.text
    if not text.strip():
        raise DataError(f"Corpus {corpus!r} is empty; give a text with at least a few thousand characters.")
    return text, loaded.description


def char_table(tokenizer: Tokenizer) -> tuple[torch.Tensor, torch.Tensor, int, list[str]] | None:
    """(sorted code points [V], their ids [V], the unknown id, multi-character added tokens) of a
    character tokenizer (playground.tokenization.simple: WordLevel, one piece per character, no
    normalizer), else None."""
    spec = json.loads(tokenizer.to_str())
    model, pre = spec.get("model") or {}, spec.get("pre_tokenizer") or {}
    if (model.get("type") != "WordLevel" or spec.get("normalizer") is not None or pre.get("type") != "Split"
            or pre.get("pattern") != {"Regex": CHAR_PATTERN} or pre.get("behavior") != "Isolated"):
        return None
    vocab: dict[str, int] = model["vocab"]
    unk = vocab.get(model.get("unk_token") or "")
    if unk is None:
        return None
    singles = sorted((ord(piece), idx) for piece, idx in vocab.items() if len(piece) == 1)
    codes = torch.tensor([c for c, _ in singles], dtype=torch.int64)
    ids = torch.tensor([i for _, i in singles], dtype=torch.int64)
    added = [t["content"] for t in spec.get("added_tokens") or [] if len(t["content"]) > 1]
    return codes, ids, unk, added


def encode_chars(tokenizer: Tokenizer, text: str) -> torch.Tensor | None:
    """Ids of `text` [N] through a code-point lookup table, the same ids `tokenizers` gives a
    character tokenizer (milliseconds instead of a second per MB); None when that is not
    certain (another tokenizer, a special token's text in `text`, a lone surrogate)."""
    table = char_table(tokenizer)
    if table is None:
        return None
    codes, ids, unk, added = table
    if any(token in text for token in added):  # `tokenizers` would match the special token
        return None
    try:
        raw = bytearray(text.encode("utf-32-le"))
    except UnicodeEncodeError:
        return None
    points = torch.frombuffer(raw, dtype=torch.int32).to(torch.int64) if raw else torch.zeros(0, dtype=torch.int64)
    if not len(codes):
        return torch.full_like(points, unk)
    where = torch.searchsorted(codes, points).clamp_(max=len(codes) - 1)  # [N]
    return torch.where(codes[where] == points, ids[where], torch.full_like(points, unk))


def encode_text(tokenizer: Tokenizer, text: str, chunk_chars: int = 1 << 16) -> torch.Tensor:
    """Token ids of `text` [N] int64: a character tokenizer through a lookup table
    (:func:`encode_chars`), any other in line-aligned chunks (parallel in `tokenizers`)."""
    fast = encode_chars(tokenizer, text)
    if fast is not None:
        return fast
    chunks: list[str] = []
    start = 0
    while start < len(text):
        end = min(len(text), start + chunk_chars)
        if end < len(text):
            nl = text.rfind("\n", start, end)
            end = nl + 1 if nl > start else end
        chunks.append(text[start:end])
        start = end
    ids: list[int] = []
    for enc in tokenizer.encode_batch(chunks, add_special_tokens=False):
        ids.extend(enc.ids)
    return torch.tensor(ids, dtype=torch.long)


@dataclass
class TextData:
    """Token ids of a corpus split head/tail into train and val."""

    train: torch.Tensor  # [N_train] int64
    val: torch.Tensor  # [N_val] int64
    block_size: int

    def windows(self, split: str, starts: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Inputs and next-token targets at `starts`: x, y [B, T]."""
        ids = self.train if split == "train" else self.val
        idx = starts[:, None] + torch.arange(self.block_size + 1)  # [B,T+1]
        chunk = ids[idx]
        return chunk[:, :-1], chunk[:, 1:]

    def train_starts(self, seed: int, step: int, count: int) -> torch.Tensor:
        """`count` random window starts for update `step` ([count] int64)."""
        high = len(self.train) - self.block_size
        return torch.randint(high, (count,), generator=step_generator(seed, step))

    def val_starts(self, n_batches: int, batch_size: int) -> list[torch.Tensor]:
        """Fixed validation windows (the same at every evaluation, so curves compare)."""
        high = len(self.val) - self.block_size
        g = torch.Generator().manual_seed(12345)
        return [torch.randint(high, (batch_size,), generator=g) for _ in range(n_batches)]


# ---------------------------------------------------------------------------------------------
# pairs


@dataclass
class PairData:
    """Tokenized source/target pairs. Sources carry no specials; targets are framed as
    tgt_in = <bos> + y and tgt_out = y + <eos>."""

    train_src: list[list[int]]
    train_tgt: list[list[int]]
    val_src: list[list[int]]
    val_tgt: list[list[int]]
    val_text: list[tuple[str, str]]  # (source, target) strings of the val set
    pad_id: int
    bos_id: int
    eos_id: int
    bucket_width: int = 10
    length_pool: int = 0
    sampler: EpochSampler | None = None
    _pool_cache: tuple[int, int, list[int]] | None = None  # (seed, pool index, sorted indices)

    def train_indices(self, seed: int, step: int, start: int, count: int, global_size: int) -> list[int]:
        """Examples at positions start .. start+count-1 of update `step`'s global batch.

        With length_pool = k, pools of k consecutive global batches are sorted by source length
        and cut into k batches, which are then taken in a seeded order: batches of similar
        lengths waste little padding (an RNN decoder loops over the longest target in a batch),
        and the batch of a step is still a pure function of (seed, step).
        """
        if self.sampler is None or self.sampler.seed != seed:
            self.sampler = EpochSampler(len(self.train_src), seed)
            self._pool_cache = None
        if self.length_pool <= 1:
            return self.sampler.indices(step * global_size + start, count).tolist()
        k = self.length_pool
        pool, j = divmod(step, k)
        if self._pool_cache is None or self._pool_cache[:2] != (seed, pool):
            idx = self.sampler.indices(pool * k * global_size, k * global_size).tolist()
            idx.sort(key=lambda i: (len(self.train_src[i]), len(self.train_tgt[i])))
            order = torch.randperm(k, generator=step_generator(seed, pool, salt=3)).tolist()
            self._pool_cache = (seed, pool, [i for b in order for i in idx[b * global_size:(b + 1) * global_size]])
        chosen = self._pool_cache[2][j * global_size:(j + 1) * global_size]
        return chosen[start:start + count]

    def collate(self, src: list[list[int]], tgt: list[list[int]]) -> dict[str, torch.Tensor]:
        """Padded tensors: src [B,S], tgt_in [B,T], tgt_out [B,T] (pad_id where absent)."""
        B = len(src)
        S = max(1, max(len(s) for s in src))
        T = max(len(t) for t in tgt) + 1
        src_t = torch.full((B, S), self.pad_id, dtype=torch.long)
        tgt_in = torch.full((B, T), self.pad_id, dtype=torch.long)
        tgt_out = torch.full((B, T), self.pad_id, dtype=torch.long)
        for i, (s, t) in enumerate(zip(src, tgt)):
            src_t[i, :len(s)] = torch.tensor(s, dtype=torch.long)
            tgt_in[i, :len(t) + 1] = torch.tensor([self.bos_id, *t], dtype=torch.long)
            tgt_out[i, :len(t) + 1] = torch.tensor([*t, self.eos_id], dtype=torch.long)
        return {"src": src_t, "tgt_in": tgt_in, "tgt_out": tgt_out}


def load_pairs(cfg: PairDataConfig, policy: Any | None = None, workspace: Workspace | None = None) -> list:
    """The configured pair set (seeded by data.seed); a tsv's data.path goes through `policy`
    (playground.data.policy.DataPolicy; None = the CLI's, uploads in `workspace`)."""
    opts: dict[str, Any] = {}
    if cfg.pairs == "tsv":
        if not cfg.path:
            raise ConfigError("data.pairs = tsv needs data.path = a file of source<TAB>target lines.")
        built_in = tuple(f"data.pairs = {p}" for p in PAIR_SETS if p != "tsv")
        opts["path"] = default_policy(policy, workspace).resolve(cfg.path, "data.path", built_in)
    else:
        if cfg.min_len:
            opts["min_len"] = cfg.min_len
        if cfg.max_len:
            opts["max_len"] = cfg.max_len
    n = cfg.n or None
    return load_pair_set(cfg.pairs, n, cfg.seed, **opts)


def length_bucket(length: int, width: int) -> str:
    """Bucket label of a source length, e.g. 40-49 for width 10."""
    lo = (length // width) * width
    return f"{lo}-{lo + width - 1}"
