"""`python -m playground generate`: streams text, translates, classifies; clear errors."""
from __future__ import annotations

import json

import numpy as np
from PIL import Image

from playground.__main__ import main


def _run(ws, *argv: str) -> int:
    return main(["--workspace", str(ws.root), "generate", *argv])


def test_cli_gpt_streams_the_prompt_and_continuation(gpt_bundle, workspace, capsys):
    code = _run(workspace, "tiny-gpt", "--prompt", "the", "--max-new-tokens", "12", "--temperature", "0")
    out, err = capsys.readouterr()
    assert code == 0
    assert out.startswith("the") and len(out.rstrip("\n")) >= 3
    assert "tok/s" in err and "12 tokens" in err
    from playground.generation import GenerateRequest, SamplingConfig, generate

    expected = generate(gpt_bundle, GenerateRequest(prompt="the", max_new_tokens=12, sampling=SamplingConfig(temperature=0)))
    assert out == "the" + expected.samples[0].text + "\n"


def test_cli_seed_and_samples_json(gpt_bundle, workspace, capsys):
    args = ["tiny-gpt", "--prompt", "fox", "--max-new-tokens", "8", "--top-k", "5", "--top-p", "0.9",
            "--min-p", "0.01", "--repetition-penalty", "1.2", "--seed", "7", "--num-samples", "2", "--json"]
    assert _run(workspace, *args) == 0
    first = json.loads(capsys.readouterr().out)
    assert _run(workspace, *args) == 0
    second = json.loads(capsys.readouterr().out)
    assert first["seed"] == 7 and len(first["samples"]) == 2
    assert [s["ids"] for s in first["samples"]] == [s["ids"] for s in second["samples"]]
    assert len(first["samples"][0]["tokens"][0]["alternatives"]) == 5


def test_cli_unknown_characters_is_one_line_error(gpt_bundle, workspace, capsys):
    assert _run(workspace, "tiny-gpt", "--prompt", "naïve") == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and "'ï'" in err and err.count("\n") == 1


def test_cli_seq2seq_greedy_and_beam(seq2seq_bundle, workspace, capsys):
    name = seq2seq_bundle.name
    assert _run(workspace, name, "--prompt", "abc", "--max-new-tokens", "8") == 0
    greedy = capsys.readouterr().out.strip()
    assert _run(workspace, name, "--prompt", "abc", "--max-new-tokens", "8", "--beam-width", "1") == 0
    assert capsys.readouterr().out.strip() == greedy
    assert _run(workspace, name, "--prompt", "abc", "--beam-width", "3", "--length-penalty", "0.6", "--json") == 0
    data = json.loads(capsys.readouterr().out)
    assert data["decoder"] == "beam" and data["samples"][0]["alignment"]


def test_cli_vit_image_and_errors(vit_bundle, workspace, tmp_path, capsys):
    path = tmp_path / "x.png"
    Image.fromarray((np.arange(64).reshape(8, 8) * 4).astype(np.uint8)).save(path)
    assert _run(workspace, "tiny-vit", "--image", str(path)) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 3 and {line.split()[1] for line in lines} == {"zero", "one", "two"}
    assert _run(workspace, "tiny-vit", "--prompt", "a cat") == 2
    assert "image classifier" in capsys.readouterr().err


def test_cli_gpt_given_an_image(gpt_bundle, workspace, tmp_path, capsys):
    path = tmp_path / "x.png"
    Image.fromarray(np.zeros((8, 8), dtype=np.uint8)).save(path)
    assert _run(workspace, "tiny-gpt", "--image", str(path)) == 2
    assert "reads text, not images" in capsys.readouterr().err
