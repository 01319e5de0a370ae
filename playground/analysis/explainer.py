"""What "explain this output" means for a model family: the contract the analyzer asks
(``get_family(name).explainer``, or ``query.explainer`` for a :class:`~playground.analysis.query.Query`).

Each family holds one :class:`FamilyExplainer` (``playground/families/<family>/explain.py``),
one class per task:

- a language model explains log p(target) at a query position over the prompt's tokens;
- an image classifier explains a class logit over the image's patches (its attention maps
  carry a CLS key before the patches, or it pools by mean and has no single explaining row);
- a sequence-to-sequence model explains log p(y_t | y_<t, x) of a teacher-forced output step
  over the source tokens, read through the decoder's cross-attention.

The analyzer's methods (attention views, captum attributions, the experiments' probe, the
Analyze tab and CLI) never compare family names or kinds: they call these methods.
Tensor shapes: B examples, U input units, K attention keys, H heads, V outputs.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import Tensor, nn

from playground.analysis.divergences import wide

if TYPE_CHECKING:  # bundle imports the family registry, which imports this module
    from playground.bundle import Bundle

if TYPE_CHECKING:  # annotations only: these modules import the query, which names this contract
    from playground.analysis.explain.per_input import InputAnalysis, InputSpec
    from playground.analysis.inputs import Prepared
    from playground.analysis.query import Query
    from playground.data.examples import AnalysisExample


class FamilyExplainer(ABC):
    """The per-family part of the analyzer.

    The defaults fit a model whose input units are tokens ([B,T] ids) and whose output is read
    at ``query.positions``; the classifier overrides what differs for patches. Subclasses fill
    in every abstract method.
    """

    kind: str  # the task, as results and exports record it ("lm", "classifier", "seq2seq")
    output_name: str = "output distribution"  # how verdicts name the explained distribution
    adversarial_epsilon: float = 0.05  # default ε (TVD) of the Jain & Wallace adversarial search
    unavailable: frozenset[str] = frozenset()  # per-input methods this family cannot compute
    through_cross_attention: bool = False  # the output reads the input through cross-attention (not one self-attention stack)
    reads_images: bool = False  # the input units are image patches (pointing game, image box)
    uniform_override: dict[str, Any] | None = None  # preset override that trains it with frozen uniform attention
    # Adebayo's data-label randomisation: the preset override that retrains it on shuffled training labels
    # (None: its targets are no labels to permute, or a retrain takes too long), and that retrain's step cap
    # (None: the preset's max_steps, already short)
    label_shuffle_override: dict[str, Any] | None = None
    quick_retrain_steps: int | None = None
    # how the pointing game / plausibility names its ground truth (vit-shapes' object masks by default)
    truth_terms: dict[str, str] = {"set": "vit-shapes", "truth": "the object", "unit": "patch", "inputs": "images",
                                   "defines": "the object that defines the class (known masks)"}

    induction: bool = False  # a causal LM: head analysis scores induction heads on repeated random tokens
    jain_wallace_setting: bool = False  # the kind of model J&W's Table 2 measured (text classifiers)

    def head_data(self, payload: Any, n: int, seed: int, batch_size: int, device: str) -> Any:
        """Head analysis's evaluation batches from the prepared data ``payload`` (up to ``n``
        examples): a `playground.analysis.heads.batches` builder's (HeadData, inputs); None where
        the family has no multi-head attention to analyse."""
        return None

    def for_model(self, model: nn.Module) -> FamilyExplainer:
        """The explainer to put in a Query for ``model`` (a family whose models differ in structure
        returns the variant that fits this one); by default itself."""
        return self

    def unavailable_for(self, config: Any) -> frozenset[str]:
        """The per-input methods a model of this config cannot compute, known without building it
        (what the Analyze tab leaves out of its choices); by default the family's."""
        return frozenset(self.unavailable)

    # -- the scalar F and the explained output -------------------------------------------
    def check(self, query: Query) -> None:
        """Raise ValueError when ``query`` lacks what this family's F needs (positions, decoder inputs)."""
        B = query.batch_size
        if query.positions is None or query.positions.shape != (B,):
            raise ValueError(f"{self.kind} queries need positions [B] = [{B}]")

    def last_only(self, query: Query) -> bool:
        """Whether every explained position is the last one and the model can compute only that row."""
        return False

    def n_units(self, query: Query) -> int:
        """Input units per example (tokens or source tokens; patches for images)."""
        return int(query.inputs.shape[1])

    @abstractmethod
    def forward_args(self, query: Query) -> tuple[Tensor, ...]:
        """Arguments of :meth:`score_fn` after the inputs (captum's additional_forward_args)."""

    @abstractmethod
    def score_fn(self, query: Query) -> Callable[..., Tensor]:
        """F as ``f(inputs, *forward_args(query)) -> [B]`` (what captum wraps)."""

    @abstractmethod
    def output_rows(self, query: Query, inputs: Tensor, positions: Tensor | None, decoder_inputs: Tensor | None,
                    last_only: bool) -> Tensor:
        """The explained logits [N,V] of N inputs, each read at its position with its decoder input."""

    # -- attention -------------------------------------------------------------------------
    @abstractmethod
    def explaining_maps(self, model: nn.Module) -> list[str]:
        """Names of the attention maps whose query rows look at the input units, first layer first."""

    def input_self_maps(self, model: nn.Module) -> list[str]:
        """Names of the self-attention maps among the input units, first layer first (what a
        rollout through the input side multiplies); by default the explaining maps themselves."""
        return self.explaining_maps(model)

    def explained_rows(self, query: Query, attn: Tensor) -> Tensor:
        """The row of each example's map that produces its output: [B,H,Q,K] -> [B,H,U]."""
        idx = torch.arange(attn.shape[0], device=attn.device)
        return attn[idx, :, query.positions]  # [B,H,K]

    def query_row(self, query: Query, b: int) -> int | None:
        """The attention row that produces example b's output (None: no single row, e.g. mean pooling)."""
        return int(query.positions[b])  # type: ignore[index]

    def cls_slot(self, query: Query) -> bool:
        """Whether key 0 of every explaining map is a CLS slot rather than an input unit."""
        return False

    def attention_keys(self, query: Query) -> int:
        """Keys of an explaining map per example (what attention flow's size cap counts)."""
        return query.n_units

    def layer_units(self, query: Query, attr: Tensor) -> Tensor:
        """An embedding layer's per-slot values [B,T,D] -> the input units' [B,U,D]."""
        return attr

    def layer_count(self, config: Any) -> int:
        """Layers one forward runs (how attributions size their chunks); 4 when the config does not say."""
        return getattr(config, "n_layer", None) or 4

    def check_attention(self, query: Query, method: str) -> None:  # noqa: B027 - an optional hook: by default every method can be read
        """Raise PlaygroundError when an attention ``method`` ("flow", "norm", "relevancy") cannot
        be read for this query (e.g. no single explaining row)."""

    # -- leave-one-out and erasure -------------------------------------------------------
    def loo_mode(self, mode: str) -> str:
        """The leave-one-out mode actually used ("delete" needs units that can be removed)."""
        return mode

    @abstractmethod
    def loo_variants(self, query: Query, mode: str) -> tuple[Tensor, Tensor | None]:
        """Every single-unit perturbation, unit-major (rows t·B + b): (inputs [U·B,...], positions [U·B] or None)."""

    def loo_logits(self, query: Query, variants: Tensor,
                   positions: Tensor | None) -> Iterator[tuple[Tensor, Tensor]] | None:
        """The explained logits of :meth:`loo_variants`' rows computed faster than one whole
        forward each, as (row indices [n], logits [n,V]) chunks; None (the default): the caller
        runs every variant through :meth:`output_rows`."""
        return None

    def erase_units(self, query: Query, keep: Tensor) -> Tensor:
        """Inputs [N,...] of a one-example query where unit u of row n is kept if keep[n,u], else the baseline."""
        N = keep.shape[0]
        return torch.where(keep, query.inputs.expand(N, -1), query.baselines.expand(N, -1))  # type: ignore[union-attr]

    def reachable_units(self, query: Query, b: int = 0) -> Tensor:
        """Units of example b that are real and can reach its output, [U] bool."""
        return query.units_mask[b].to(torch.bool).clone()  # type: ignore[index]

    def skipped_methods(self, query: Query) -> set[str]:
        """Importance methods the experiments skip for this query's model."""
        return set(self.unavailable)

    def unit_mask(self, query: Query, mask: Any) -> np.ndarray:
        """A ground-truth mask (vit-shapes' object pixels [H,W], a review's rationale tokens [T]) as
        one bool per input unit [U], for the pointing game / plausibility; ValueError without one."""
        raise ValueError(f"{self.kind} models have no ground-truth masks over their input units")

    # -- the experiments' probe (one example, one explained row) ----------------------------
    @abstractmethod
    def probe_keys(self, query: Query) -> tuple[int, Tensor]:
        """(explained row, key_units [K]): each key's input unit (-1 for a CLS key) for a one-example query."""

    def visible_keys(self, query: Query, n_keys: int) -> Tensor:
        """Keys [K] the explained row can see by structure (masked padding is not)."""
        return torch.ones(n_keys, dtype=torch.bool, device=query.device)

    def probe_prefix(self, query: Query, row: int) -> Any:
        """Run everything before the explained row once (batch 1) for :meth:`probe_logits`; None: nothing to reuse."""
        return None

    @abstractmethod
    def probe_logits(self, query: Query, row: int, prefix: Any, n: int) -> Tensor:
        """The explained logits [n,V] of the one example repeated n times (inside any open override);
        ``prefix`` is :meth:`probe_prefix`'s state already repeated n times (or None)."""

    def permutable_keys(self, query: Query, b: int, n_keys: int) -> Tensor:
        """Key indices of example b that a permutation test shuffles among themselves (real, visible units)."""
        return query.units_mask[b][:n_keys].nonzero().flatten()  # type: ignore[index]

    # -- per input: Analyze tab and CLI ------------------------------------------------------
    @abstractmethod
    def prepare(self, bundle: Bundle, spec: InputSpec, sample: AnalysisExample | None,
                device: str | torch.device) -> Prepared:
        """A Prepared query from a bundle, the raw input and a picked validation sample (or None)."""

    @abstractmethod
    def head_maps(self, prepared: Prepared, full: Tensor, window: int) -> tuple[Tensor, Tensor, list[str], list[str], str]:
        """The layer x head grid from every explaining map of the selected example [L,H,Q,K]:
        (maps, entropy [L,H], query labels, key labels, layout "matrix" | "grid")."""

    @abstractmethod
    def importance_chart(self, result: InputAnalysis) -> Any:
        """The side-by-side chart of every method's importances over the input."""

    def summary_lines(self, prepared: Prepared) -> list[str]:
        """Markdown lines the Analyze tab adds under the target line."""
        return []

    def report_lines(self, prepared: Prepared) -> tuple[str, list[str]]:
        """What the CLI report adds: (a suffix of its first line, lines after it)."""
        return "", []

    @property
    @abstractmethod
    def view(self) -> AnalyzeView:
        """How the Analyze tab's controls read for this family."""

    @abstractmethod
    def handoff(self, selection: dict[str, Any], token: Any) -> dict[str, Any]:
        """The Analyze tab's input and target from a target picked in the Generate tab
        (text, ids or image; position; target; a note naming the target)."""


@dataclass(frozen=True)
class AnalyzeView:
    """How the Analyze tab reads for a family (plain data; the tab turns it into updates).

    about: the paragraph above the inputs. reads_image: an image box instead of the text box.
    text_label / position_label: the labels of the text box and the position box.
    target_label: the target picker's label; picks_target: whether it is shown (seq2seq: the
        rows are every output token, so there is nothing to pick).
    offers_samples: validation samples can be picked (an LM's input is typed text).
    """

    about: str
    text_label: str
    position_label: str
    target_label: str
    reads_image: bool = False
    picks_target: bool = True
    offers_samples: bool = True


def log_prob(rows: Tensor, targets: Tensor) -> Tensor:
    """log softmax(rows)[target] per row: [B,V], [B] -> [B]."""
    return wide(rows).log_softmax(-1).gather(1, targets[:, None])[:, 0]  # [B] (float64 stays float64)
