"""GPT -> Hugging Face GPT-2 export: same logits from GPT2LMHeadModel, refusals, CLI."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from playground.errors import ConfigError
from playground.models.export_hf import export_hf_gpt2
from playground.models.gpt import GPT, GPTConfig

transformers = pytest.importorskip("transformers")


def trained_looking_gpt(**overrides: object) -> tuple[GPT, GPTConfig]:
    """A tiny GPT with weights large enough that every nonlinearity matters."""
    cfg = GPTConfig.from_dict({"vocab_size": 31, "block_size": 16, "n_layer": 2, "n_head": 2, "d_model": 16, **overrides})
    model = GPT(cfg).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.3)
    return model, cfg


@pytest.mark.parametrize("overrides", [{}, {"bias": False, "attn_scale": False}, {"ffn": "relu", "pos_encoding": "sinusoidal"}])
def test_export_gives_the_same_logits(tmp_path: Path, overrides: dict) -> None:
    model, cfg = trained_looking_gpt(**overrides)
    export_hf_gpt2(model, cfg, tmp_path)
    hf = transformers.GPT2LMHeadModel.from_pretrained(tmp_path).eval()
    idx = torch.randint(0, 31, (2, 16))
    with torch.no_grad():
        ours, theirs = model(idx), hf(idx).logits
    assert torch.allclose(ours, theirs, atol=1e-4), (ours - theirs).abs().max()


def test_the_gelu_variant_matters(tmp_path: Path) -> None:
    """Our "gelu" is GPT-2's gelu_new (tanh); loading it as exact GELU would not match."""
    model, cfg = trained_looking_gpt()
    export_hf_gpt2(model, cfg, tmp_path)
    wrong = transformers.GPT2LMHeadModel.from_pretrained(tmp_path, activation_function="gelu").eval()
    idx = torch.randint(0, 31, (2, 16))
    with torch.no_grad():
        assert (model(idx) - wrong(idx).logits).abs().max() > 1e-4


@pytest.mark.parametrize("overrides", [{"pos_encoding": "rope"}, {"norm": "rmsnorm"},
                                       {"norm_placement": "post"}, {"ffn": "swiglu"}])
def test_configs_gpt2_cannot_express_are_refused(tmp_path: Path, overrides: dict) -> None:
    model, cfg = trained_looking_gpt(**overrides)
    with pytest.raises(ConfigError, match=next(iter(overrides))):
        export_hf_gpt2(model, cfg, tmp_path)
    assert not any(tmp_path.iterdir())


def test_cli_exports_a_bundle_with_its_tokenizer(tmp_path: Path) -> None:
    from tokenizers import Tokenizer, models

    from playground.__main__ import main
    from playground.bundle import save_bundle
    from playground.workspace import Workspace

    vocab = {"<|endoftext|>": 0, **{chr(97 + i): i + 1 for i in range(26)}}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="<|endoftext|>"))
    model, cfg = trained_looking_gpt(vocab_size=27)
    save_bundle(Workspace(tmp_path / "ws"), "tiny", model, "gpt", cfg, tokenizer=tokenizer)
    out = tmp_path / "hf"
    assert main(["--workspace", str(tmp_path / "ws"), "export", "tiny", "--format", "hf-gpt2", "--out", str(out)]) == 0
    assert (out / "tokenizer.json").is_file()
    hf_tok = transformers.AutoTokenizer.from_pretrained(out)
    assert hf_tok.eos_token_id == 0
    hf = transformers.GPT2LMHeadModel.from_pretrained(out).eval()
    idx = torch.randint(0, 27, (1, 10))
    with torch.no_grad():
        assert torch.allclose(hf(idx).logits, model(idx), atol=1e-4)
    assert main(["--workspace", str(tmp_path / "ws"), "export", "missing", "--out", str(out)]) == 2


def test_a_char_model_exports_with_declared_special_tokens(tmp_path: Path) -> None:
    """The shipped char GPT's tokenizer has only <unk>: the export declares it (unk, and in the
    bos / eos / pad roles), so loaders such as inseq find a bos and a pad token; no id is added."""
    from playground.bundle import load_bundle
    from playground.settings import SHIPPED_LIBRARY

    bundle = load_bundle(SHIPPED_LIBRARY / "models" / "gpt-python-docs-char")
    out = export_hf_gpt2(bundle.model, bundle.model.config, tmp_path / "hf", bundle.tokenizer)
    tok = transformers.AutoTokenizer.from_pretrained(out)
    unk = bundle.tokenizer.token_to_id("<unk>")
    assert tok.unk_token == "<unk>" and tok.unk_token_id == unk
    assert tok.bos_token_id == tok.eos_token_id == tok.pad_token_id == unk
    config = transformers.AutoConfig.from_pretrained(out)
    assert config.bos_token_id == config.eos_token_id == config.pad_token_id == unk
    assert len(tok) == bundle.tokenizer.get_vocab_size() == config.vocab_size  # nothing added
    assert tok("def f").input_ids == bundle.tokenizer.encode("def f").ids
