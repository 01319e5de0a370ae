"""`python -m playground reproduce NAME [--json] [--workspace DIR] [--shipped] [--ship] [--rejudge] [--quick]`
and `python -m playground reproduce --list`.

Re-runs a claim of the lecture notes (its experiment in presets/experiments/NAME.toml), printing
one line per progress step, then our numbers beside the paper's and the verdict. `--shipped`
prints the result that ships with the app without training; `--ship` writes the new result
there (playground/reproduce/results/NAME.json). Without --workspace the runs are trained in a
temporary folder that is removed at the end.
"""
from __future__ import annotations

import argparse
import json
import shutil
import signal
import tempfile
import threading
import time
from pathlib import Path

import torch

from playground.errors import ConfigError
from playground.reproduce import all_claims, get_claim
from playground.reproduce.base import ClaimProgress, ClaimResult, save_result
from playground.workspace import Workspace


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "reproduce", help="re-run a claim of the lecture notes and compare with the paper",
        description="Re-run a claim of the lecture notes (presets/experiments/NAME.toml) and print our "
                    f"numbers beside the paper's. Claims: {', '.join(all_claims())}.")
    parser.add_argument("name", nargs="?", help="the claim (see --list)")
    parser.add_argument("--list", action="store_true", help="list the claims and their shipped verdicts")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("--shipped", action="store_true", help="show the shipped result, train nothing")
    parser.add_argument("--ship", action="store_true", help="write the new result to playground/reproduce/results/")
    parser.add_argument("--rejudge", action="store_true",
                        help="recompute the shipped result's numbers and verdict from its stored runs (after a change "
                             "to the judging code) and write it back; trains nothing")
    parser.add_argument("--quick", action="store_true", help="a seconds-long smoke run (tests; numbers mean nothing)")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (the shipped results used 1)")
    parser.add_argument("--device", default="cpu", help="cpu (the shipped numbers) or cuda / mps")
    parser.add_argument("--workspace", dest="run_workspace", default=None,
                        help="keep the runs in this workspace (default: a temporary folder, removed at the end)")
    parser.set_defaults(func=run)


def format_result(result: ClaimResult, claim_name: str) -> str:
    """The claim, the paper's figure, our table and the verdict as plain text."""
    claim = get_claim(claim_name)
    meta = result.meta
    lines = [claim.title, "", f"Claim: {claim.claim}", f"Paper: {claim.paper}", f"Source: {claim.citation}"]
    if claim.note:
        lines.append(f"Recipe: {claim.note}")
    lines += ["", result.table.to_string(index=False), "", f"Verdict: {result.verdict}"]
    machine = meta.get("machine", {})
    lines.append(f"({meta.get('wall_s', '?')} s on {machine.get('cpu', '?')}, {machine.get('threads', '?')} thread(s), "
                 f"{meta.get('date', '?')}; recipe {meta.get('recipe_hash', '?')}"
                 + ("; QUICK smoke run" if meta.get("quick") else "") + ")")
    return "\n".join(lines)


def _list() -> int:
    for name, claim in all_claims().items():
        try:
            verdict = claim.shipped().verdict
        except Exception as exc:  # noqa: BLE001 - a missing or stale result is shown, not fatal
            verdict = f"(no shipped result: {exc})"
        print(f"{name:18s} {claim.title}\n{'':18s} {verdict}")
    return 0


def run(args: argparse.Namespace) -> int:
    """The subcommand."""
    if args.list:
        return _list()
    if not args.name:
        raise ConfigError(f"Name a claim: {', '.join(all_claims())} (or --list).")
    claim = get_claim(args.name)
    if args.rejudge:
        path = save_result(claim.shipped(), claim.result_path())
        print(f"rewrote {path}: {claim.shipped().verdict}")
        return 0
    if args.shipped:
        result = claim.shipped()
        print(json.dumps(result.to_json(), indent=1) if args.json else format_result(result, claim.name))
        return 0
    if args.ship and args.quick:
        raise ConfigError("--ship writes the result that ships with the app; a --quick run is not one.")
    if args.threads:
        torch.set_num_threads(args.threads)
    stop = threading.Event()
    previous = signal.signal(signal.SIGINT, lambda *_: stop.set())  # Ctrl-C: stop at the next step
    temp = None if args.run_workspace else tempfile.mkdtemp(prefix="playground-reproduce-")
    workspace = Workspace(Path(args.run_workspace or temp))
    result: ClaimResult | None = None
    last_print = 0.0
    try:
        for event in claim.run(workspace, stop, quick=args.quick, device=args.device):
            if isinstance(event, ClaimResult):
                result = event
            elif isinstance(event, ClaimProgress):
                now = time.monotonic()
                if event.stopped or now - last_print > 2.0 or event.step == event.max_steps:
                    last_print = now
                    if not args.json:
                        print(f"[{100 * event.fraction:5.1f}%] run {event.index + 1}/{event.n_runs} "
                              f"step {event.step}/{event.max_steps} · {event.message}", flush=True)
                if event.stopped:
                    print(f"stopped: {event.message}; nothing was kept.")
                    return 130
    finally:
        signal.signal(signal.SIGINT, previous)
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)
    assert result is not None
    if args.ship:
        path = save_result(result, claim.result_path())
        if not args.json:
            print(f"wrote {path}")
    print(json.dumps(result.to_json(), indent=1) if args.json else format_result(result, claim.name))
    return 0
