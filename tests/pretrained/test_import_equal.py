"""Imported checkpoints equal `transformers` on the same inputs: logits, attention maps, greedy text.

Every architecture the playground converts is built with random tiny weights by `transformers`,
saved with save_pretrained, imported into the playground's own family modules, and compared.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from playground.bundle import load_bundle
from playground.generation.api import GenerateRequest, generate
from playground.generation.filters import SamplingConfig
from playground.models.attention import attention_modules, record_attention
from playground.pretrained.importer import import_pretrained
from playground.workspace import Workspace
from tests.pretrained.conftest import ARCHITECTURES, Saved

LOGITS_TOL, ATTENTION_TOL = 1e-4, 1e-5


def inputs(saved: Saved) -> tuple[dict[str, Any], tuple[Any, ...], torch.Tensor | None]:
    """(transformers kwargs, our forward args, real-token mask [B,T] or None) for one batch of two."""
    g = torch.Generator().manual_seed(1)
    if saved.architecture.startswith("ViT"):
        images = torch.rand(2, 3, 16, 16, generator=g)  # pixels in [0, 1]; HF's processor centres them
        return {"pixel_values": (images - 0.5) / 0.5}, (images,), None
    if saved.architecture.startswith("GPT2"):
        ids = torch.randint(0, 300, (2, 12), generator=g)
        return {"input_ids": ids}, (ids,), None
    ids = torch.randint(5, 120, (2, 14), generator=g)
    ids[:, 0], ids[0, -1] = 2, 3  # [CLS] ... [SEP]
    ids[1, 9], ids[1, 10:] = 3, 0  # the second row is shorter: [SEP] then [PAD]s
    mask = ids != 0
    return {"input_ids": ids, "attention_mask": mask.long()}, (ids,), mask


def compare(saved: Saved, workspace: Workspace) -> dict[str, float]:
    """Import ``saved`` and return the largest differences from `transformers` (logits, attention)."""
    bundle = load_bundle(import_pretrained(str(saved.folder), workspace, "imported"))
    theirs_in, ours_in, mask = inputs(saved)
    with torch.no_grad():
        out = saved.model(**theirs_in, output_attentions=True)
        with record_attention(bundle.model) as maps:
            logits = bundle.model(*ours_in)
    names = list(attention_modules(bundle.model))
    assert len(names) == len(out.attentions) > 0
    theirs = out.logits
    if mask is not None and theirs.dim() == 3:  # per-token logits: compare the real tokens
        theirs, logits = theirs[mask], logits[mask]
    attention = max((maps[n] - a).abs().max().item() for n, a in zip(names, out.attentions))
    return {"logits": (logits - theirs).abs().max().item(), "attention": attention,
            "logit_scale": theirs.abs().max().item()}


@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_import_matches_transformers(architecture: str, saved: dict[str, Saved], tmp_path: Path) -> None:
    diffs = compare(saved[architecture], Workspace(tmp_path / "ws"))
    assert diffs["logit_scale"] > 0.01  # not a degenerate all-zero model
    assert diffs["logits"] <= LOGITS_TOL, diffs
    assert diffs["attention"] <= ATTENTION_TOL, diffs


def test_gpt2_greedy_generation_matches_transformers(saved: dict[str, Saved], tmp_path: Path) -> None:
    s = saved["GPT2LMHeadModel"]
    bundle = load_bundle(import_pretrained(str(s.folder), Workspace(tmp_path / "ws"), "gpt2-tiny"))
    prompt = "the quick brown"
    done = generate(bundle, GenerateRequest(prompt=prompt, max_new_tokens=20, sampling=SamplingConfig(temperature=0.0)))
    ours = done.samples[0].ids
    ids = torch.tensor([s.tokenizer.encode(prompt).ids])
    with torch.no_grad():
        theirs = s.model.generate(ids, max_new_tokens=20, do_sample=False, eos_token_id=None, pad_token_id=0)
    theirs = theirs[0, ids.shape[1]:].tolist()
    assert len(ours) >= 1 and ours == theirs[:len(ours)]
    if len(ours) < 20:  # ours stopped at the end-of-text token, which transformers went on past
        assert done.samples[0].stop_reason == "eos" and theirs[len(ours)] == s.tokenizer.token_to_id("<|endoftext|>")


def test_imported_bundle_is_marked_read_only(saved: dict[str, Saved], tmp_path: Path) -> None:
    bundle = load_bundle(import_pretrained(str(saved["BertForMaskedLM"].folder), Workspace(tmp_path / "ws"), "bert"))
    assert bundle.config["read_only"] is True
    assert bundle.config["pretrained"]["architecture"] == "BertForMaskedLM"
    assert bundle.family == "bert_mlm" and bundle.model_config.norm_placement == "post"
    assert (bundle.path / "tokenizer.json").is_file()
