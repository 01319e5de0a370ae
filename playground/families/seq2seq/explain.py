"""What explaining a sequence-to-sequence model's output means: log p(y_t | y_<t, x) of a
teacher-forced output step over the source tokens, read through the decoder's cross-attention
(Transformer) or its one Bahdanau/Luong attention (RNN)."""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor, nn

from playground.analysis.explain.attributions import deleted_tokens, replaced_tokens
from playground.analysis.explain.propagation import entropy
from playground.analysis.explainer import AnalyzeView, FamilyExplainer, log_prob
from playground.analysis.heads.batches import HeadBatches, seq2seq_pairs
from playground.analysis.query import Query
from playground.errors import PlaygroundError
from playground.models.attention import attention_modules

if TYPE_CHECKING:  # bundle imports the family registry, which imports this module
    from playground.bundle import Bundle

ABOUT = ("**seq2seq** · the model's own greedy output, teacher-forced; every output token is a row. "
         "Type a source sentence (or pick a validation pair); the position picks the output step "
         "shown in the per-token views (blank = 0).")


class Seq2SeqExplainer(FamilyExplainer):
    """F = log p(y_t) with the decoder teacher-forced on ``query.decoder_inputs``; the units are the source tokens.

    unavailable: the per-input methods this model cannot compute (flow and relevancy need one
        self-attention stack; the RNN has no self-attention to roll out either).
    layer_fields: the config fields whose sum is the layers one forward runs.
    uniform_override: the preset override that trains it with frozen uniform attention.
    """

    kind = "seq2seq"
    output_name = "output-token distribution"
    through_cross_attention = True

    def head_data(self, payload: Any, n: int, seed: int, batch_size: int, device: str) -> HeadBatches:
        """The first ``n`` validation pairs, teacher-forced."""
        return seq2seq_pairs(payload, n, batch_size, device)

    def __init__(self, unavailable: set[str], layer_fields: tuple[str, ...],
                 uniform_override: dict[str, Any] | None = None) -> None:
        self.unavailable = frozenset(unavailable)
        self.layer_fields = layer_fields
        self.uniform_override = uniform_override

    # -- F -------------------------------------------------------------------------------
    def check(self, query: Query) -> None:
        super().check(query)
        if query.decoder_inputs is None:
            raise ValueError("seq2seq queries need decoder_inputs [B,T_out]")

    def forward_args(self, query: Query) -> tuple[Tensor, ...]:
        return (query.decoder_inputs, query.positions, query.targets)  # type: ignore[return-value]

    def score_fn(self, query: Query) -> Callable[..., Tensor]:
        model = query.model

        def f_s2s(src: Tensor, tgt_in: Tensor, positions: Tensor, targets: Tensor) -> Tensor:
            logits = model(src, tgt_in)  # [B,T,V]
            rows = logits[torch.arange(src.shape[0], device=src.device), positions]  # [B,V]
            return log_prob(rows, targets)
        return f_s2s

    def output_rows(self, query: Query, inputs: Tensor, positions: Tensor | None, decoder_inputs: Tensor | None,
                    last_only: bool) -> Tensor:
        logits = query.model(inputs, decoder_inputs)  # [N,T,V]
        return logits[torch.arange(inputs.shape[0], device=inputs.device), positions]

    def layer_count(self, config: Any) -> int:
        return sum(int(getattr(config, f)) for f in self.layer_fields)

    # -- attention: cross-attention over the source --------------------------------------------
    def explaining_maps(self, model: nn.Module) -> list[str]:
        names = list(attention_modules(model))
        cross = [n for n in names if n.endswith("cross_attn")]
        return cross or [n for n in names if n == "decoder.attention"]

    def input_self_maps(self, model: nn.Module) -> list[str]:
        """The encoder's self-attention maps (none for the RNN)."""
        return [n for n in attention_modules(model) if n.startswith("encoder.")]

    def check_attention(self, query: Query, method: str) -> None:
        if method == "flow":
            raise PlaygroundError("Attention flow is offered for GPT and ViT (one self-attention stack); use rollout here.")
        if method == "relevancy":
            raise PlaygroundError("Gradient-weighted relevancy is offered for GPT and ViT; use IG for seq2seq models.")

    # -- leave-one-out -------------------------------------------------------------------
    def loo_variants(self, query: Query, mode: str) -> tuple[Tensor, Tensor | None]:
        U = query.n_units
        out = replaced_tokens(query) if mode == "replace" else deleted_tokens(query).flatten(0, 1)
        return out, query.positions.repeat(U)  # type: ignore[union-attr]

    # -- the probe: one decoder step -------------------------------------------------------
    def probe_keys(self, query: Query) -> tuple[int, Tensor]:
        return int(query.positions[0]), torch.arange(int(query.inputs.shape[1]), device=query.device)  # type: ignore[index]

    def visible_keys(self, query: Query, n_keys: int) -> Tensor:
        return query.inputs[0] != query.pad_id  # [S] padding is masked

    def probe_prefix(self, query: Query, row: int) -> Any:
        model = query.model
        if not (hasattr(model, "start") and hasattr(model, "step")):
            return None
        state = model.start(query.inputs)
        for t in range(row):
            _, _, state = model.step(state, query.decoder_inputs[:, t])  # type: ignore[index]
        return state

    def probe_logits(self, query: Query, row: int, prefix: Any, n: int) -> Tensor:
        dec = query.decoder_inputs
        if prefix is not None:
            logits, _, _ = query.model.step(prefix, dec[:, row].expand(n))  # type: ignore[index]
            return logits
        src = query.inputs.expand(n, -1)
        return query.model(src, dec[:, : row + 1].expand(n, -1))[:, row]  # type: ignore[index]

    # -- per input -----------------------------------------------------------------------
    def prepare(self, bundle: Bundle, spec: Any, sample: Any, device: str | torch.device) -> Any:
        # inputs asks playground.families, which imports this module: imported here, not at the top
        from playground.analysis.inputs import prepare_seq2seq

        source = sample.source if sample is not None else spec.text
        if not source:
            raise PlaygroundError("Type a source sentence (or pick a validation pair).")
        gold = None
        prepared = prepare_seq2seq(bundle.model, bundle.tokenizer, source, spec.position, family=bundle.family,
                                   device=device, output_ids=None if sample is not None else spec.output_ids)
        if sample is not None and sample.reference is not None:
            ref = bundle.tokenizer.encode(sample.reference, add_special_tokens=False).ids
            out_ids = prepared.query.targets.tolist()[:-1]
            if out_ids == ref:
                gold = sample.alignment
            else:
                prepared.info["alignment_note"] = ("the model's output differs from the reference, so the gold "
                                                   "alignment does not apply")
            prepared.info["reference"] = sample.reference
        prepared.gold_alignment = gold
        return prepared

    def head_maps(self, prepared: Any, full: Tensor, window: int) -> tuple[Tensor, Tensor, list[str], list[str], str]:
        ent = entropy(full[:, :, prepared.selected])  # [L,H] at the selected output step
        return full, ent, prepared.rows, prepared.units, "matrix"

    def importance_chart(self, result: Any) -> Any:
        from playground.charts.analysis import matrices_chart  # plotting loads late (start-up time)

        return matrices_chart(result.to_frame())

    def summary_lines(self, prepared: Any) -> list[str]:
        p = prepared
        lines = [f"Output: `{p.info.get('output', '')}` · rows = output tokens; the agreement table uses step "
                 f"{p.selected} (`{p.rows[p.selected]}`)."]
        if p.info.get("reference"):
            lines.append(f"Reference: `{p.info['reference']}`" + (f" ({p.info['alignment_note']})"
                                                                  if p.info.get("alignment_note") else ""))
        return lines

    def report_lines(self, prepared: Any) -> tuple[str, list[str]]:
        p = prepared
        return "", [f"output: {p.info.get('output', '')!r} · explaining output step {p.selected} ({p.rows[p.selected]!r})"]

    @property
    def view(self) -> AnalyzeView:
        return AnalyzeView(ABOUT, "Source sentence", "Output step (blank = 0)",
                           "Target token (blank = prediction; #id for an id)", picks_target=False)

    def handoff(self, selection: dict[str, Any], token: Any) -> dict[str, Any]:
        step = selection.get("target_position")
        return dict(text=selection.get("input", ""), output_ids=selection.get("output_ids"),
                    position=str(step) if step is not None else "", target=None,
                    note=f"explaining output token {token!r} (output step {step}) of this source; the rows are every "
                         "output token.")
