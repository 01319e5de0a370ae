"""What explaining a text classifier's output means: log p(class) over the text's tokens.

F = log softmax(logits)[target] (the explained distribution is the class distribution, as in
J&W's ŷ). The units are the tokens; attributions are taken against the token embedding.

Attention: J&W encoders (BiLSTM / CNN / averaging) have one map, ``attention`` [B,1,1,T], the
learned query's weights over the encoder states: that row produces the output. The
transformer has ``blocks.{i}.attn``: with [CLS] pooling key 0 is the CLS slot and row 0
produces the output (as in ViT); with mean pooling no single row does. Each model gets the
variant of this explainer that fits it (:meth:`TextClassifierExplainer.for_model`).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import Tensor, nn

from playground.analysis.explain.attributions import deleted_tokens, replaced_tokens
from playground.analysis.explain.propagation import entropy
from playground.analysis.explainer import AnalyzeView, FamilyExplainer, log_prob
from playground.analysis.heads.batches import HeadBatches, chunks, labelled
from playground.analysis.query import Query
from playground.errors import PlaygroundError
from playground.models.attention import attention_modules

if TYPE_CHECKING:  # bundle imports the family registry, which imports this module
    from playground.bundle import Bundle

ABOUT = ("**Text classifier** · explains log p(class) over the text's tokens. Type a text (or pick a "
         "validation review: generated reviews carry their ground-truth rationale, the cue words that "
         "decide the label); the target is a class (blank = the prediction).")
JW_SKIPS = frozenset({"rollout", "flow", "relevancy"})  # one attention layer over encoder states: nothing to roll out
MEAN_POOL_SKIPS = frozenset({"flow", "norm", "attention_grad", "attention_grad_only"})  # need one query row


def variant_of(config: Any) -> str:
    """The explainer variant of a text classifier's config: "jw", "cls" or "mean"."""
    return "jw" if config.uses_attention_layer else config.pool


class TextClassifierExplainer(FamilyExplainer):
    """F = log p(target class); the units are the tokens (``query.inputs`` [B,T] ids).

    ``variant``: "family" (the registry's instance: nothing known about the model), "jw" (one
    attention layer over encoder states), "cls" or "mean" (transformer pooling).
    """

    kind = "classifier"
    jain_wallace_setting = True

    def head_data(self, payload: Any, n: int, seed: int, batch_size: int, device: str) -> HeadBatches:
        """The first ``n`` validation reviews (padded per batch) and their labels."""
        parts = chunks(min(n, len(payload.val_ids)), batch_size)
        return labelled([payload.collate(payload.val_ids[s]).to(device) for s in parts],
                        [payload.val_labels[s].to(device) for s in parts])
    output_name = "class distribution"
    adversarial_epsilon = 0.01
    uniform_override = {"model.uniform_attention": True}
    label_shuffle_override = {"data.shuffle_labels": True}  # its presets train in a few hundred steps
    truth_terms = {"set": "generated reviews", "truth": "the rationale", "unit": "token", "inputs": "reviews",
                   "defines": "the cue words that decide the label (known rationales)"}

    def __init__(self, variant: str = "family") -> None:
        self.variant = variant
        self.unavailable = {"jw": JW_SKIPS, "mean": MEAN_POOL_SKIPS}.get(variant, frozenset())

    def for_model(self, model: nn.Module) -> TextClassifierExplainer:
        """The variant that fits ``model`` (J&W attention layer, or transformer CLS / mean pooling)."""
        return TextClassifierExplainer(variant_of(model.config))

    def unavailable_for(self, config: Any) -> frozenset[str]:
        """A J&W model has one attention layer (nothing to roll out); mean pooling has no query row."""
        return frozenset(TextClassifierExplainer(variant_of(config)).unavailable)

    # -- F -------------------------------------------------------------------------------
    def check(self, query: Query) -> None:
        """A classifier needs no positions."""

    def forward_args(self, query: Query) -> tuple[Tensor, ...]:
        return (query.targets,)

    def score_fn(self, query: Query) -> Callable[..., Tensor]:
        model = query.model

        def f_text(ids: Tensor, targets: Tensor) -> Tensor:
            return log_prob(model(ids), targets)  # [B]
        return f_text

    def output_rows(self, query: Query, inputs: Tensor, positions: Tensor | None, decoder_inputs: Tensor | None,
                    last_only: bool) -> Tensor:
        return query.model(inputs)  # [N,C]

    def layer_count(self, config: Any) -> int:
        return int(config.n_layer) if config.encoder == "transformer" else 2

    # -- attention -----------------------------------------------------------------------
    def explaining_maps(self, model: nn.Module) -> list[str]:
        names = list(attention_modules(model))
        return [n for n in names if n == "attention"] or [n for n in names if n.startswith("blocks.")]

    def explained_rows(self, query: Query, attn: Tensor) -> Tensor:
        if self.variant == "jw":
            return attn[:, :, 0]  # [B,1,T]: the learned query's row
        if self.variant == "cls":
            return attn[:, :, 0, 1:]  # the CLS row over the tokens
        return attn.mean(dim=2)  # mean pooling: every token row counts equally

    def query_row(self, query: Query, b: int) -> int | None:
        return None if self.variant == "mean" else 0

    def cls_slot(self, query: Query) -> bool:
        return self.variant == "cls"

    def attention_keys(self, query: Query) -> int:
        return query.n_units + (self.variant == "cls")

    def check_attention(self, query: Query, method: str) -> None:
        if self.variant == "jw" and method in JW_SKIPS:
            raise PlaygroundError(f"{method}: this model has one attention layer over its encoder states "
                                  "(no self-attention stack to propagate through); use 'attention'.")
        if self.variant == "mean" and method in ("flow", "norm"):
            raise PlaygroundError(f"{method} needs one query row; this transformer pools by mean (use rollout).")

    # -- leave-one-out and erasure ---------------------------------------------------------
    def loo_variants(self, query: Query, mode: str) -> tuple[Tensor, Tensor | None]:
        if mode == "replace":
            return replaced_tokens(query), None  # the token's embedding zeroed and unattended (pad)
        return deleted_tokens(query).flatten(0, 1), None  # J&W: the token removed, the rest shifted left

    def skipped_methods(self, query: Query) -> set[str]:
        return set(self.unavailable)

    def unit_mask(self, query: Query, mask: Any) -> np.ndarray:
        """A rationale is already one flag per token."""
        return np.asarray(mask.cpu() if isinstance(mask, Tensor) else mask, dtype=bool).reshape(-1)

    # -- the probe: the explaining row -----------------------------------------------------
    def probe_keys(self, query: Query) -> tuple[int, Tensor]:
        if self.variant == "mean":
            raise PlaygroundError("This transformer pools by averaging (pool='mean'), so no single attention row "
                                  "produces its output; the attention experiments need pool='cls' or a J&W encoder.")
        start = -1 if self.variant == "cls" else 0
        return 0, torch.arange(start, query.n_units, device=query.device)  # key 0 is CLS for "cls"

    def visible_keys(self, query: Query, n_keys: int) -> Tensor:
        real = query.inputs[0] != query.pad_id  # [T] padding is masked
        if self.variant == "cls":
            real = torch.cat([real.new_ones(1), real])
        return real[:n_keys]

    def probe_logits(self, query: Query, row: int, prefix: Any, n: int) -> Tensor:
        return query.model(query.inputs.expand(n, -1))  # [n,C]

    def permutable_keys(self, query: Query, b: int, n_keys: int) -> Tensor:
        keys = query.units_mask[b].nonzero().flatten()  # type: ignore[index]
        return keys + (1 if self.variant == "cls" else 0)  # the CLS key stays put

    # -- per input -----------------------------------------------------------------------
    def prepare(self, bundle: Bundle, spec: Any, sample: Any, device: str | torch.device) -> Any:
        # inputs asks playground.families, which imports this module: imported here, not at the top
        from playground.analysis.inputs import prepare_text_classifier

        text = sample.source if sample is not None else spec.text
        if not text or not str(text).strip():
            raise PlaygroundError("Type a text to classify (or pick a validation review).")
        return prepare_text_classifier(bundle.model, bundle.tokenizer, text, spec.target, bundle.class_names,
                                       rationale=None if sample is None else sample.mask,
                                       true_label=None if sample is None else sample.true_label,
                                       family=bundle.family, device=device)

    def head_maps(self, prepared: Any, full: Tensor, window: int) -> tuple[Tensor, Tensor, list[str], list[str], str]:
        units = prepared.units
        if self.variant == "jw":
            return full, entropy(full[:, :, 0]), ["query"], units, "matrix"  # [1,1,1,T]
        keys = (["[CLS]"] if self.variant == "cls" else []) + units
        row = full[:, :, 0] if self.variant == "cls" else full.mean(2)  # [L,H,K]
        n = min(len(keys), window)
        return full[:, :, :n, :n], entropy(row), keys[:n], keys[:n], "matrix"

    def importance_chart(self, result: Any) -> Any:
        from playground.charts.analysis import token_strips_chart  # plotting loads late (start-up time)

        return token_strips_chart(result.to_frame(), 0, {m for m, s in result.signed.items() if s})

    def summary_lines(self, prepared: Any) -> list[str]:
        lines = []
        if prepared.info.get("true_label"):
            lines.append(f"True class of the review: `{prepared.info['true_label']}`.")
        if prepared.info.get("rationale_words"):
            lines.append("Ground-truth rationale (the cue words that decide the label): "
                         + ", ".join(f"`{w}`" for w in prepared.info["rationale_words"]) + ".")
        return lines

    def report_lines(self, prepared: Any) -> tuple[str, list[str]]:
        words = prepared.info.get("rationale_words")
        return "", [f"rationale: {' '.join(words)}"] if words else []

    @property
    def view(self) -> AnalyzeView:
        return AnalyzeView(ABOUT, "Text", "Position (not used for classifiers)", "Target class (blank = predicted)")

    def handoff(self, selection: dict[str, Any], token: Any) -> dict[str, Any]:
        k = selection.get("target_position")
        name = token if token not in (None, "") else (str(k) if k is not None else None)
        return dict(text=selection.get("input", ""), position="", target=name,
                    note=f"explaining class `{name}` of the text below.")
