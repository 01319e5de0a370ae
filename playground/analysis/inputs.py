"""From a checkpoint and what a person typed/uploaded/picked to a :class:`Query` (B = 1, or
B = output length for seq2seq) plus the labels the views need.

- GPT: a text prompt; the query position (default: the last token) and the next-token target
  (default: the model's prediction, or a token the user types / an id).
- ViT: an image (array, tensor or a sample from the checkpoint's validation data, which for
  vit-shapes carries the object's mask); the target class (default: the prediction).
- text classifier: a typed text (or a validation review, with its ground-truth rationale);
  the target class (default: the prediction).
- seq2seq: a source sentence (or a validation pair); the model's own greedy output is
  teacher-forced, every output token (EOS included) is one row; the selected output step
  picks the row the per-token views show.

Special tokens (BOS/EOS/PAD/UNK and the tokenizer's other specials) are marked in ``special``
and excluded from every ranking.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from tokenizers import Tokenizer
from torch import Tensor

from playground.analysis.query import Query
from playground.data.examples import AnalysisExample
from playground.data.reviews import encode_words
from playground.errors import DataError, PlaygroundError
from playground.families import get_family
from playground.generation.lm import start_ids
from playground.generation.seq2seq import greedy_decode
from playground.generation.text import encode_text, token_text

PAD_TOKENS = ("<pad>", "[PAD]", "<|pad|>", "<PAD>")
UNK_TOKENS = ("<unk>", "[UNK]", "<|unk|>", "<UNK>")
END_TOKENS = ("<|endoftext|>", "<eos>", "</s>", "<bos>", "<s>")


@dataclass
class Prepared:
    """A ready query and everything needed to label it.

    ``units``: one label per input unit (token text, "r2c3" for patches).
    ``rows``: labels of the query's B examples (seq2seq: the output tokens; else one label).
    ``selected``: which example row the per-row views show (seq2seq output step).
    """

    family: str
    kind: str
    query: Query
    units: list[str]
    special: list[bool]
    rows: list[str]
    selected: int = 0
    target_id: int = 0
    target_label: str = ""
    predicted_id: int = 0
    predicted_label: str = ""
    position: int | None = None  # lm: query position in the (cropped) input
    offset: int = 0  # lm: tokens cropped away on the left (input longer than the context)
    image: Tensor | None = None  # classifier input [C,H,W] in [0, 1]
    mask: Tensor | None = None  # classifier: object pixels [H,W] (vit-shapes) or rationale tokens [T] (reviews)
    true_label: int | None = None
    gold_alignment: list[tuple[int, int]] | None = None  # seq2seq validation pairs (target, source)
    source_text: str = ""
    info: dict[str, Any] = field(default_factory=dict)


def _token_id(tokenizer: Tokenizer | None, names: tuple[str, ...]) -> int | None:
    for tok in names:
        idx = tokenizer.token_to_id(tok) if tokenizer is not None else None
        if idx is not None:
            return int(idx)
    return None


def special_id_set(tokenizer: Tokenizer | None) -> set[int]:
    """Ids of the tokenizer's special tokens (added tokens marked special, plus the usual names)."""
    ids: set[int] = set()
    if tokenizer is None:
        return ids
    try:
        for idx, tok in tokenizer.get_added_tokens_decoder().items():
            if getattr(tok, "special", False):
                ids.add(int(idx))
    except AttributeError:  # pragma: no cover - old tokenizers
        pass
    for name in PAD_TOKENS + UNK_TOKENS + END_TOKENS:
        idx = tokenizer.token_to_id(name)
        if idx is not None:
            ids.add(int(idx))
    return ids


def baseline_id(tokenizer: Tokenizer | None, prefer: str = "pad") -> int:
    """The id IG and leave-one-out put in place of a token: pad, else unk, else an end token, else 0."""
    order = (PAD_TOKENS, UNK_TOKENS, END_TOKENS) if prefer == "pad" else (UNK_TOKENS, PAD_TOKENS, END_TOKENS)
    for names in order:
        idx = _token_id(tokenizer, names)
        if idx is not None:
            return idx
    return 0


def token_label(tokenizer: Tokenizer | None, idx: int) -> str:
    """How one token reads on its own (specials kept)."""
    return token_text(tokenizer, int(idx)) if tokenizer is not None else str(idx)


def encode_input(tokenizer: Tokenizer | None, text: str, vocab_size: int, what: str = "input") -> list[int]:
    """Token ids of typed text; special tokens typed literally (e.g. "<bos>") are kept as specials."""
    if tokenizer is None:
        raise DataError(f"This checkpoint has no tokenizer.json, so it cannot read a text {what}.")
    plain = text
    try:
        specials = [t.content for t in tokenizer.get_added_tokens_decoder().values() if getattr(t, "special", False)]
    except AttributeError:  # pragma: no cover - old tokenizers
        specials = []
    for s in sorted(specials, key=len, reverse=True):
        plain = plain.replace(s, "")
    encode_text(tokenizer, plain, vocab_size, what=what)  # DataError naming what is outside the vocabulary
    ids = tokenizer.encode(text, add_special_tokens=False).ids
    if any(i >= vocab_size for i in ids):
        raise DataError(f"The tokenizer gives ids up to {max(ids)} but the model has only {vocab_size} tokens; "
                        "this checkpoint's tokenizer and model do not match.")
    return ids


def _resolve_token(tokenizer: Tokenizer, target: int | str, vocab_size: int) -> int:
    if isinstance(target, (int, np.integer)):
        idx = int(target)
    else:
        text = str(target)
        stripped = text.strip()
        if stripped.startswith("#") and stripped[1:].isdigit():
            idx = int(stripped[1:])
        else:
            idx = tokenizer.token_to_id(text)
            if idx is None:
                ids = tokenizer.encode(text, add_special_tokens=False).ids
                if len(ids) != 1:
                    pieces = " | ".join(repr(token_label(tokenizer, i)) for i in ids) or "nothing"
                    raise PlaygroundError(
                        f"The target {text!r} is {len(ids)} tokens for this tokenizer ({pieces}); type a single "
                        "token, or its id as #123."
                    )
                idx = ids[0]
    if not 0 <= idx < vocab_size:
        raise PlaygroundError(f"Token id {idx} is outside this model's vocabulary of {vocab_size}.")
    return int(idx)


# ----------------------------------------------------------------------------------------
# GPT


def prepare_lm(model: torch.nn.Module, tokenizer: Tokenizer | None, text: str, position: int | None = None,
               target: int | str | None = None, family: str = "gpt", device: str | torch.device = "cpu",
               ids: list[int] | None = None) -> Prepared:
    """A next-token query: ``position`` indexes the prompt's tokens (negative from the end; None = last).

    ``ids`` (e.g. handed over by the Generate tab) are used instead of encoding ``text``.
    """
    cfg = model.config
    if ids is not None:
        ids = [int(i) for i in ids]
        if any(not 0 <= i < cfg.vocab_size for i in ids):
            raise PlaygroundError(f"Token ids must lie in 0..{cfg.vocab_size - 1} for this model.")
    else:
        ids = encode_input(tokenizer, text or "", cfg.vocab_size, what="input")
    if not ids:
        ids = start_ids(tokenizer)
    n = len(ids)
    pos = n - 1 if position is None else int(position)
    if pos < 0:
        pos += n
    if not 0 <= pos < n:
        raise PlaygroundError(f"Position {position} is outside the input's {n} tokens (0..{n - 1}, or -1 for the last).")
    block = cfg.block_size
    start = max(0, pos + 1 - block)
    end = min(n, start + block)
    window = ids[start:end]
    pos_in = pos - start
    ids_t = torch.tensor([window], dtype=torch.long, device=device)  # [1,T]
    with torch.no_grad():
        logits = model(ids_t)[0, pos_in].float()  # [V]
    predicted = int(logits.argmax())
    target_id = predicted if target is None or (isinstance(target, str) and target == "") else \
        _resolve_token(tokenizer, target, cfg.vocab_size)
    specials = special_id_set(tokenizer)
    special = [i in specials for i in window]
    base = baseline_id(tokenizer, "pad")
    baselines = torch.tensor([[i if s else base for i, s in zip(window, special)]], dtype=torch.long, device=device)
    spec = get_family(family)
    query = Query(model, spec.explainer, ids_t, torch.tensor([target_id], device=device), spec.input_embedding(model),
                  positions=torch.tensor([pos_in], device=device), baselines=baselines,
                  units_mask=torch.tensor([[not s and i <= pos_in for i, s in enumerate(special)]], device=device),
                  pad_id=base)
    units = [token_label(tokenizer, i) for i in window]
    probs = logits.softmax(-1)
    return Prepared(family, spec.kind, query, units, special, [f"next after #{pos}"], 0, target_id,
                    token_label(tokenizer, target_id), predicted, token_label(tokenizer, predicted), pos_in, start,
                    info={"target_prob": float(probs[target_id]), "predicted_prob": float(probs[predicted]),
                          "baseline_token": token_label(tokenizer, base), "baseline_id": base, "cropped_left": start,
                          "n_tokens": n})


# ----------------------------------------------------------------------------------------
# ViT


def to_image_tensor(image: Any, channels: int, size: int) -> Tensor:
    """An uploaded image (H×W or H×W×C array, uint8 or float; PIL image; [C,H,W] tensor) -> [C,size,size] in [0, 1]."""
    if isinstance(image, Tensor):
        t = image.detach().float().cpu()
        if t.dim() == 2:
            t = t[None]
    else:
        arr = np.asarray(image)
        if arr.ndim == 2:
            arr = arr[:, :, None]
        if arr.ndim != 3:
            raise DataError(f"Cannot read an image of shape {arr.shape}; upload a PNG or JPEG.")
        t = torch.from_numpy(np.ascontiguousarray(arr)).float().permute(2, 0, 1)
        if arr.dtype == np.uint8 or t.max() > 1.0:
            t = t / 255.0
    if t.shape[0] == 4:  # RGBA: drop alpha
        t = t[:3]
    if channels == 1 and t.shape[0] == 3:
        t = (0.299 * t[0] + 0.587 * t[1] + 0.114 * t[2])[None]
    elif channels == 3 and t.shape[0] == 1:
        t = t.expand(3, -1, -1)
    if t.shape[0] != channels:
        raise DataError(f"The image has {t.shape[0]} channels; this model takes {channels}.")
    if t.shape[-2:] != (size, size):
        t = F.interpolate(t[None], size=(size, size), mode="bilinear", antialias=True, align_corners=False)[0]
    return t.clamp(0, 1).contiguous()


def class_index(target: int | str, class_names: list[str] | None, n_classes: int) -> int:
    """A class given by index or name."""
    if isinstance(target, str):
        names = class_names or []
        if target in names:
            return names.index(target)
        if target.strip().lstrip("-").isdigit():
            target = int(target)
        else:
            raise PlaygroundError(f"Unknown class {target!r}; this model knows {', '.join(names) or n_classes}.")
    idx = int(target)
    if not 0 <= idx < n_classes:
        raise PlaygroundError(f"Class index {idx} is outside 0..{n_classes - 1}.")
    return idx


def prepare_classifier(model: torch.nn.Module, image: Any, target: int | str | None = None,
                       class_names: list[str] | None = None, mask: Any | None = None,
                       true_label: int | None = None, family: str = "vit",
                       device: str | torch.device = "cpu") -> Prepared:
    """A class query over the patches of one image."""
    cfg = model.config
    img = to_image_tensor(image, cfg.channels, cfg.image_size)  # [C,H,W]
    x = img[None].to(device)
    with torch.no_grad():
        logits = model(x)[0].float()
    predicted = int(logits.argmax())
    target_id = predicted if target is None or target == "" else class_index(target, class_names, cfg.n_classes)
    rows, cols = model.grid
    name = (lambda i: class_names[i] if class_names and i < len(class_names) else f"class {i}")
    spec = get_family(family)
    query = Query(model, spec.explainer, x, torch.tensor([target_id], device=device), spec.input_embedding(model),
                  baselines=torch.zeros_like(x), grid=(rows, cols), cls_token=cfg.pool == "cls")
    probs = logits.softmax(-1)
    m = None if mask is None else torch.as_tensor(np.asarray(mask), dtype=torch.bool)
    if m is not None and m.shape != (cfg.image_size, cfg.image_size):
        m = torch.nn.functional.interpolate(m[None, None].float(), size=(cfg.image_size, cfg.image_size),
                                            mode="nearest")[0, 0] > 0.5
    return Prepared(family, spec.kind, query, [f"r{r}c{c}" for r in range(rows) for c in range(cols)],
                    [False] * (rows * cols), [name(target_id)], 0, target_id, name(target_id), predicted,
                    name(predicted), image=img, mask=m, true_label=true_label,
                    info={"target_prob": float(probs[target_id]), "predicted_prob": float(probs[predicted]),
                          "target_logit": float(logits[target_id]), "patch_size": cfg.patch_size,
                          "true_label": None if true_label is None else name(true_label)})


# ----------------------------------------------------------------------------------------
# text classifier


def prepare_text_classifier(model: torch.nn.Module, tokenizer: Tokenizer | None, text: str,
                            target: int | str | None = None, class_names: list[str] | None = None,
                            rationale: Any | None = None, true_label: int | None = None,
                            family: str = "text_classifier", device: str | torch.device = "cpu") -> Prepared:
    """A class query over the tokens of one text (<unk> and other specials excluded from rankings);
    the baseline of IG, leave-one-out "replace" and erasure is <unk> (a zero embedding at init,
    still attended: <pad> would be masked, another function than the one explained).

    ``rationale``: the ground-truth tokens [T] bool of a generated review (the cue words that
    decide its label), kept as ``mask`` for the plausibility (pointing) table.
    """
    cfg = model.config
    ids = encode_words(tokenizer, text, cfg.max_len)
    if not ids:
        raise PlaygroundError("Type a text to classify.")
    x = torch.tensor([ids], dtype=torch.long, device=device)  # [1,T]
    with torch.no_grad():
        logits = model(x)[0].float()  # [C]
    predicted = int(logits.argmax())
    target_id = predicted if target is None or target == "" else class_index(target, class_names, cfg.n_classes)
    name = (lambda i: class_names[i] if class_names and i < len(class_names) else f"class {i}")
    specials = special_id_set(tokenizer) | {cfg.pad_id}
    special = [i in specials for i in ids]
    spec = get_family(family)
    special_t = torch.tensor([special], device=device)  # [1,T]
    query = Query(model, spec.explainer.for_model(model), x, torch.tensor([target_id], device=device),
                  spec.input_embedding(model), baselines=torch.where(special_t, x, cfg.unk_id),
                  units_mask=~special_t, pad_id=cfg.pad_id)
    probs = logits.softmax(-1)
    units = [token_label(tokenizer, i) for i in ids]
    mask = None
    if rationale is not None:
        mask = torch.as_tensor(np.asarray(rationale), dtype=torch.bool)[: len(ids)]
        mask = torch.cat([mask, mask.new_zeros(len(ids) - len(mask))])
    return Prepared(family, spec.kind, query, units, special, [name(target_id)], 0, target_id, name(target_id),
                    predicted, name(predicted), mask=mask, true_label=true_label, source_text=text,
                    info={"target_prob": float(probs[target_id]), "predicted_prob": float(probs[predicted]),
                          "probs": {name(k): float(p) for k, p in enumerate(probs.tolist())},
                          "baseline_token": token_label(tokenizer, cfg.unk_id), "baseline_id": cfg.unk_id,
                          "true_label": None if true_label is None else name(true_label),
                          "rationale_words": None if mask is None else [u for u, m in zip(units, mask.tolist()) if m]})


# ----------------------------------------------------------------------------------------
# seq2seq


def prepare_seq2seq(model: torch.nn.Module, tokenizer: Tokenizer | None, source: str, step: int | None = None,
                    max_output: int | None = None, family: str = "transformer_seq2seq",
                    gold_alignment: list[tuple[int, int]] | None = None,
                    device: str | torch.device = "cpu", output_ids: list[int] | None = None) -> Prepared:
    """Every output token of the model's own greedy output, teacher-forced (B = output length + EOS).

    ``output_ids`` (e.g. a sampled or beam output handed over by the Generate tab) replaces the
    greedy output; rows are those tokens, plus EOS when they do not end with it.
    """
    cfg = model.config
    src_ids = encode_input(tokenizer, source or "", cfg.vocab_size, what="source sentence")
    if not src_ids:
        raise PlaygroundError("Type a source sentence to translate.")
    limit = getattr(cfg, "max_len", None)
    if limit is not None and len(src_ids) > limit:
        raise PlaygroundError(f"The source has {len(src_ids)} tokens; this model reads at most {limit}.")
    src = torch.tensor([src_ids], dtype=torch.long, device=device)  # [1,S]
    out_cap = max_output or min(limit - 1 if limit else 10_000, 2 * len(src_ids) + 10)
    if output_ids is not None:
        y = [int(i) for i in output_ids]
        if y and y[-1] == cfg.eos_id:
            y = y[:-1]
    else:
        y = greedy_decode(model, src, cfg.bos_id, cfg.eos_id, out_cap)[0]
    targets = y + [cfg.eos_id]  # what the model predicts at each step
    tgt_in = [cfg.bos_id] + y
    T = len(targets)
    sel = 0 if step is None else int(step)
    if sel < 0:
        sel += T
    if not 0 <= sel < T:
        raise PlaygroundError(f"Output step {step} does not exist; the model's output has {T} tokens with EOS (0..{T - 1}).")
    specials = special_id_set(tokenizer)
    special = [i in specials for i in src_ids]
    base = baseline_id(tokenizer, "unk")  # pad would be masked out (and breaks the RNN's packing)
    baselines = torch.tensor([[i if s else base for i, s in zip(src_ids, special)]], device=device)
    spec = get_family(family)
    query = Query(model, spec.explainer, src.expand(T, -1).contiguous(), torch.tensor(targets, device=device),
                  spec.input_embedding(model), positions=torch.arange(T, device=device),
                  decoder_inputs=torch.tensor([tgt_in], device=device).expand(T, -1).contiguous(),
                  baselines=baselines.expand(T, -1).contiguous(),
                  units_mask=torch.tensor([[not s for s in special]], device=device).expand(T, -1).contiguous(),
                  pad_id=cfg.pad_id)
    with torch.no_grad():
        lp = query.probs()  # [T,V]
    row_labels = [token_label(tokenizer, t) for t in targets]
    return Prepared(family, spec.kind, query, [token_label(tokenizer, i) for i in src_ids], special, row_labels,
                    sel, targets[sel], row_labels[sel], targets[sel], row_labels[sel],
                    gold_alignment=gold_alignment, source_text=source,
                    info={"output": tokenizer.decode(y, skip_special_tokens=True),
                          "target_prob": float(lp[sel, targets[sel]]),
                          "baseline_token": token_label(tokenizer, base), "baseline_id": base})


# ----------------------------------------------------------------------------------------
# Samples from the checkpoint's own validation data


def data_samples(config: dict[str, Any], family: str, n: int = 50) -> list[AnalysisExample]:
    """Up to ``n`` validation examples rebuilt from a bundle's config (same seed, same split as
    training) by the family's examples; [] when the data cannot be rebuilt (zip / tsv uploads,
    other writers, a language model: its input is typed text).
    """
    data = dict((config.get("sections") or {}).get("data") or {})
    try:
        return get_family(family).examples.for_analysis(data, n)
    except (TypeError, ValueError, KeyError, ImportError, PlaygroundError):
        return []
