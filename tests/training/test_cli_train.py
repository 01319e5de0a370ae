"""`python -m playground train ...`: progress lines and one final metrics line; resume; errors."""
from __future__ import annotations

import re

from playground.__main__ import main
from playground.training.config import preset_to_toml
from tests.training.conftest import tiny_preset


def test_train_prints_progress_and_a_final_metrics_line(tmp_path, corpus_file, capsys):
    toml = tmp_path / "tiny.toml"
    toml.write_text(preset_to_toml(tiny_preset("gpt", corpus_file, max_steps=6, eval_interval=3)), encoding="utf-8")
    ws = str(tmp_path / "ws")
    code = main(["--workspace", ws, "train", str(toml), "--set", "train.log_interval=2", "--name", "cli-run"])
    out = capsys.readouterr().out.strip().splitlines()
    assert code == 0
    assert any(line.startswith("step      2/6") for line in out)
    assert any(line.startswith("eval      6/6") and "saved cli-run" in line for line in out)
    assert re.fullmatch(r"val_loss=\d+\.\d{4} step=6 tokens_per_s=\d+ elapsed_s=[\d.]+", out[-1])

    code = main(["--workspace", ws, "train", "--resume", "cli-run", "--set", "train.max_steps=9", "--quiet"])
    out = capsys.readouterr().out.strip().splitlines()
    assert code == 0 and "resumed 'cli-run' at step 6" in out[0] and " step=9 " in out[-1]


def test_seq2seq_final_line_has_exact_match(tmp_path, capsys):
    toml = tmp_path / "s.toml"
    toml.write_text(preset_to_toml(tiny_preset("rnn_seq2seq", max_steps=3, eval_interval=3)), encoding="utf-8")
    assert main(["--workspace", str(tmp_path / "ws"), "train", str(toml), "--quiet"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert "exact_match=" in last and "token_accuracy=" in last and "step=3" in last


def test_bad_override_is_one_error_line(tmp_path, capsys):
    code = main(["--workspace", str(tmp_path), "train", "nanogpt-cpu-tiny", "--set", "model.pos_encodings=rope"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: Unknown key model.pos_encodings") and "pos_encoding" in err


def test_unknown_preset_lists_the_presets(tmp_path, capsys):
    assert main(["--workspace", str(tmp_path), "train", "nanogpt-huge"]) == 2
    assert "nanogpt-cpu-tiny" in capsys.readouterr().err
