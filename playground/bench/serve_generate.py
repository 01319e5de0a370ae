"""`python -m playground bench serve-generate --users 20`: twenty users pressing Generate at once.

Starts the real app (launch.py) twice on free 127.0.0.1 ports over temp workspaces: once as
it serves (concurrent GPT generations of one checkpoint batched: one forward pass per step for
everyone, `playground.generation.batching`) and once with PLAYGROUND_GENERATE_BATCHING=0 (each
generation alone, in the light lane: the unbatched peer). Then, in interleaved rounds (so a
change in machine load hits both alike), on each server:

- N users (each its own session, through `queue_client.QueueClient`: on the wire what a browser
  does, at a fraction of gradio_client's CPU, which would otherwise be taken from the server
  measured on the same cores) call Generate at the same moment: 100 new
  tokens from the shipped demo GPT (`gpt-python-docs-char`), temperature 0.8, top-k 40, each
  with its own prompt (carrying its marker; four different lengths, so the batch's rows sit
  at different positions) and seed;
- one user alone, the same call.

Prints per server p50/p95 latency (press to the final result) for N users and for one user,
throughput (tokens/s over a round's wall time), the ratios the goal is stated in (N users' p95
against one user alone on the batched server; batched against unbatched throughput), and two
checks: every user's tokens identical on both servers (same prompt and seed), and no user's
output holding another user's marker. Then the same rounds without the app, in this process
(the batcher against 4 unbatched decoders at a time), to show what batching gains apart from
the app's own per-request work, and one decode pass of N rows against one row (`pass_floor`):
the least the N users' p95 can be over one user's on these cores. Last, what a step costs
where it is bound by kernel launches rather than arithmetic (a GPU): the torch ops a decode-only
step dispatches for N users and for one, and the forward passes each took (`step_ops`),
counted on whatever device runs. It measures and reports; it asserts nothing about timing.
Loopback only; the number of users, rounds and every wait are bounded, and both
servers are stopped at the end.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from playground.bench.queue_client import QueueClient
from playground.bench.serve import (
    DEMO_GPT,
    MARKER_RE,
    SERVER_TIME_RE,
    Server,
    _ensure_demo_model,
    start_server,
)
from playground.bench.step_ops import StepOps, count_step_ops
from playground.gc_pauses import frozen_heap

MAX_USERS = 64
MAX_ROUNDS = 20
SESSION_TRIES = 3
GOAL = {"p95_over_alone": 2.0, "throughput_over_unbatched": 5.0}
MODES = ("batched", "unbatched")


@dataclass
class Figures:
    """Latencies (s) and round throughputs (tokens/s) of one server."""

    many: list[float] = field(default_factory=list)
    alone: list[float] = field(default_factory=list)
    many_tps: list[float] = field(default_factory=list)
    alone_tps: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    inside: list[float] = field(default_factory=list)  # N users: the server's own "tokens in X s"
    pass_many: list[float] = field(default_factory=list)  # one decode pass of N rows (s), decoders alone
    pass_one: list[float] = field(default_factory=list)  # and of one row, interleaved with it
    ops: dict[int, StepOps] = field(default_factory=dict)  # users -> torch ops per decode step (`step_ops`)


@contextlib.contextmanager
def _env(name: str, value: str | None) -> Iterator[None]:
    """Set (or unset) one environment variable while a child server is started."""
    old = os.environ.get(name)
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


def _prompt(marker: str, i: int) -> str:
    """User i's prompt: its marker, then code; lengths differ (rows at different positions)."""
    return f"# {marker}\n" + "    " * (i % 4) + "def "


def _pct(values: list[float], q: int) -> float | None:
    if not values:
        return None
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def _token_ids(result: Any) -> list[int] | None:
    """The generated token ids from Generate's token table (the dataframe as JSON)."""
    table = result[2] if isinstance(result, (list, tuple)) and len(result) > 2 else None
    if isinstance(table, dict) and "headers" in table and "data" in table:
        col = table["headers"].index("token_id")
        return [int(row[col]) for row in table["data"]]
    return None


class Users:
    """N sessions on one server (`QueueClient`: lean, so the clients take little of the CPU the
    server is measured on), each with its marker."""

    def __init__(self, url: str, n: int, timeout_s: float, markers: list[str]) -> None:
        def session(_: int) -> QueueClient:
            for attempt in range(SESSION_TRIES):  # a loaded machine can time out a first /config
                try:
                    client = QueueClient(url, timeout_s)
                    client.predict(None, api_name="/refresh_generate_models", timeout_s=timeout_s)  # its checkpoint list
                    return client
                except Exception:
                    if attempt == SESSION_TRIES - 1:
                        raise
                    time.sleep(2.0)
            raise AssertionError("unreachable")

        with ThreadPoolExecutor(max_workers=n) as pool:
            self.clients = list(pool.map(session, range(n)))
        self.markers = markers  # the same on both servers: same prompts, same seeds, comparable tokens
        self.timeout_s = timeout_s

    def generate(self, i: int, round_: int, new_tokens: int, start: threading.Barrier | None,
                 outputs: dict[tuple[int, int, int], list[int]], figures: Figures, cross_talk: list[str],
                 many: bool) -> float | None:
        """User i's Generate; its latency, or None (failure recorded)."""
        marker = self.markers[i]
        prompt = _prompt(marker, i)
        seed = 1000 * (round_ + 1) + i  # round -1 warms up: seeds are >= 0
        if start is not None:
            start.wait(self.timeout_s)
        t0 = time.perf_counter()
        try:
            result = self.clients[i].predict(DEMO_GPT, prompt, 0.8, 40, 1.0, 0.0, 1.0, 0.0, 0.0, new_tokens, seed, 1,
                                             "", 1, 0.0, api_name="/generate_text", timeout_s=self.timeout_s)
        except Exception as exc:  # noqa: BLE001 - every failure is a figure
            figures.failures.append(f"{type(exc).__name__}: {str(exc)[:120]}")
            return None
        seconds = time.perf_counter() - t0
        ids = _token_ids(result)
        if ids is None or len(ids) != new_tokens:
            figures.failures.append(f"expected {new_tokens} tokens, got {None if ids is None else len(ids)}")
            return None
        outputs[(round_, int(many), i)] = ids
        inside = SERVER_TIME_RE.search(str(result[1]))
        if inside and many:
            figures.inside.append(float(inside.group(1)))
        for found in set(MARKER_RE.findall(json.dumps(result, default=str))) - {marker}:
            cross_talk.append(f"{marker} saw {found}")
        return seconds

    def round(self, n: int, round_: int, new_tokens: int, figures: Figures,
              outputs: dict[tuple[int, int, int], list[int]], cross_talk: list[str], many: bool) -> None:
        """n users at once (a barrier releases them together); latencies and throughput."""
        barrier = threading.Barrier(n) if n > 1 else None
        t0 = time.perf_counter()
        with ThreadPoolExecutor(max_workers=n) as pool:
            lat = list(pool.map(lambda i: self.generate(i, round_, new_tokens, barrier, outputs, figures, cross_talk,
                                                        many), range(n)))
        wall = time.perf_counter() - t0
        ok = [x for x in lat if x is not None]
        (figures.many if many else figures.alone).extend(ok)
        (figures.many_tps if many else figures.alone_tps).append(len(ok) * new_tokens / wall)

    def close(self) -> None:
        for c in self.clients:
            with contextlib.suppress(Exception):
                c.close()


def run_bench(users: int, rounds: int, new_tokens: int, timeout_s: float, max_seconds: float,
              start_timeout_s: float = 120.0) -> dict[str, Any]:
    """Start both servers, run interleaved rounds, stop them; the figures."""
    roots = {m: Path(tempfile.mkdtemp(prefix=f"playground-bench-sg-{m}-")) for m in MODES}
    servers: dict[str, Server] = {}
    figures = {m: Figures() for m in MODES}
    outputs: dict[str, dict[tuple[int, int, int], list[int]]] = {m: {} for m in MODES}
    markers = [f"u{i:02d}-{secrets.token_hex(3)}" for i in range(users)]
    cross_talk: list[str] = []
    pools: dict[str, Users] = {}
    done_rounds = 0
    try:
        for mode in MODES:
            with _env("PLAYGROUND_GENERATE_BATCHING", "0" if mode == "unbatched" else None):
                servers[mode] = start_server(roots[mode], False, start_timeout_s)
            _ensure_demo_model(servers[mode], timeout_s)
            pools[mode] = Users(servers[mode].url, users, timeout_s, markers)
        for mode in MODES:  # warm up: load the checkpoint, first forward passes
            pools[mode].round(1, -1, 8, Figures(), {}, [], many=False)
        t_start = time.monotonic()
        with frozen_heap():  # the clients' own full GC passes would stall the latencies (servers freeze too)
            for r in range(rounds):
                if r and time.monotonic() - t_start > max_seconds:
                    break
                order = MODES if r % 2 == 0 else MODES[::-1]
                for mode in order:
                    pools[mode].round(users, r, new_tokens, figures[mode], outputs[mode], cross_talk, many=True)
                for mode in order:
                    pools[mode].round(1, r, new_tokens, figures[mode], outputs[mode], cross_talk, many=False)
                done_rounds += 1
        alive = {m: s.proc.poll() is None for m, s in servers.items()}
    finally:
        for pool in pools.values():
            pool.close()
        for server in servers.values():
            server.stop()
        for root in roots.values():
            shutil.rmtree(root, ignore_errors=True)
    common = sorted(set(outputs["batched"]) & set(outputs["unbatched"]))
    differ = [k for k in common if outputs["batched"][k] != outputs["unbatched"][k]]
    return {"users": users, "rounds": done_rounds, "new_tokens": new_tokens, "figures": figures,
            "compared": len(common), "differ": differ, "cross_talk": cross_talk, "alive": alive,
            "load": os.getloadavg()}


def engine_rounds(users: int, rounds: int, new_tokens: int, light_slots: int = 4,
                  device: str = "cpu") -> dict[str, Figures]:
    """The same load without the app, in this process: `users` threads generating on the demo
    GPT at once through the batcher, and unbatched through a pool of `light_slots` threads (the
    light lane of an unbatched server), and one user alone; interleaved rounds. What batching
    itself gains, apart from the app's per-request work (rendering, tables, the queue). On
    `device` ("cuda" where a GPU is: the app itself is not needed there)."""
    from playground.bundle import load_bundle
    from playground.generation.batching import GPTBatcher, stream_batched
    from playground.generation.filters import SamplingConfig
    from playground.generation.lm import stream_lm
    from playground.settings import SHIPPED_LIBRARY

    bundle = load_bundle(SHIPPED_LIBRARY / "models" / DEMO_GPT)
    model, tok = bundle.model.to(device), bundle.tokenizer
    batcher = GPTBatcher(model, idle_s=5.0)
    sampling = SamplingConfig(temperature=0.8, top_k=40)
    figures = {m: Figures() for m in MODES}

    def request(i: int) -> dict[str, Any]:
        return {"prompt_ids": tok.encode(_prompt(f"u{i:02d}-000000", i)).ids, "max_new_tokens": new_tokens,
                "sampling": sampling, "seed": i}

    def one(batched: bool, i: int, t0: float) -> float:
        kw = request(i)
        events = stream_batched(model, tok, batcher=batcher, **kw) if batched else stream_lm(model, tok, **kw)
        for _ in events:
            pass
        return time.perf_counter() - t0

    try:
        with frozen_heap():  # as a server does after start-up
            _engine_rounds(users, rounds, new_tokens, light_slots, one, figures)
    finally:
        batcher.close()  # a worker still inside a torch op when the interpreter exits aborts it
    figures["batched"].pass_many, figures["batched"].pass_one = pass_floor(model, users)
    for n in sorted({1, users}):  # what a step costs where it is bound by launches (a GPU), counted
        figures["batched"].ops[n] = count_step_ops(model, tok, [request(i) for i in range(n)])
    return figures


def pass_floor(model: Any, rows: int, repeats: int = 200) -> tuple[list[float], list[float]]:
    """Seconds of one decode pass (`decode_rows`, what a batch step costs before any prefill,
    sampling or event) with `rows` rows at spread positions and with one row at the middle
    position, interleaved; on a CPU on the worker's thread count (DECODE_THREADS). The floor
    under the p95 ratio: N users cannot take less than this many times one user's passes."""
    import torch

    from playground.generation.batching import DECODE_THREADS, RowKVCache
    from playground.torch_threads import threads_here

    block = int(model.config.block_size)
    device = next(model.parameters()).device
    setups = []
    for n, lengths in ((rows, [(7 * i) % (block - 1) for i in range(rows)]), (1, [block // 2])):
        cache = RowKVCache.for_model(model, n)
        cache.add_rows(n)
        setups.append((cache, lengths, torch.zeros(n, 1, dtype=torch.long, device=device)))  # [n,1]
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    times: list[list[float]] = [[], []]
    threads = threads_here(DECODE_THREADS) if device.type == "cpu" else contextlib.nullcontext()
    with threads, torch.inference_mode():
        for i in range(repeats + 10):  # the first 10 warm up
            for k, (cache, lengths, tokens) in enumerate(setups):
                cache.lengths = list(lengths)
                sync()
                t0 = time.perf_counter()
                model.decode_rows(tokens, cache)
                sync()
                if i >= 10:
                    times[k].append(time.perf_counter() - t0)
    return times[0], times[1]


def _engine_rounds(users: int, rounds: int, new_tokens: int, light_slots: int, one: Any,
                   figures: dict[str, Figures]) -> None:
    for r in range(-1, rounds):  # round -1 warms up
        for mode in (MODES if r % 2 == 0 else MODES[::-1]):
            batched = mode == "batched"
            for n, many in ((users, True), (1, False)):
                t0 = time.perf_counter()
                with ThreadPoolExecutor(max_workers=n if batched else min(n, light_slots)) as pool:
                    lat = list(pool.map(lambda i, b=batched, t=t0: one(b, i, t), range(n)))
                if r < 0:
                    continue
                wall = time.perf_counter() - t0
                (figures[mode].many if many else figures[mode].alone).extend(lat)
                (figures[mode].many_tps if many else figures[mode].alone_tps).append(n * new_tokens / wall)


def _s(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f} s"


def format_report(result: dict[str, Any]) -> str:
    """The figures side by side, the ratios and the checks."""
    n, f = result["users"], result["figures"]
    lines = [f"bench serve-generate: {n} users at once and 1 user alone, {result['new_tokens']} new tokens each, "
             f"demo GPT {DEMO_GPT}, {result['rounds']} interleaved round(s); load average at the end "
             + " ".join(f"{x:.2f}" for x in result["load"]), ""]
    lines.append(f"{'':34}{'batched':>22}{'unbatched (peer)':>22}")
    rows = _rows(n)
    for label, fmt in rows:
        lines.append(f"{label:34}{fmt(f['batched']):>22}{fmt(f['unbatched']):>22}")
    b, u = f["batched"], f["unbatched"]
    alone, p95 = _pct(b.alone, 50), _pct(b.many, 95)
    tput_b, tput_u = _pct(b.many_tps, 50), _pct(u.many_tps, 50)
    lines.append("")
    if alone and p95:
        lines.append(f"{n} users' p95 / one user alone (batched server, p50): {p95 / alone:.2f}x   "
                     f"(goal <= {GOAL['p95_over_alone']:.0f}x)")
    if tput_b and tput_u:
        lines.append(f"throughput batched / unbatched, {n} users:           {tput_b / tput_u:.2f}x   "
                     f"(goal >= {GOAL['throughput_over_unbatched']:.0f}x)")
    u_p95 = _pct(u.many, 95)
    if u_p95 and p95:
        lines.append(f"{n} users' p95, unbatched / batched:                  {u_p95 / p95:.2f}x")
    lines.append(f"same tokens on both servers (same prompt and seed): {result['compared'] - len(result['differ'])}"
                 f" of {result['compared']} generations")
    lines.append(f"cross-talk (another user's marker in an output): {len(result['cross_talk'])}")
    for item in result["cross_talk"][:5]:
        lines.append(f"  {item}")
    for mode in MODES:
        for err in sorted(set(f[mode].failures))[:5]:
            lines.append(f"failure ({mode}): {err}")
    lines.append(f"servers alive at the end: {result['alive']}")
    engine = result.get("engine")
    if engine:
        lines += ["", "without the app (this process, the decoders alone; unbatched: 4 at a time, as the light lane):",
                  *_engine_lines(engine, n)]
    return "\n".join(lines)


def _rows(n: int) -> list[tuple[str, Any]]:
    """The report's rows: a label and how one server's figures read in it."""
    return [
        (f"{n} users p50 / p95", lambda x: f"{_s(_pct(x.many, 50))} / {_s(_pct(x.many, 95))}"),
        (f"{n} users: generating, in the server", lambda x: f"{_s(_pct(x.inside, 50))} / {_s(_pct(x.inside, 95))}"),
        ("1 user alone p50 / p95", lambda x: f"{_s(_pct(x.alone, 50))} / {_s(_pct(x.alone, 95))}"),
        (f"{n} users throughput (median round)", lambda x: f"{_pct(x.many_tps, 50) or 0:.0f} tok/s"),
        ("1 user throughput (median round)", lambda x: f"{_pct(x.alone_tps, 50) or 0:.0f} tok/s"),
        ("generations ok / failed", lambda x: f"{len(x.many) + len(x.alone)} / {len(x.failures)}"),
    ]


def _engine_lines(engine: dict[str, Figures], n: int) -> list[str]:
    """The decoders alone, batched beside unbatched, and the two ratios."""
    b, u = engine["batched"], engine["unbatched"]
    rows = _rows(n)
    lines = [f"{'':34}{'batched':>22}{'unbatched (peer)':>22}"]
    for label, fmt in rows[:1] + rows[2:5]:
        lines.append(f"{label:34}{fmt(b):>22}{fmt(u):>22}")
    e_alone, e_p95 = _pct(b.alone, 50), _pct(b.many, 95)
    e_b, e_u = _pct(b.many_tps, 50), _pct(u.many_tps, 50)
    if e_alone and e_p95 and e_b and e_u:
        lines.append(f"{n} users' p95 / one user alone: {e_p95 / e_alone:.2f}x (goal <= {GOAL['p95_over_alone']:.0f}x); "
                     f"throughput batched / unbatched: {e_b / e_u:.2f}x (goal >= {GOAL['throughput_over_unbatched']:.0f}x)")
    many, one = _pct(b.pass_many, 50), _pct(b.pass_one, 50)
    if many and one:
        lines.append(f"one decode pass, {n} rows / one row (medians, interleaved): {many * 1e3:.2f} ms / "
                     f"{one * 1e3:.2f} ms = {many / one:.2f}x, before any prefill, sampling or event")
    return lines + _ops_lines(b.ops, n)


def _ops_lines(ops: dict[int, StepOps], n: int) -> list[str]:
    """Torch ops per decode-only step and forward passes, N users beside one (a GPU's launches)."""
    if n not in ops or 1 not in ops or n == 1:
        return []
    many, one = ops[n], ops[1]
    launches = (f"torch ops per decode step, views excluded (on a GPU about one launch each), {n} users / one user: "
                f"{many.median_ops:.0f} / {one.median_ops:.0f}")
    passes = (f"forward passes, {n} users together / one user: {many.decode_passes} decode + {many.prefill_passes} prefill / "
              f"{one.decode_passes} decode + {one.prefill_passes} prefill")
    return [launches, passes]


def format_engine(engine: dict[str, Figures], users: int, rounds: int, new_tokens: int, device: str) -> str:
    """`--engine-only`: the decoders alone, without the app, on `device`."""
    head = (f"bench serve-generate --engine-only: {users} users at once and 1 user alone, {new_tokens} new tokens "
            f"each, demo GPT {DEMO_GPT} on {device}, {rounds} interleaved round(s), no app (the decoders alone; "
            f"unbatched: 4 at a time, as the light lane); load average at the end "
            + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    return "\n".join([head, "", *_engine_lines(engine, users)])


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "serve-generate", help="N users generating at once on the real app: batched vs unbatched, and one user alone")
    parser.add_argument("--users", type=int, default=20, help=f"users at once (default 20, at most {MAX_USERS})")
    parser.add_argument("--rounds", type=int, default=3, help=f"interleaved rounds (default 3, at most {MAX_ROUNDS})")
    parser.add_argument("--new-tokens", type=int, default=100, help="tokens per generation (default 100)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds one generation may take (default 120)")
    parser.add_argument("--max-seconds", type=float, default=600.0,
                        help="no new round starts after this many seconds (default 600)")
    parser.add_argument("--no-engine", action="store_true",
                        help="skip the rounds without the app (the decoders alone, in this process)")
    parser.add_argument("--engine-only", action="store_true",
                        help="only the rounds without the app (e.g. on a GPU machine that has no gradio)")
    parser.add_argument("--device", default="cpu", help="the decoders' device for the rounds without the app "
                        "(cpu, cuda; default cpu: the app's servers run on the CPU here)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    users = max(1, min(MAX_USERS, args.users))
    rounds = max(1, min(MAX_ROUNDS, args.rounds))
    new_tokens = max(1, min(300, args.new_tokens))
    if args.engine_only:
        engine = engine_rounds(users, rounds, new_tokens, device=args.device)
        print(format_engine(engine, users, rounds, new_tokens, args.device))
        return 0
    try:
        result = run_bench(users, rounds, new_tokens, args.timeout, args.max_seconds)
    except Exception as exc:  # noqa: BLE001 - a server would not start, or a session could not be opened
        print(f"error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    if not args.no_engine:
        result["engine"] = engine_rounds(users, rounds, new_tokens, device=args.device)
    print(format_report(result))
    return 0
