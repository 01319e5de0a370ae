"""The README's install commands install what pyproject.toml allows: a CPU-torch line that pip
later replaces (with a multi-GB CUDA build) is the trap the README warns about."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parent.parent


def project_torch() -> Requirement:
    deps = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    return next(Requirement(d) for d in deps if Requirement(d).name == "torch")


def test_every_readme_torch_install_is_pinned_to_the_project_range():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    lines = re.findall(r"`(pip install [^`]*torch[^`]*)`", readme)
    torch_lines = [line for line in lines if re.search(r"\btorch\b", line) and "-e" not in line.split()]
    assert torch_lines, "the README should say how to install a CPU torch"
    allowed = project_torch().specifier
    for line in torch_lines:
        specs = [Requirement(tok.strip("\"'")) for tok in line.split()[2:] if tok.strip("\"'").startswith("torch")]
        assert specs, line
        for spec in specs:
            assert spec.specifier == allowed, f"{line!r} pins {spec.specifier or 'nothing'}, the project allows {allowed}"
