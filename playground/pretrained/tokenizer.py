"""A pretrained checkpoint's tokenizer as one ``tokenizers.Tokenizer`` (saved as tokenizer.json).

tokenizer.json is taken as is (WordPiece for BERT, byte-level BPE for GPT-2). Older folders
with only the slow tokenizer's files are rebuilt from them: ``vocab.txt`` (WordPiece, lower-cased
when tokenizer_config.json says so) or ``vocab.json`` + ``merges.txt`` (byte-level BPE).
"""
from __future__ import annotations

from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers

from playground.errors import ConfigError, NotFoundError
from playground.pretrained.sources import Source


def load_tokenizer(source: Source) -> Tokenizer:
    """The checkpoint's tokenizer; NotFoundError when it has none the playground can read."""
    try:
        if source.has("tokenizer.json"):
            return Tokenizer.from_file(str(source.fetch("tokenizer.json")))
        if source.has("vocab.txt"):
            return _wordpiece(source)
        if source.has("vocab.json") and source.has("merges.txt"):
            return _byte_bpe(source)
    except Exception as exc:  # tokenizers raises a plain Exception on a bad file
        if isinstance(exc, (NotFoundError, ConfigError)):
            raise
        raise ConfigError(f"The tokenizer of {source.label} is not readable ({str(exc)[:120]}).") from exc
    raise NotFoundError(f"{source.label} has no tokenizer (tokenizer.json, vocab.txt or vocab.json + merges.txt): "
                        "save it beside the model with tokenizer.save_pretrained(folder).")


def _wordpiece(source: Source) -> Tokenizer:
    lower = True
    if source.has("tokenizer_config.json"):
        lower = bool(source.read_json("tokenizer_config.json").get("do_lower_case", True))
    tok = Tokenizer(models.WordPiece.from_file(str(source.fetch("vocab.txt")), unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=lower)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    specials = [t for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]") if tok.token_to_id(t) is not None]
    tok.add_special_tokens(specials)  # already in the vocabulary: ids unchanged
    return tok


def _byte_bpe(source: Source) -> Tokenizer:
    tok = Tokenizer(models.BPE.from_file(str(source.fetch("vocab.json")), str(source.fetch("merges.txt"))))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    if tok.token_to_id("<|endoftext|>") is not None:
        tok.add_special_tokens(["<|endoftext|>"])
    return tok


def check_vocabulary(tokenizer: Tokenizer, vocab_size: int, label: str) -> None:
    """ConfigError when the tokenizer has ids the model has no embedding for."""
    n = tokenizer.get_vocab_size(with_added_tokens=True)
    top = max(tokenizer.get_vocab(with_added_tokens=True).values(), default=-1) + 1
    if max(n, top) > vocab_size:
        raise ConfigError(f"The tokenizer of {label} has {max(n, top)} tokens but the model only {vocab_size} "
                          "embeddings: they do not belong together. Save the model's own tokenizer beside it.")
