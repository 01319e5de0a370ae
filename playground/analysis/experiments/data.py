"""Held-out examples for the dataset-level experiments.

From a checkpoint bundle written by the trainer, the validation split is rebuilt with the
trainer's own family adapter (same data config, seed, split and tokenizer), and the family's
examples (``get_family(name).examples.held_out``) draw N of them with a seeded generator.
Each becomes a one-example :class:`Query`:

- GPT: a validation window of ``block_size`` tokens; the explained output is the next token
  after its last position (the model's prediction); gold = the true next token.
- ViT: a validation image; explained output = the predicted class; gold = the label; the
  object mask rides along for vit-shapes (pointing game).
- text classifier: a validation text; explained output = the predicted class; gold = the
  label; generated reviews carry their rationale (the tokens that decide the label) as mask.
- seq2seq: a validation source; the model's own greedy output is teacher-forced and one
  output step (drawn at random among the output tokens, EOS only when the output is empty)
  is explained; gold = the reference token at that step when the output still matches.

The builders (:func:`lm_queries`, :func:`classifier_queries`, :func:`text_classifier_queries`,
:func:`seq2seq_queries`) take
plain tensors, so tests use them with tiny models and no bundle.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from tokenizers import Tokenizer
from torch import Tensor, nn

from playground.analysis.experiments.core import make_generator
from playground.analysis.inputs import baseline_id, special_id_set
from playground.analysis.query import Query
from playground.bundle import Bundle
from playground.errors import DataError, PlaygroundError
from playground.families import family_of, get_family
from playground.generation.seq2seq import greedy_decode
from playground.training.config import preset_from_sections
from playground.training.spec import resolve_run
from playground.workspace import Workspace


@dataclass
class HeldOut:
    """N one-example queries plus what the views need to label them."""

    family: str
    kind: str
    queries: list[Query]
    labels: list[str]  # one short description per example
    units: list[list[str]]  # unit labels per example (token text, "r0c1" patches)
    gold: list[int | None]  # the true output at the explained position (None: unknown)
    masks: list[Tensor | None] = field(default_factory=list)  # object pixels [H,W] (vit-shapes); rationale [T] (reviews)
    class_names: list[str] | None = None
    description: str = ""
    sources: list[Any] = field(default_factory=list)  # the text each example was read from, where the family keeps it


    def __len__(self) -> int:
        return len(self.queries)


def _specials_and_baseline(tokenizer: Tokenizer | None, prefer: str) -> tuple[set[int], int]:
    return special_id_set(tokenizer), baseline_id(tokenizer, prefer)


def lm_queries(model: nn.Module, windows: Tensor, tokenizer: Tokenizer | None = None, gold: Sequence[int] | None = None,
               specials: set[int] | None = None, baseline: int | None = None) -> list[Query]:
    """One next-token query per row of ``windows`` [N,T], explaining the last position's prediction."""
    if tokenizer is not None and (specials is None or baseline is None):
        sp, base = _specials_and_baseline(tokenizer, "pad")
        specials = sp if specials is None else specials
        baseline = base if baseline is None else baseline
    specials = specials or set()
    baseline = 0 if baseline is None else baseline
    device = next(model.parameters()).device
    windows = windows.to(device)
    N, T = windows.shape
    with torch.no_grad():
        preds = model(windows)[:, -1].argmax(-1)  # [N]
    family = family_of(model)
    out = []
    for i in range(N):
        ids = windows[i : i + 1]
        special = torch.tensor([[int(t) in specials for t in ids[0].tolist()]], device=device)
        base = torch.where(special, ids, torch.full_like(ids, baseline))
        out.append(Query(model, family.explainer, ids, preds[i : i + 1], family.input_embedding(model),
                         positions=torch.tensor([T - 1], device=device),
                         baselines=base, units_mask=~special, pad_id=baseline))
    return out


def classifier_queries(model: nn.Module, images: Tensor) -> list[Query]:
    """One class query per image [N,C,H,W], explaining the predicted class; baseline = a black image."""
    device = next(model.parameters()).device
    images = images.to(device)
    with torch.no_grad():
        preds = model(images).argmax(-1)
    cls = getattr(model.config, "pool", "cls") == "cls"
    family = family_of(model)
    return [Query(model, family.explainer, images[i : i + 1], preds[i : i + 1], family.input_embedding(model),
                  baselines=torch.zeros_like(images[i : i + 1]), grid=tuple(model.grid), cls_token=cls)
            for i in range(images.shape[0])]


def text_classifier_queries(model: nn.Module, texts: Sequence[Sequence[int]],
                            tokenizer: Tokenizer | None = None) -> list[Query]:
    """One class query per text (token ids, no padding), explaining the predicted class;
    baseline = <unk> at every real token (specials kept)."""
    cfg = model.config
    device = next(model.parameters()).device
    specials = (special_id_set(tokenizer) if tokenizer is not None else set()) | {cfg.pad_id}
    family = family_of(model)
    explainer = family.explainer.for_model(model)
    out = []
    for ids in texts:
        x = torch.tensor([list(ids)], dtype=torch.long, device=device)  # [1,T]
        with torch.no_grad():
            pred = model(x).argmax(-1)  # [1]
        special = torch.tensor([[int(t) in specials for t in ids]], device=device)
        base = torch.where(special, x, torch.full_like(x, cfg.unk_id))
        out.append(Query(model, explainer, x, pred, family.input_embedding(model), baselines=base,
                         units_mask=~special, pad_id=cfg.pad_id))
    return out


def seq2seq_queries(model: nn.Module, sources: Sequence[Sequence[int]], gen: torch.Generator,
                    tokenizer: Tokenizer | None = None, references: Sequence[Sequence[int]] | None = None,
                    max_output: int | None = None) -> tuple[list[Query], list[int | None], list[int]]:
    """One query per source (token ids without specials): the model's greedy output teacher-forced,
    one output step drawn with ``gen``. Returns (queries, gold tokens, chosen steps)."""
    cfg = model.config
    device = next(model.parameters()).device
    specials, baseline = _specials_and_baseline(tokenizer, "unk") if tokenizer is not None else (set(), cfg.pad_id)
    specials |= {cfg.pad_id, cfg.bos_id, cfg.eos_id}
    if tokenizer is None:
        baseline = cfg.eos_id if baseline == cfg.pad_id else baseline  # pad would be masked away
    family = family_of(model)
    queries, gold, steps = [], [], []
    for i, src_ids in enumerate(sources):
        if not src_ids:
            continue
        src = torch.tensor([list(src_ids)], dtype=torch.long, device=device)
        cap = max_output or min(getattr(cfg, "max_len", 10_000) - 1, 2 * len(src_ids) + 10)
        y = greedy_decode(model, src, cfg.bos_id, cfg.eos_id, cap)[0]
        targets = y + [cfg.eos_id]
        step = int(torch.randint(len(y), (1,), generator=gen)) if y else 0
        tgt_in = torch.tensor([[cfg.bos_id] + y], device=device)
        special = torch.tensor([[t in specials for t in src_ids]], device=device)
        base = torch.where(special, src, torch.full_like(src, baseline))
        queries.append(Query(model, family.explainer, src, torch.tensor([targets[step]], device=device),
                             family.input_embedding(model),
                             positions=torch.tensor([step], device=device), decoder_inputs=tgt_in[:, : max(step + 1, 1)],
                             baselines=base, units_mask=~special, pad_id=cfg.pad_id))
        ref = None
        if references is not None:
            r = list(references[i]) + [cfg.eos_id]
            ref = r[step] if step < len(r) and y[:step] == r[:step] else None
        gold.append(ref)
        steps.append(step)
    return queries, gold, steps


# ----------------------------------------------------------------------------------------
# From a bundle


def prepare_data(bundle: Bundle, workspace: Workspace | None = None,
                 overrides: dict[str, Any] | None = None) -> tuple[Any, Any, Any]:
    """The trainer's (adapter, prepared data, run spec) for a bundle, with the bundle's own tokenizer
    (``overrides``: preset overrides, as a retrain would apply them)."""
    sections = bundle.config.get("sections")
    if bundle.config.get("pretrained"):
        raise PlaygroundError(f"{bundle.name!r} is an imported pretrained model: it has no validation split of the "
                              "playground's data to draw examples from. Compare it with your own model on one input "
                              "(Analyze → Compare with a second model), or fine-tune it first (data.init_from).")
    if not sections:
        raise PlaygroundError(f"Checkpoint {bundle.name!r} was not written by the trainer (no preset sections), "
                              "so its validation data cannot be rebuilt; train it from a preset.")
    spec = resolve_run(preset_from_sections(sections, bundle.config.get("preset") or bundle.name), overrides)
    adapter = get_family(spec.family).adapter
    try:
        prep = adapter.prepare(spec.data, spec.preset.model, workspace, tokenizer=bundle.tokenizer)
    except (OSError, DataError) as exc:
        raise PlaygroundError(f"The validation data of {bundle.name!r} cannot be rebuilt ({exc}); "
                              "the experiments need the data the model was trained on.") from exc
    return adapter, prep, spec


def load_held_out(bundle: Bundle, n: int, seed: int = 0, workspace: Workspace | None = None) -> HeldOut:
    """``n`` held-out examples of a trainer-written bundle (validation split), drawn with ``seed``."""
    if n < 1:
        raise PlaygroundError("Use at least one example.")
    _, prep, _ = prepare_data(bundle, workspace)
    return get_family(bundle.family).examples.held_out(bundle, prep, bundle.tokenizer or prep.tokenizer, n,
                                                      make_generator(seed))
