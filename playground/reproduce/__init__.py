"""The lecture notes' claims reproduced: each claim an experiment (presets/experiments/NAME.toml),
a measurement, our figure beside the paper's and a verdict computed from the numbers.

    from playground.reproduce import all_claims, get_claim
    claim = get_claim("bottleneck")
    result = claim.shipped()              # what ships in playground/reproduce/results/
    for event in claim.run(workspace, stop):   # a re-run: ClaimProgress ..., then a ClaimResult
        ...
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from playground.errors import NotFoundError
from playground.reproduce.base import Claim, ClaimProgress, ClaimResult, Verdict
from playground.reproduce.claims import CLAIMS
from playground.stopping import StopFlag
from playground.workspace import Workspace


def all_claims() -> dict[str, Claim]:
    """Every claim by name, in the order the notes reach them."""
    return {c.name: c for c in CLAIMS}


def get_claim(name: str) -> Claim:
    """The claim called `name` (NotFoundError listing the names otherwise)."""
    claims = all_claims()
    if name not in claims:
        raise NotFoundError(f"No claim {name!r}; choose one of: {', '.join(claims)}.")
    return claims[name]


def run_claim(name: str, workspace: Workspace, stop: StopFlag = None, **kwargs: Any
              ) -> Iterator[ClaimProgress | ClaimResult]:
    """`get_claim(name).run(workspace, stop, ...)` by name: the target a server runs in a child
    process (playground.child.iter_in_child passes picklable arguments only)."""
    yield from get_claim(name).run(workspace, stop, **kwargs)


__all__ = ["Claim", "ClaimProgress", "ClaimResult", "Verdict", "all_claims", "get_claim", "run_claim"]
