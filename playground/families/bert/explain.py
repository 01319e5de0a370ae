"""What explaining a BERT's output means.

- MLM: F = log softmax(logits[mask position])[target], the target being the predicted token
  at a chosen [MASK] (or one the user types). Unlike GPT, every token of the text can reach
  the output (bidirectional attention), so every real token is a unit.
- classifier: F = log p(class) from the final [CLS] state. [CLS] is an input token (position 0),
  so row 0 of each map produces the output and key 0 is [CLS] itself (a special, never ranked).

Units are the framed tokens [CLS] ... [SEP]; specials ([CLS], [SEP], [MASK], [PAD]) are never
ranked. The baseline of integrated gradients, leave-one-out "replace" and erasure is [MASK]:
what the encoder was pre-trained to read as "a token is missing here" ([PAD] would be masked
out of attention, another function than the one explained).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from tokenizers import Tokenizer
from torch import Tensor, nn

from playground.analysis.explain.attributions import deleted_tokens, replaced_tokens
from playground.analysis.explain.propagation import entropy
from playground.analysis.explainer import AnalyzeView
from playground.analysis.query import Query
from playground.errors import PlaygroundError
from playground.families.gpt.explain import LMExplainer
from playground.families.text_classifier.explain import TextClassifierExplainer
from playground.models.attention import attention_modules

if TYPE_CHECKING:  # bundle imports the family registry, which imports this module
    from playground.bundle import Bundle

MLM_ABOUT = ("**BERT (masked LM)** · explains the prediction at a [MASK]. Type a text with [MASK] "
             "(e.g. `the acting was [MASK] .`); the position is the token index of the mask to explain in "
             "[CLS] text [SEP] (blank = the first [MASK]); the target is a token (blank = the prediction). Every "
             "token on both sides of the mask can matter.")
CLS_ABOUT = ("**BERT classifier** · explains log p(class) from the final [CLS] state over the text's tokens. "
             "Type a text (or pick a validation review with its rationale); the target is a class "
             "(blank = the prediction). Row 0 of every attention map is the [CLS] row.")


def encoder_maps(model: nn.Module) -> list[str]:
    """The encoder's self-attention maps, first layer first."""
    return [n for n in attention_modules(model) if n.startswith("encoder.blocks.")]


def framed_input(tokenizer: Tokenizer | None, text: str, config: Any) -> list[int]:
    """[CLS] ids [SEP] of ``text`` (PlaygroundError when empty or too long)."""
    if tokenizer is None:
        raise PlaygroundError("This checkpoint has no tokenizer.json, so it cannot read a text.")
    if not text or not text.strip():
        raise PlaygroundError("Type a text to analyse.")
    ids = tokenizer.encode(text, add_special_tokens=False).ids
    if len(ids) > config.block_size - 2:
        raise PlaygroundError(f"The text is {len(ids)} tokens; this model reads at most {config.block_size - 2}. Shorten it.")
    return [config.cls_id, *ids, config.sep_id]


class MLMExplainer(LMExplainer):
    """F = log p(target) at a [MASK] position; all real tokens are units (both directions)."""

    kind = "lm"
    induction = False
    output_name = "masked-token distribution"
    uniform_override = None

    def head_data(self, payload: Any, n: int, seed: int, batch_size: int, device: str) -> Any:
        return None  # head analysis scores next-token heads; a masked model has none

    def last_only(self, query: Query) -> bool:
        return False

    def explaining_maps(self, model: nn.Module) -> list[str]:
        return encoder_maps(model)

    def loo_mode(self, mode: str) -> str:
        return "replace"  # deleting a token would move the mask: replace it by [MASK] instead

    def loo_variants(self, query: Query, mode: str) -> tuple[Tensor, Tensor | None]:
        return replaced_tokens(query), query.positions.repeat(query.n_units)  # type: ignore[union-attr]

    def reachable_units(self, query: Query, b: int = 0) -> Tensor:
        return query.units_mask[b].to(torch.bool).clone()  # type: ignore[index]

    def probe_keys(self, query: Query) -> tuple[int, Tensor]:
        return int(query.positions[0]), torch.arange(query.n_units, device=query.device)  # type: ignore[index]

    def visible_keys(self, query: Query, n_keys: int) -> Tensor:
        return (query.inputs[0] != query.pad_id)[:n_keys]

    def probe_prefix(self, query: Query, row: int) -> Any:
        return None

    def probe_logits(self, query: Query, row: int, prefix: Any, n: int) -> Tensor:
        return query.model(query.inputs.expand(n, -1))[:, row]  # [n,V]

    def permutable_keys(self, query: Query, b: int, n_keys: int) -> Tensor:
        return query.units_mask[b][:n_keys].nonzero().flatten()  # type: ignore[index]

    def prepare(self, bundle: Bundle, spec: Any, sample: Any, device: str | torch.device) -> Any:
        if spec.ids is not None:
            ids = [int(i) for i in spec.ids]
        else:
            ids = framed_input(bundle.tokenizer, spec.text or "", bundle.model_config)
        return prepare_mlm(bundle, ids, spec.position, spec.target, device)

    def head_maps(self, prepared: Any, full: Tensor, window: int) -> tuple[Tensor, Tensor, list[str], list[str], str]:
        pos = int(prepared.query.positions[0])
        n = min(len(prepared.units), window)
        lo = max(0, min(pos - n // 2, len(prepared.units) - n))
        labels = prepared.units[lo:lo + n]
        return full[:, :, lo:lo + n, lo:lo + n], entropy(full[:, :, pos]), labels, labels, "matrix"

    def summary_lines(self, prepared: Any) -> list[str]:
        p = prepared
        line = (f"Explaining the prediction at position {p.position} (`{p.units[p.position]}`): "
                f"`{p.predicted_label}` with p = {p.info['predicted_prob']:.3f}.")
        return [line]

    def report_lines(self, prepared: Any) -> tuple[str, list[str]]:
        return f" · mask position {prepared.position}", []

    @property
    def view(self) -> AnalyzeView:
        return AnalyzeView(MLM_ABOUT, "Text with [MASK]", "Mask position (token index; blank = the first [MASK])",
                           "Target token (blank = prediction; #id for an id)", offers_samples=False)

    def handoff(self, selection: dict[str, Any], token: Any) -> dict[str, Any]:
        target_id = selection.get("target_id")
        value = f"#{target_id}" if target_id is not None else token
        pos = selection.get("target_position")
        out = {"text": selection.get("input", ""), "ids": None, "position": "" if pos is None else str(pos),
               "target": value, "note": f"explaining {token!r} at the [MASK] in position {pos} of the text below."}
        if target_id is not None:
            out["target_choice"] = (f"{token!r}  (token #{target_id})", value)
        return out


def prepare_mlm(bundle: Bundle, ids: list[int], position: int | None, target: Any,
                device: str | torch.device) -> Any:
    """A one-example query at a mask position of framed ids (blank position: the first [MASK])."""
    from playground.analysis.inputs import (  # loads the analyzer late
        Prepared,
        _resolve_token,
        special_id_set,
        token_label,
    )

    model, c, tok = bundle.model, bundle.model_config, bundle.tokenizer
    if any(not 0 <= i < c.vocab_size for i in ids) or not 0 < len(ids) <= c.block_size:
        raise PlaygroundError(f"Give 1 to {c.block_size} token ids in 0..{c.vocab_size - 1}.")
    if position is None or position == "":
        if c.mask_id not in ids:
            raise PlaygroundError("The text has no [MASK]: put one where a token should be predicted, or give a position.")
        pos = ids.index(c.mask_id)
    else:
        pos = int(position) + (len(ids) if int(position) < 0 else 0)
        if not 0 <= pos < len(ids):
            raise PlaygroundError(f"Position {position} is outside the {len(ids)} tokens (0..{len(ids) - 1}).")
    x = torch.tensor([ids], dtype=torch.long, device=device)  # [1,T]
    with torch.no_grad():
        logits = model(x)[0, pos].float()  # [V]
    predicted = int(logits.argmax())
    target_id = predicted if target is None or target == "" else _resolve_token(tok, target, c.vocab_size)
    specials = special_id_set(tok) | {c.pad_id, c.cls_id, c.sep_id, c.mask_id}
    special = torch.tensor([[i in specials for i in ids]], device=device)  # [1,T]
    family = bundle_family(bundle)
    query = Query(model, family.explainer.for_model(model), x, torch.tensor([target_id], device=device),
                  family.input_embedding(model), positions=torch.tensor([pos], device=device),
                  baselines=torch.where(special, x, c.mask_id), units_mask=~special, pad_id=c.pad_id)
    probs = logits.softmax(-1)
    units = [token_label(tok, i) for i in ids]
    return Prepared(family.name, family.kind, query, units, special[0].tolist(), [f"[MASK] at #{pos}"], 0, target_id,
                    token_label(tok, target_id), predicted, token_label(tok, predicted), pos, 0,
                    info={"target_prob": float(probs[target_id]), "predicted_prob": float(probs[predicted]),
                          "baseline_token": token_label(tok, c.mask_id), "baseline_id": c.mask_id, "n_tokens": len(ids)})


def bundle_family(bundle: Bundle) -> Any:
    """The bundle's family (function-level: the registry imports this module)."""
    from playground.families import get_family

    return get_family(bundle.family)


class BertClassifierExplainer(TextClassifierExplainer):
    """F = log p(class) from [CLS]; the units are the framed tokens, [CLS] (unit 0) included but never ranked."""

    jain_wallace_setting = False
    uniform_override = None

    def __init__(self) -> None:
        super().__init__("bert")
        self.unavailable = frozenset()

    def for_model(self, model: nn.Module) -> BertClassifierExplainer:
        return self

    def layer_count(self, config: Any) -> int:
        return int(config.n_layer)

    def explaining_maps(self, model: nn.Module) -> list[str]:
        return encoder_maps(model)

    def explained_rows(self, query: Query, attn: Tensor) -> Tensor:
        return attn[:, :, 0]  # [B,H,K]: the [CLS] row over every token

    def query_row(self, query: Query, b: int) -> int | None:
        return 0

    def cls_slot(self, query: Query) -> bool:
        return False  # [CLS] is an input unit here, not an extra slot

    def attention_keys(self, query: Query) -> int:
        return query.n_units

    def check_attention(self, query: Query, method: str) -> None:
        """Every attention method has its row (the [CLS] row)."""

    def loo_variants(self, query: Query, mode: str) -> tuple[Tensor, Tensor | None]:
        if mode == "replace":
            return replaced_tokens(query), None
        return deleted_tokens(query).flatten(0, 1), None

    def unit_mask(self, query: Query, mask: Any) -> np.ndarray:
        """A rationale over the text's words, shifted past [CLS] (the mask is already per unit)."""
        return np.asarray(mask.cpu() if isinstance(mask, Tensor) else mask, dtype=bool).reshape(-1)

    def probe_keys(self, query: Query) -> tuple[int, Tensor]:
        return 0, torch.arange(query.n_units, device=query.device)

    def visible_keys(self, query: Query, n_keys: int) -> Tensor:
        return (query.inputs[0] != query.pad_id)[:n_keys]

    def permutable_keys(self, query: Query, b: int, n_keys: int) -> Tensor:
        return query.units_mask[b][:n_keys].nonzero().flatten()  # type: ignore[index]

    def prepare(self, bundle: Bundle, spec: Any, sample: Any, device: str | torch.device) -> Any:
        text = sample.source if sample is not None else spec.text
        ids = framed_input(bundle.tokenizer, text or "", bundle.model_config)
        return prepare_bert_classifier(bundle, ids, spec.target, None if sample is None else sample.mask,
                                       None if sample is None else sample.true_label, text, device)

    def head_maps(self, prepared: Any, full: Tensor, window: int) -> tuple[Tensor, Tensor, list[str], list[str], str]:
        n = min(len(prepared.units), window)
        keys = prepared.units[:n]
        return full[:, :, :n, :n], entropy(full[:, :, 0]), keys, keys, "matrix"

    @property
    def view(self) -> AnalyzeView:
        return AnalyzeView(CLS_ABOUT, "Text", "Position (not used for classifiers)", "Target class (blank = predicted)")


def prepare_bert_classifier(bundle: Bundle, ids: list[int], target: Any, rationale: Any, true_label: int | None,
                            text: str, device: str | torch.device) -> Any:
    """A class query over framed ids; ``rationale`` [words] bool is shifted past [CLS] when the
    tokenizer reads the text word by word (else dropped: it would not line up)."""
    from playground.analysis.inputs import (  # loads the analyzer late
        Prepared,
        class_index,
        special_id_set,
        token_label,
    )

    model, c, tok = bundle.model, bundle.model_config, bundle.tokenizer
    x = torch.tensor([ids], dtype=torch.long, device=device)  # [1,T]
    with torch.no_grad():
        logits = model(x)[0].float()  # [C]
    names = bundle.class_names
    predicted = int(logits.argmax())
    target_id = predicted if target is None or target == "" else class_index(target, names, c.n_classes)
    name = (lambda i: names[i] if names and i < len(names) else f"class {i}")
    specials = special_id_set(tok) | {c.pad_id, c.cls_id, c.sep_id, c.mask_id}
    special = torch.tensor([[i in specials for i in ids]], device=device)  # [1,T]
    family = bundle_family(bundle)
    query = Query(model, family.explainer.for_model(model), x, torch.tensor([target_id], device=device),
                  family.input_embedding(model), baselines=torch.where(special, x, c.mask_id),
                  units_mask=~special, pad_id=c.pad_id)
    units = [token_label(tok, i) for i in ids]
    mask = None
    if rationale is not None:
        words = torch.as_tensor(np.asarray(rationale), dtype=torch.bool)
        if len(words) == len(ids) - 2:  # one token per word: the flags line up after [CLS]
            mask = torch.cat([words.new_zeros(1), words, words.new_zeros(1)])
    probs = logits.softmax(-1)
    return Prepared(family.name, family.kind, query, units, special[0].tolist(), [name(target_id)], 0, target_id,
                    name(target_id), predicted, name(predicted), mask=mask, true_label=true_label, source_text=text,
                    info={"target_prob": float(probs[target_id]), "predicted_prob": float(probs[predicted]),
                          "probs": {name(k): float(p) for k, p in enumerate(probs.tolist())},
                          "baseline_token": token_label(tok, c.mask_id), "baseline_id": c.mask_id,
                          "true_label": None if true_label is None else name(true_label),
                          "rationale_words": None if mask is None else [u for u, m in zip(units, mask.tolist()) if m]})
