"""The CLI imports only the subcommand it runs: `list` needs neither torch nor the charts."""
from __future__ import annotations

import subprocess
import sys

from playground.__main__ import command_of


def test_the_subcommand_is_found_after_the_global_options():
    assert command_of(["--workspace", "w", "list", "--json"]) == "list"
    assert command_of(["--workspace=w", "train", "--help"]) == "train"
    assert command_of(["--help"]) is None and command_of([]) is None


def test_list_imports_no_other_subcommand_and_no_torch(tmp_path):
    code = ("import sys; from playground.__main__ import main; "
            f"assert main(['--workspace', {str(tmp_path)!r}, 'list']) == 0; "
            "heavy = sorted(m for m in ('torch', 'altair', 'pandas', 'httpx', 'playground.cli.train') if m in sys.modules); "
            "print('HEAVY', heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "HEAVY []" in out
    assert "gpt-python-docs-char" in out  # the shipped checkpoints are listed without loading a model
