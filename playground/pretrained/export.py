"""An imported bundle back in ``transformers`` format: the same weight map read the other way.

Writes config.json (the checkpoint's own, kept in the bundle), model.safetensors (tied copies
left out, as save_pretrained does) and tokenizer.json; ``AutoModel*.from_pretrained`` reads it.
"""
from __future__ import annotations

from pathlib import Path

from safetensors.torch import save_file

from playground.bundle import Bundle
from playground.errors import ConfigError
from playground.pretrained.architectures import converter_named
from playground.workspace import write_json


def export_pretrained(bundle: Bundle, out_dir: str | Path) -> Path:
    """Write an imported ``bundle`` as a transformers folder ``out_dir``; returns it."""
    info = bundle.config.get("pretrained")
    if not isinstance(info, dict) or "hf_config" not in info:
        raise ConfigError(f"{bundle.name!r} was not imported from Hugging Face; only imported models export to "
                          "their own format (a GPT you trained exports with --format hf-gpt2).")
    converter = converter_named(info["architecture"])
    tensors = converter.to_theirs(bundle.model.state_dict(), bundle.model_config)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt"})
    write_json(out / "config.json", {**info["hf_config"], "architectures": [converter.architecture]})
    if bundle.tokenizer is not None:
        (out / "tokenizer.json").write_text(bundle.tokenizer.to_str(), encoding="utf-8")
    return out
