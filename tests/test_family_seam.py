"""One family, one place: outside playground/families/, no code decides by a family's name or its
kind of output; it asks the family (issue #14)."""
from __future__ import annotations

import re
from pathlib import Path

from playground.families import FAMILIES

ROOT = Path(__file__).resolve().parents[1] / "playground"
# The check: a comparison of something called kind or family with a literal, also
# through a lookup (`cfg.get("family") == "vit"`, `meta["kind"] in (...)`).
COMPARISON = re.compile(r"""(kind|family)["')\]]*\s*(==|!=|in)\s*["'(]""")
TASK_KINDS = {"lm", "classifier", "seq2seq"}


def _literals(line: str) -> set[str]:
    return set(re.findall(r"""["']([\w-]+)["']""", line))


def test_no_code_outside_the_families_compares_a_family_or_task_kind() -> None:
    names = set(FAMILIES) | TASK_KINDS
    offenders = []
    for path in sorted(ROOT.rglob("*.py")):
        if path.is_relative_to(ROOT / "families"):
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if COMPARISON.search(line) and _literals(line) & names:
                offenders.append(f"{path.relative_to(ROOT.parent)}:{number}: {line.strip()}")
    assert offenders == [], "ask the family instead:\n" + "\n".join(offenders)


def test_every_family_is_registered_once_under_its_own_name() -> None:
    assert all(name == family.name for name, family in FAMILIES.items())
    assert {f.kind for f in FAMILIES.values()} <= TASK_KINDS
