"""What explaining a language model's output means: log p(target) of the next token after a
query position, over the prompt's tokens."""
from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor, nn

from playground.analysis.explain.attributions import deleted_tokens, prefix_cached_logits, replaced_tokens
from playground.analysis.explain.propagation import entropy
from playground.analysis.explainer import AnalyzeView, FamilyExplainer, log_prob
from playground.analysis.heads.batches import HeadBatches, lm_windows
from playground.analysis.query import Query
from playground.errors import PlaygroundError
from playground.models.attention import attention_modules, needs_explicit

if TYPE_CHECKING:  # bundle imports the family registry, which imports this module
    from playground.bundle import Bundle

ABOUT = ("**GPT** · explains the next token after the query position. Type a prompt; the position "
         "is a token index (blank = the last token, negative counts from the end); the target is a token "
         "(blank = the model's prediction, `#id` for an id).")


def _accepts(model: nn.Module, name: str) -> bool:
    try:
        return name in inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return False


def lm_rows(model: nn.Module, ids: Tensor, positions: Tensor, last_only: bool) -> Tensor:
    """Logits at each example's position: [B,T] ids -> [B,V]."""
    if last_only:
        return model(ids, last_only=True)[:, -1]  # [B,V]
    logits = model(ids)  # [B,T,V]
    return logits[torch.arange(ids.shape[0], device=ids.device), positions]


class LMExplainer(FamilyExplainer):
    """F = log softmax(logits[position])[target]; the units are the tokens up to the query."""

    kind = "lm"
    induction = True

    def head_data(self, payload: Any, n: int, seed: int, batch_size: int, device: str) -> HeadBatches | None:
        """Seeded windows of the validation text (a payload without them, as the pixel model's: None)."""
        if not hasattr(payload, "windows"):
            return None
        return lm_windows(payload, n, seed, batch_size, device)
    output_name = "next-token distribution"
    uniform_override = {"model.uniform_attention": True}

    # -- F -------------------------------------------------------------------------------
    def last_only(self, query: Query) -> bool:
        T = query.inputs.shape[1]
        return bool((query.positions == T - 1).all()) and _accepts(query.model, "last_only")

    def forward_args(self, query: Query) -> tuple[Tensor, ...]:
        return (query.positions, query.targets)  # type: ignore[return-value]

    def score_fn(self, query: Query) -> Callable[..., Tensor]:
        model, last_only = query.model, query.last_only

        def f_lm(ids: Tensor, positions: Tensor, targets: Tensor) -> Tensor:
            return log_prob(lm_rows(model, ids, positions, last_only), targets)
        return f_lm

    def output_rows(self, query: Query, inputs: Tensor, positions: Tensor | None, decoder_inputs: Tensor | None,
                    last_only: bool) -> Tensor:
        return lm_rows(query.model, inputs, positions, last_only)  # type: ignore[arg-type]

    # -- attention -----------------------------------------------------------------------
    def explaining_maps(self, model: nn.Module) -> list[str]:
        return [n for n in attention_modules(model) if n.startswith("blocks.")]

    # -- leave-one-out -------------------------------------------------------------------
    def loo_variants(self, query: Query, mode: str) -> tuple[Tensor, Tensor | None]:
        B, U = query.batch_size, query.n_units
        if mode == "replace":
            return replaced_tokens(query), query.positions.repeat(U)  # type: ignore[union-attr]
        out = deleted_tokens(query)  # [U,B,T]
        t_idx = torch.arange(U, device=query.device)
        pos = query.positions[None, :].expand(U, B)  # type: ignore[index]
        new_pos = pos - (t_idx[:, None] <= pos).long()  # deleting the query itself: the token before it
        if (new_pos < 0).any():  # deleting the only visible token: fall back to replacement there
            bad = (new_pos < 0)
            out = torch.where(bad[..., None], replaced_tokens(query).view(out.shape), out)
            new_pos = new_pos.clamp_min(0)
        return out.flatten(0, 1), new_pos.flatten()

    def loo_logits(self, query: Query, variants: Tensor,
                   positions: Tensor | None) -> Iterator[tuple[Tensor, Tensor]] | None:
        """Each variant recomputed from its first changed token on top of the unchanged prefix's
        KV cache (:func:`prefix_cached_logits`); None for a model without a cache, or while an
        attention record/override is open on it (those see every query row)."""
        model = query.model
        if positions is None or not (hasattr(model, "new_cache") and _accepts(model, "cache")):
            return None
        if any(needs_explicit(m) for m in attention_modules(model).values()):
            return None
        return prefix_cached_logits(model, query.inputs, variants, positions)

    def reachable_units(self, query: Query, b: int = 0) -> Tensor:
        mask = super().reachable_units(query, b)
        mask[int(query.positions[b]) + 1 :] = False  # type: ignore[index]  # after the query: invisible
        return mask

    # -- the probe -----------------------------------------------------------------------
    def probe_keys(self, query: Query) -> tuple[int, Tensor]:
        row = int(query.positions[0])  # type: ignore[index]
        return row, torch.arange(row + 1, device=query.device)  # keys 0..row (later tokens cannot matter)

    def probe_prefix(self, query: Query, row: int) -> Any:
        model = query.model
        if row == 0 or not hasattr(model, "new_cache"):
            return None
        cache = model.new_cache()
        model(query.inputs[:, :row], cache=cache)
        return cache

    def probe_logits(self, query: Query, row: int, prefix: Any, n: int) -> Tensor:
        ids = query.inputs[:, : row + 1]  # [1,row+1]
        if prefix is not None:
            return query.model(ids[:, row:].expand(n, 1), cache=prefix)[:, -1]  # [n,V]
        return query.model(ids.expand(n, -1))[:, row]

    def permutable_keys(self, query: Query, b: int, n_keys: int) -> Tensor:
        return self.reachable_units(query, b).nonzero().flatten()

    # -- per input -----------------------------------------------------------------------
    def prepare(self, bundle: Bundle, spec: Any, sample: Any, device: str | torch.device) -> Any:
        # inputs asks playground.families, which imports this module: imported here, not at the top
        from playground.analysis.inputs import prepare_lm

        if spec.text is None and spec.ids is None:
            raise PlaygroundError("Type a text prompt to analyse.")
        return prepare_lm(bundle.model, bundle.tokenizer, spec.text or "", spec.position, spec.target, bundle.family,
                          device, ids=spec.ids)

    def head_maps(self, prepared: Any, full: Tensor, window: int) -> tuple[Tensor, Tensor, list[str], list[str], str]:
        pos = int(prepared.query.positions[prepared.selected])
        lo = max(0, pos + 1 - window)
        labels = prepared.units[lo:pos + 1]
        return full[:, :, lo:pos + 1, lo:pos + 1], entropy(full[:, :, pos]), labels, labels, "matrix"

    def importance_chart(self, result: Any) -> Any:
        from playground.charts.analysis import token_strips_chart  # plotting loads late (start-up time)

        return token_strips_chart(result.to_frame(), 0, {m for m, s in result.signed.items() if s})

    def summary_lines(self, prepared: Any) -> list[str]:
        p = prepared
        return [f"Explaining the token after position {p.position + p.offset} (`{p.units[p.position]}`)"
                + (f"; the first {p.offset} tokens were cropped to fit the context" if p.offset else "") + "."]

    def report_lines(self, prepared: Any) -> tuple[str, list[str]]:
        return f" · query position {prepared.position + prepared.offset}", []

    @property
    def view(self) -> AnalyzeView:
        return AnalyzeView(ABOUT, "Text prompt", "Query position (token index; blank = last)",
                           "Target token (blank = prediction; #id for an id)", offers_samples=False)

    def handoff(self, selection: dict[str, Any], token: Any) -> dict[str, Any]:
        pos = selection.get("target_position")
        ids = selection.get("input_ids")
        if ids is not None and pos is not None:
            ids = list(ids)[: int(pos)]
        text = selection.get("context")
        text = text if text is not None else selection.get("input", "")
        target_id = selection.get("target_id")
        shown = repr(token) if token is not None else f"#{target_id}"
        value = f"#{target_id}" if target_id is not None else token
        out = dict(text=text, ids=ids or None, position="", target=value, note=f"explaining the next token {shown} "
                   "after the text below (its last token is the query).")
        if target_id is not None:
            out["target_choice"] = (f"{shown}  (token #{target_id})", value)
        return out
