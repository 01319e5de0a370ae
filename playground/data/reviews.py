"""Text-classification data: a generated review corpus with known rationales, ``text,label``
uploads, and an optional download of SST-2.

The generated corpus (:func:`make_reviews`) is the text twin of vit-shapes' object masks: every
review is a few neutral sentences with 1 to 3 sentiment *cues* placed at random positions. A cue
is a positive or negative word or phrase ("great", "waste of time"), optionally negated ("not
great" flips it) and optionally intensified ("really great" keeps it). The label is the sign of
the sum of the cues' (negation-flipped) polarities; cue counts are drawn so that it is never a
tie. Each review carries its *rationale*: the word positions of the cues (and their negators)
that agree with the label, the tokens that decide it. Intensifiers and distractors never do.

Texts are lower-case words separated by single spaces, so a word index is a token index of
:func:`text_tokenizer` (which also lower-cases and splits punctuation off typed text).
"""
from __future__ import annotations

import csv
import io
import random
import re
import urllib.error
import urllib.request
import zipfile
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers

from playground.errors import ConfigError, DataError

PAD, UNK = "<pad>", "<unk>"
REVIEW_CLASSES = ("negative", "positive")

POSITIVE = ("good", "great", "excellent", "wonderful", "superb", "brilliant", "enjoyable", "delightful",
            "loved it", "worth watching", "a must see")
NEGATIVE = ("bad", "awful", "terrible", "boring", "dull", "poor", "horrible", "disappointing",
            "hated it", "waste of time", "fell asleep")
NEGATORS = ("not", "never", "hardly")
INTENSIFIERS = ("very", "really", "truly", "extremely")
NEGATABLE = {w for w in POSITIVE + NEGATIVE if " " not in w}  # "not good", never "not loved it"

SUBJECTS = ("the movie", "the film", "the plot", "the acting", "the story", "the ending", "the music",
            "the cast", "the script", "the camera work", "the director", "the dialogue", "the sequel")
LINKS = ("was", "is", "seemed", "felt")
FILLERS = (
    "i watched it on a rainy sunday with two friends",
    "we saw it at the cinema last week",
    "it runs for about two hours",
    "the trailer gave away most of the plot",
    "my sister picked it from the list",
    "there is a long scene in a train station",
    "the lead actor also wrote the script",
    "it was filmed in a small town by the sea",
    "the soundtrack has a lot of old songs",
    "we had popcorn and sat in the back row",
    "the second half takes place at night",
    "i read the book a few years ago",
    "it is based on a true story",
    "the cast is mostly new faces",
)

MAX_CUES = 8  # a one-sided review (data.cues) has at most this many cues
MAX_UPLOAD_ROWS = 200_000
MAX_UPLOAD_CHARS = 50_000_000
MAX_TEXT_WORDS = 400  # an uploaded text is cut to its first words (the model's max_len may cut further)
SST2_URL = "https://dl.fbaipublicfiles.com/glue/data/SST-2.zip"
SST2_MAX_BYTES = 20_000_000
WORD_PATTERN = r"[\w']+|[^\w\s]"  # one word or one punctuation mark
_WORDS = re.compile(WORD_PATTERN)


@dataclass(frozen=True)
class Cue:
    """One sentiment cue in a review: words [start, end) of the text, its polarity after negation."""

    start: int
    end: int
    polarity: int  # +1 positive, -1 negative (after negation)
    negated: bool
    intensified: bool


@dataclass(frozen=True)
class Review:
    """A labelled text; ``rationale`` are the word positions that decide the label (None: unknown)."""

    text: str
    label: int
    rationale: tuple[int, ...] | None = None
    cues: tuple[Cue, ...] = field(default_factory=tuple)

    @property
    def words(self) -> list[str]:
        return self.text.split()


def _cue(rng: random.Random, expressed: int, negation: float, intensify: float) -> tuple[list[str], Cue]:
    """Words of one cue expressing polarity ``expressed``: with probability ``negation`` a negated
    word of the other polarity ("not bad" expresses +1); single words may be intensified."""
    negated = rng.random() < negation
    pool = POSITIVE if (expressed > 0) != negated else NEGATIVE
    word = rng.choice([w for w in pool if w in NEGATABLE] if negated else pool)
    intensified = word in NEGATABLE and rng.random() < intensify
    words = ([rng.choice(NEGATORS)] if negated else []) + ([rng.choice(INTENSIFIERS)] if intensified else []) \
        + word.split()
    return words, Cue(0, len(words), expressed, negated, intensified)


def make_review(rng: random.Random, negation: float = 0.25, intensify: float = 0.25,
                max_fillers: int = 3, cues: tuple[int, int] | None = None) -> Review:
    """One generated review (see the module docstring). With ``cues = (lo, hi)`` it has lo..hi cues
    that all express the label's polarity (a one-sided review, as most real ones are); by default
    1 to 3 cues of which a strict majority agree."""
    n_cues = rng.choice((1, 1, 2, 3)) if cues is None else rng.randint(*cues)
    label = rng.randrange(2)
    sign = 1 if label else -1
    wanted = [sign] * n_cues
    # default mix: a strict majority has the label's sign (2 cues agree; of 3, 2 or 3 agree)
    if cues is None and n_cues == 3 and rng.random() < 0.5:
        wanted[rng.randrange(3)] = -sign
    sentences: list[tuple[list[str], Cue | None]] = []
    for expressed in wanted:
        cue_words, cue = _cue(rng, expressed, negation, intensify)
        head = rng.choice(SUBJECTS).split() + [rng.choice(LINKS)]
        sentences.append((head + cue_words, Cue(len(head), len(head) + len(cue_words), cue.polarity, cue.negated,
                                            cue.intensified)))
    for _ in range(rng.randint(0, max_fillers)):
        sentences.append((rng.choice(FILLERS).split(), None))
    rng.shuffle(sentences)
    words: list[str] = []
    placed: list[Cue] = []
    for sent_words, c in sentences:
        if c is not None:
            placed.append(Cue(c.start + len(words), c.end + len(words), c.polarity, c.negated, c.intensified))
        words.extend(sent_words)
    rationale = tuple(p for c in placed if c.polarity == sign for p in range(c.start, c.end)
                      if words[p] not in INTENSIFIERS)
    return Review(" ".join(words), label, tuple(sorted(rationale)), tuple(placed))


def make_reviews(n: int, seed: int = 0, negation: float = 0.25, intensify: float = 0.25,
                 max_fillers: int = 3, cues: Sequence[int] | None = None) -> list[Review]:
    """``n`` generated reviews, seeded (the same seed gives the same reviews). ``cues = [lo, hi]``:
    one-sided reviews with lo..hi cues each (see :func:`make_review`); None or empty: the default mix."""
    if n < 1:
        raise ConfigError(f"data.n must be >= 1 for the generated reviews, got {n}.")
    for name, value in (("negation", negation), ("intensify", intensify)):
        if not 0.0 <= value <= 1.0:
            raise ConfigError(f"data.{name} must be in [0, 1], got {value}.")
    rng = random.Random(seed)
    span = check_cue_range(cues)
    return [make_review(rng, negation, intensify, max_fillers, span) for _ in range(n)]


def check_cue_range(cues: Sequence[int] | None) -> tuple[int, int] | None:
    """``[lo, hi]`` -> (lo, hi) with 1 <= lo <= hi <= MAX_CUES; None or empty -> None (the default mix)."""
    if not cues:
        return None
    if (not isinstance(cues, (list, tuple)) or len(cues) != 2 or not all(isinstance(c, int) and not isinstance(c, bool) for c in cues)
            or not 1 <= cues[0] <= cues[1] <= MAX_CUES):
        raise ConfigError(f"data.cues must be [lo, hi] with 1 <= lo <= hi <= {MAX_CUES} (cues per one-sided review), "
                          f"or [] for the default mix; got {cues!r}.")
    return int(cues[0]), int(cues[1])


def held_out_cue_words() -> frozenset[str]:
    """The cue words a held-out split keeps out of training: every second positive and negative cue
    (half of each polarity, single words and phrases alike)."""
    return frozenset(POSITIVE[1::2] + NEGATIVE[1::2])


def cue_words(review: Review) -> list[str]:
    """The sentiment word or phrase of each cue of a generated review (negator and intensifier dropped)."""
    words = review.words
    out = []
    for c in review.cues:
        span = words[c.start:c.end][int(c.negated) + int(c.intensified):]
        out.append(" ".join(span))
    return out


# ---------------------------------------------------------------------------------------------
# tokenizer


def normalize_text(text: str) -> str:
    """Lower-case words and punctuation marks separated by single spaces (what the tokenizer sees)."""
    return " ".join(_WORDS.findall(text.lower()))


def text_tokenizer(texts: Iterable[str], max_vocab: int = 20_000, min_count: int = 1) -> Tokenizer:
    """A word-level tokenizer: <pad> = 0, <unk> = 1, then the ``max_vocab`` most frequent words
    seen at least ``min_count`` times (ties alphabetical). Lower-cases and splits punctuation."""
    counts = Counter(w for t in texts for w in normalize_text(t).split())
    kept = sorted((w for w, c in counts.items() if c >= min_count), key=lambda w: (-counts[w], w))[:max_vocab]
    vocab = {PAD: 0, UNK: 1, **{w: i + 2 for i, w in enumerate(sorted(kept))}}
    tok = Tokenizer(models.WordLevel(vocab, unk_token=UNK))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(),
                                                 pre_tokenizers.Split(Regex(WORD_PATTERN), behavior="isolated")])
    tok.add_special_tokens([PAD, UNK])
    return tok


def encode_words(tokenizer: Tokenizer | None, text: str, max_len: int | None = None) -> list[int]:
    """Token ids of typed text for a word-level classifier: unknown words read as <unk> (no error),
    cut to ``max_len``."""
    if tokenizer is None:
        raise DataError("This checkpoint has no tokenizer.json, so it cannot read a text.")
    ids = tokenizer.encode(text or "", add_special_tokens=False).ids
    return ids[:max_len] if max_len else ids


# ---------------------------------------------------------------------------------------------
# uploads: text,label rows


def _decode(raw: bytes) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataError(f"The file is not UTF-8 (byte {raw[exc.start]:#04x} at offset {exc.start}); "
                        "save it as UTF-8 and upload it again.") from None


def parse_labelled(data: bytes | str, max_rows: int = MAX_UPLOAD_ROWS,
                   max_chars: int = MAX_UPLOAD_CHARS) -> tuple[list[Review], list[str]]:
    """``text,label`` rows (CSV, or TSV when the first line has a tab) -> (reviews, class names).

    Takes the file's bytes or text, never a path. A header row whose second column is "label"
    (or "sentiment", "class") is skipped; labels are names or integers, class names sorted (integers
    numerically). Blank lines are skipped; a row without both columns is an error naming its line.
    """
    text = _decode(data) if isinstance(data, bytes) else data
    if len(text) > max_chars:
        raise DataError(f"The file has {len(text):,} characters; the limit is {max_chars:,}: keep fewer rows.")
    lines = text.splitlines()
    if not any(line.strip() for line in lines):
        raise DataError("The file is empty: give one text,label row per line.")
    first = next(line for line in lines if line.strip())
    delimiter = "\t" if "\t" in first else ","
    rows: list[tuple[int, str, str]] = []
    reader = csv.reader(io.StringIO(text), delimiter=delimiter)
    for number, row in enumerate(reader, start=1):
        if not row or not any(c.strip() for c in row):
            continue
        if len(row) < 2:
            raise DataError(f"Line {number} has no {'tab' if delimiter == chr(9) else 'comma'}: each row must be "
                            f"text{delimiter}label (got {str(row[0])[:40]!r}).")
        body, label = ",".join(row[:-1]) if delimiter == "," and len(row) > 2 else row[0], row[-1].strip()
        if not rows and label.lower() in ("label", "sentiment", "class", "labels"):
            continue  # the header
        if not body.strip() or not label:
            raise DataError(f"Line {number} has an empty {'text' if not body.strip() else 'label'}.")
        rows.append((number, body, label))
        if len(rows) > max_rows:
            raise DataError(f"The file has more than {max_rows:,} rows; keep fewer.")
    names = sorted({lab for _, _, lab in rows}, key=lambda s: (not s.lstrip("-").isdigit(),
                                                             int(s) if s.lstrip("-").isdigit() else 0, s))
    if len(names) < 2:
        raise DataError(f"The file has {len(names)} distinct label(s) ({', '.join(names)}); a classifier needs at least two.")
    if len(names) > 100:
        raise DataError(f"The file has {len(names)} distinct labels; at most 100 classes are supported.")
    index = {n: i for i, n in enumerate(names)}
    out = []
    for _, body, label in rows:
        words = normalize_text(body).split()[:MAX_TEXT_WORDS]
        if words:
            out.append(Review(" ".join(words), index[label]))
    return out, names


# ---------------------------------------------------------------------------------------------
# SST-2 (optional, online)


def download_sst2(url: str = SST2_URL, timeout: float = 20.0, max_bytes: int = SST2_MAX_BYTES) -> bytes:
    """The SST-2 zip (GLUE) as bytes; DataError with a clear offline message when it cannot be fetched."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 - a fixed https URL
            raw = response.read(max_bytes + 1)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise DataError(f"SST-2 could not be downloaded from {url} ({exc}); this machine seems to be offline. "
                        "Use data.texts = reviews (generated, no download) or upload a text,label CSV.") from None
    if len(raw) > max_bytes:
        raise DataError(f"The SST-2 download is over {max_bytes:,} bytes; refusing it.")
    return raw


def sst2_reviews(raw: bytes) -> tuple[list[Review], list[str]]:
    """Train + dev sentences of the GLUE SST-2 zip (its test split has no labels)."""
    try:
        with zipfile.ZipFile(io.BytesIO(raw)) as zf:
            parts = [zf.read(name).decode("utf-8") for name in ("SST-2/train.tsv", "SST-2/dev.tsv")]
    except (zipfile.BadZipFile, KeyError) as exc:
        raise DataError(f"The SST-2 download is not the GLUE zip we expect ({exc}).") from None
    reviews: list[Review] = []
    names: list[str] = []
    for part in parts:
        rows, names = parse_labelled(part)
        reviews.extend(rows)
    return reviews, [REVIEW_CLASSES[int(n)] if n in ("0", "1") else n for n in names]


def subsample(items: Sequence[Review], n: int | None, seed: int) -> list[Review]:
    """``n`` of ``items`` in their order, chosen with ``seed`` (all when n is None or larger)."""
    if n is None or n >= len(items):
        return list(items)
    keep = sorted(random.Random(seed).sample(range(len(items)), n))
    return [items[i] for i in keep]


__all__ = [
    "REVIEW_CLASSES",
    "Cue",
    "Review",
    "check_cue_range",
    "cue_words",
    "download_sst2",
    "encode_words",
    "held_out_cue_words",
    "make_review",
    "make_reviews",
    "normalize_text",
    "parse_labelled",
    "sst2_reviews",
    "subsample",
    "text_tokenizer",
]
