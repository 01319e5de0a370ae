"""Small corpora and tokenizers built once per session for the tokenization tests."""
from __future__ import annotations

import pytest

from playground.tokenization.bpe import TokenizerOptions, build_tokenizer

MIXED_LINES = [
    "Wie heißt du? Ich heiße Jürgen, und du?",
    "Ça va très bien, merci ! Où est la gare ?",
    "日本語のテキストも少し入れておきます。",
    "Привет, как дела? Всё хорошо.",
    "Emoji too: 🙂🚀 and math: ∑ x² ≤ ∞.",
    "def tokenize(text):\n    return [t for t in text.split() if t]\n",
    "\tTabs,  double  spaces,\r\nand Windows line ends.",
]


@pytest.fixture(scope="session")
def corpus() -> str:
    """About 60 kB: Python help text plus mixed-script lines (deterministic)."""
    from playground.data.corpora import python_docs_text

    return python_docs_text()[:50_000] + "\n".join(MIXED_LINES * 20) + "\n"


OPTION_SETS = {
    "byte-level": TokenizerOptions(vocab_size=600),
    "byte-level-nfkc-lower": TokenizerOptions(vocab_size=500, normalizer="lowercase"),
    "whitespace-bytes": TokenizerOptions(vocab_size=900, pre_tokenizer="whitespace"),
    "whitespace-unk": TokenizerOptions(vocab_size=700, pre_tokenizer="whitespace", fallback="unk", normalizer="nfkc"),
    "metaspace-bytes": TokenizerOptions(vocab_size=800, pre_tokenizer="metaspace", special_tokens=("<pad>", "<bos>", "<eos>")),
    "metaspace-unk": TokenizerOptions(vocab_size=500, pre_tokenizer="metaspace", fallback="unk", normalizer="nfc"),
    "none-bytes": TokenizerOptions(vocab_size=700, pre_tokenizer="none"),
    "char": TokenizerOptions(kind="char"),
}


@pytest.fixture(scope="session")
def tokenizers_by_name(corpus):
    """One tokenizer per entry of OPTION_SETS, trained on `corpus`."""
    return {name: build_tokenizer(corpus, options) for name, options in OPTION_SETS.items()}
