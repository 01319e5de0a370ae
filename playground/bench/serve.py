"""`python -m playground bench serve --users 20`: the real app under many simulated users.

Starts the app (launch.py) in a subprocess on a free 127.0.0.1 port over a temp workspace,
with GRADIO_TEMP_DIR and TMPDIR pointed at temp folders, then:

1. runs ONE user alone, then N users at once (each its own gradio_client.Client, so its own
   session), with `--trainers K` extra clients holding long trainings during the first phase;
2. each user, phase A (heavy slots held by the trainers): generate 30 tokens on the shipped
   demo GPT, per-input analyze on it, list refreshes; phase B (trainers stopped): build a BPE
   tokenizer from a small pasted corpus, save it, train a few steps of a tiny preset with it,
   list refreshes;
3. every name and prompt carries the user's marker (`u07-3fa9c2`); any other marker seen in
   a user's outputs is cross-talk.

Prints per action p50/p95 latency, count and failures, cross-talk, the server's RSS (start,
end, after a settle), and temp files left, for 1 user and N users side by side, next to the
goal. It measures and reports; it asserts nothing about timing. Loopback only; every wait is
bounded and the server is stopped at the end.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import re
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from playground.settings import REPO_ROOT, SHIPPED_LIBRARY

DEMO_GPT = "gpt-python-docs-char"
MARKER_RE = re.compile(r"\b[ust]\d{2}-[0-9a-f]{6}\b")
SERVER_TIME_RE = re.compile(r"tokens in ([0-9.]+) s")  # the server's own time, in Generate's stats line
GOAL = {"users": 20, "failures": 0, "cross_talk": 0, "generate_busy_p95_s": 3.0, "rss_growth_mb": 50.0,
        "start_s": 5.0, "config_p95_s": 1.0}
CORPUS = (
    "The quick brown fox jumps over the lazy dog. {m} writes small programs in Python. "
    "A tokenizer splits text into pieces; {m} counts how often each pair of pieces appears. "
    "def add(a, b):\n    return a + b  # {m}\n"
)


@dataclass
class Options:
    """What one bench run does."""

    users: int = 20
    trainers: int = 2
    steps: int = 6  # training steps of each user's tiny run
    new_tokens: int = 30
    demo: bool = False
    single: bool = True  # run one user alone first
    action_timeout_s: float = 180.0
    start_timeout_s: float = 120.0
    settle_s: float = 5.0
    app_dir: str | None = None  # another checkout whose launch.py to serve (compare versions)
    trainer_steps: int = 100_000  # long: the trainers are stopped, not finished
    paint_rounds: int = 3  # rounds of N browsers loading the page / config at once (modes interleaved)


@dataclass
class Pass:
    """Figures of one pass (1 user, or N users)."""

    users: int
    latencies: dict[str, list[float]] = field(default_factory=dict)
    failures: dict[str, list[str]] = field(default_factory=dict)
    cross_talk: list[str] = field(default_factory=list)
    rss_start_mb: float | None = None
    rss_end_mb: float | None = None
    rss_settled_mb: float | None = None
    gradio_temp_files: int = 0
    server_tmp_files: int = 0
    workspace_tmp_entries: int = 0
    wall_s: float = 0.0
    server_cpu_s: float | None = None  # CPU time the server process used during the pass
    clients_cpu_s: float | None = None  # CPU time this harness (the simulated users) used: same cores
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record(self, action: str, seconds: float | None, error: str | None = None) -> None:
        with self._lock:
            self.latencies.setdefault(action, [])
            self.failures.setdefault(action, [])
            if error is None and seconds is not None:
                self.latencies[action].append(seconds)
            else:
                self.failures[action].append(error or "failed")

    def talk(self, item: str) -> None:
        with self._lock:
            self.cross_talk.append(item)

    def summary(self) -> dict[str, Any]:
        """Plain figures (JSON-ready)."""
        actions = {}
        for action in sorted(set(self.latencies) | set(self.failures)):
            lat = sorted(self.latencies.get(action, []))
            actions[action] = {"count": len(lat) + len(self.failures.get(action, [])), "p50_s": _pct(lat, 50),
                               "p95_s": _pct(lat, 95), "failures": len(self.failures.get(action, [])),
                               "errors": sorted(set(self.failures.get(action, [])))[:5]}
        growth = (None if self.rss_settled_mb is None or self.rss_start_mb is None
                  else round(self.rss_settled_mb - self.rss_start_mb, 1))
        return {"users": self.users, "actions": actions, "failures": sum(a["failures"] for a in actions.values()),
                "cross_talk": len(self.cross_talk), "cross_talk_examples": self.cross_talk[:5],
                "rss_start_mb": self.rss_start_mb, "rss_end_mb": self.rss_end_mb,
                "rss_after_users_left_mb": self.rss_settled_mb, "rss_growth_mb": growth,
                "gradio_temp_files": self.gradio_temp_files, "server_tmp_files": self.server_tmp_files,
                "workspace_tmp_entries": self.workspace_tmp_entries, "wall_s": round(self.wall_s, 1),
                "server_cpu_s": self.server_cpu_s, "clients_cpu_s": self.clients_cpu_s}


def _own_cpu_s() -> float:
    """CPU seconds this process (the harness and its client threads) has used."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _pct(values: list[float], q: int) -> float | None:
    if not values:
        return None
    if len(values) == 1:
        return round(values[0], 3)
    return round(statistics.quantiles(values, n=100, method="inclusive")[q - 1], 3)


# -- the server ----------------------------------------------------------------------------------

def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Server:
    """The app in a subprocess, and the folders it writes to."""

    proc: subprocess.Popen
    url: str
    root: Path
    workspace: Path
    gradio_tmp: Path
    tmp: Path
    start_s: float | None = None  # process start to the first /config answered

    def rss_mb(self) -> float | None:
        """VmRSS of the server process in MB (None once it is gone)."""
        try:
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return round(int(line.split()[1]) / 1024, 1)
        except OSError:
            return None
        return None

    def cpu_s(self) -> float | None:
        """User + system CPU seconds the server process has used so far (None once it is gone)."""
        try:
            fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def temp_counts(self) -> tuple[int, int, int]:
        """(files under GRADIO_TEMP_DIR, files under the server's TMPDIR, hidden .tmp-* in the workspace)."""
        def files(folder: Path) -> int:
            return sum(1 for p in folder.rglob("*") if p.is_file()) if folder.exists() else 0

        hidden = sum(1 for _ in self.workspace.rglob(".tmp-*")) if self.workspace.exists() else 0
        return files(self.gradio_tmp), files(self.tmp), hidden

    def log_tail(self, n: int = 20) -> str:
        try:
            return "\n".join((self.root / "server.log").read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    def stop(self) -> None:
        """Stop the server (SIGINT, then SIGKILL after 10 s)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


def start_server(root: Path, demo: bool, timeout_s: float, app_dir: Path | None = None) -> Server:
    """Launch launch.py (this checkout's, or `app_dir`'s) on a free loopback port over
    `root`/workspace; wait until it answers."""
    app_dir = Path(app_dir or REPO_ROOT)
    port = free_port()
    workspace, gradio_tmp, tmp = root / "workspace", root / "gradio-tmp", root / "tmp"
    for folder in (gradio_tmp, tmp):
        folder.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "SPACE_ID"}
    env.update(GRADIO_TEMP_DIR=str(gradio_tmp), TMPDIR=str(tmp), GRADIO_ANALYTICS_ENABLED="False",
               HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1")
    cmd = [sys.executable, str(app_dir / "launch.py"), "--host", "127.0.0.1", "--port", str(port),
           "--workspace", str(workspace), "--device", "cpu"] + (["--demo"] if demo else [])
    log = open(root / "server.log", "wb")  # noqa: SIM115 - lives as long as the server
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=str(app_dir))
    server = Server(proc, f"http://127.0.0.1:{port}/", root, workspace, gradio_tmp, tmp)
    started = time.monotonic()
    deadline = started + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the app exited with {proc.returncode}:\n{server.log_tail()}")
        try:
            with urllib.request.urlopen(server.url + "config", timeout=5) as response:
                if response.status == 200:
                    server.start_s = time.monotonic() - started
                    return server
        except OSError:
            time.sleep(0.1)
    server.stop()
    raise RuntimeError(f"the app did not answer within {timeout_s:.0f} s:\n{server.log_tail()}")


# -- first paint ----------------------------------------------------------------------------------

PAINT_MODES = (("page", "", "gzip"), ("page", "", "identity"), ("config", "config", "gzip"),
               ("config", "config", "identity"))


def fetch(url: str, encoding: str, timeout_s: float, cookie: str = "") -> tuple[float, int]:
    """(seconds, bytes on the wire) of one GET asking for `encoding` (gzip or identity)."""
    headers = {"Accept-Encoding": encoding, **({"Cookie": cookie} if cookie else {})}
    request = urllib.request.Request(url, headers=headers)
    t0 = time.perf_counter()
    with urllib.request.urlopen(request, timeout=timeout_s) as response:
        size = len(response.read())
    return time.perf_counter() - t0, size


# How each simulated browser differs from the others: not at all; as real visitors do (cookies of
# their own that the page does not depend on, e.g. a Space proxy's, and a deep-link query); and the
# peer, a login cookie of its own each (gradio then builds the page for each).
PAINT_VISITORS = ("", " visitors", " rebuilt")


def _visitor(kind: str, i: int) -> tuple[str, str]:
    """(query, cookie) of browser `i` of that kind."""
    tag = f"{secrets.token_hex(4)}{i}"
    if kind == " visitors":
        return ("?tab=train" if i % 2 else ""), f"spaces-jwt={tag}; _ga={tag}"
    if kind == " rebuilt":
        return "", f"access-token-bench={tag}"
    return "", ""


def first_paint(url: str, browsers: int, rounds: int, timeout_s: float) -> dict[str, Any]:
    """`browsers` GETs of the page (`/`) or `/config` at once, per encoding, interleaved over
    `rounds` rounds: identical requests; requests as distinct visitors send them (cookies of their
    own, a deep-link query: the server may still answer from its page cache); and the peer, a
    login cookie of its own per request (the page rebuilt for each)."""
    times: dict[str, list[float]] = {}
    sizes: dict[str, int] = {}
    with ThreadPoolExecutor(max_workers=browsers) as pool:
        for _ in range(rounds):
            for what, path, encoding in PAINT_MODES:
                for kind in PAINT_VISITORS:
                    label = f"{what} {encoding}{kind}"
                    barrier = threading.Barrier(browsers)

                    def one(i: int, path: str = path, encoding: str = encoding, kind: str = kind,
                            barrier: threading.Barrier = barrier) -> tuple[float, int]:
                        query, cookie = _visitor(kind, i)
                        barrier.wait(timeout=timeout_s)
                        return fetch(url + path + query, encoding, timeout_s, cookie)

                    for seconds, size in pool.map(one, range(browsers)):
                        times.setdefault(label, []).append(seconds)
                        sizes[label] = size
    return {label: {"p50_s": _pct(values, 50), "p95_s": _pct(values, 95), "bytes": sizes[label],
                    "count": len(values)} for label, values in times.items()}


# -- clients ---------------------------------------------------------------------------------------

def _client(url: str) -> Any:
    from gradio_client import Client

    return Client(url, verbose=False, download_files=False, analytics_enabled=False)


def _choices(update: Any) -> list[str]:
    """Choice values of a dropdown update as gradio_client returns it."""
    if isinstance(update, (list, tuple)) and update and isinstance(update[0], dict):
        update = update[0]
    if isinstance(update, dict) and "choices" in update:
        return [c[0] if isinstance(c, (list, tuple)) else c for c in update["choices"]]
    return []


def _tiny_toml(tokenizer: str, steps: int, eval_interval: int | None = None) -> str:
    """A tiny GPT on the built-in python-docs corpus, `steps` steps."""
    from playground.config import load_preset
    from playground.training.config import preset_to_toml

    preset = load_preset("nanogpt-cpu-tiny")
    preset.model.update(n_layer=1, n_head=2, d_model=32, block_size=32)
    preset.data.update(corpus="python-docs", tokenizer=tokenizer)
    preset.train.update(max_steps=steps, batch_size=4, warmup_steps=0, eval_interval=eval_interval or steps,
                        eval_iters=2, log_interval=1, preview=False)
    return preset_to_toml(preset)


class User:
    """One simulated user: its own client (session) and marker."""

    def __init__(self, url: str, marker: str, bench: Pass, timeout_s: float) -> None:
        self.marker, self.bench, self.timeout_s = marker, bench, timeout_s
        self.client = _client(url)

    def call(self, action: str, *args: Any, api_name: str, check: Callable[[Any], str | None] | None = None) -> Any:
        """One timed call; failures, timeouts and foreign markers are recorded, never raised."""
        t0 = time.perf_counter()
        job = self.client.submit(*args, api_name=api_name)
        try:
            result = job.result(timeout=self.timeout_s)
        except TimeoutError:
            job.cancel()
            self.bench.record(action, None, f"no answer within {self.timeout_s:.0f} s")
            return None
        except Exception as exc:  # noqa: BLE001 - every failure is a figure
            self.bench.record(action, None, f"{type(exc).__name__}: {str(exc)[:160]}")
            return None
        seconds = time.perf_counter() - t0
        problem = check(result) if check else None
        self.bench.record(action, None if problem else seconds, problem)
        self.scan(action, result)
        return result

    def scan(self, action: str, result: Any) -> None:
        """Record every other user's marker found in `result`."""
        text = json.dumps(result, default=str)
        for found in set(MARKER_RE.findall(text)) - {self.marker}:
            self.bench.talk(f"{self.marker} saw {found} in {action}")

    def light_phase(self, new_tokens: int) -> None:
        """Generate and analyze on the shipped demo GPT (while the heavy slots are busy)."""
        m = self.marker
        self.call("list_models", None, api_name="/refresh_generate_models",
                  check=lambda r: None if DEMO_GPT in _choices(r) else f"{DEMO_GPT} missing from the model list")
        self.call("generate_busy", DEMO_GPT, f"# {m}\ndef ", 0.8, 40, 1.0, 0.0, 1.0, 0.0, 0.0, new_tokens,
                  int(m[-6:], 16) % 10_000, 1, "", 1, 0.0, api_name="/generate_text",
                  check=lambda r: None if r and "data-index=" in str(r[0]) else "no tokens in the output")
        self.call("list_models", None, api_name="/refresh_analyze_models")
        self.call("analyze_select", DEMO_GPT, api_name="/analyze_checkpoint")
        self.call("analyze", DEMO_GPT, f"# {m} for x in range", None, None, "", "", ["attention", "rollout"], "", "",
                  20, False, api_name="/analyze", check=lambda r: None if r and r[0] else "empty summary")

    def heavy_phase(self, steps: int) -> None:
        """Build and save a tokenizer, train a tiny run with it, check the lists."""
        m = self.marker
        tok, run = f"{m}-tok", f"{m}-run"
        built = self.call("tokenizer_build", "paste", [], CORPUS.format(m=m) * 8, "bpe", 300, 2, "none",
                          "byte-level", ["<pad>"], "bytes", api_name="/tokenizer_build",
                          check=lambda r: None if "Built" in str(r) else f"unexpected status {str(r)[:80]!r}")
        if built is not None:
            self.call("tokenizer_save", tok, False, api_name="/tokenizer_save")
        self.call("list_tokenizers", None, None, None, api_name="/refresh_tokenizer_saved")
        self.call("train", "nanogpt-cpu-tiny", _tiny_toml(tok if built is not None else "char", steps), run, False,
                  api_name="/train_start",
                  check=lambda r: None if r and 'data-state="done"' in str(r[0]) else "the run did not finish")
        self.call("list_models", None, api_name="/refresh_generate_models",
                  check=lambda r: None if run in _choices(r) else "own model missing from the model list")
        self.call("list_runs", [], api_name="/refresh_train_runs")

    def close(self) -> None:
        try:
            self.client.close()
        except Exception:  # noqa: BLE001 - closing is best effort
            pass


class Trainer:
    """A client that holds one heavy slot with a long training until stopped."""

    def __init__(self, url: str, marker: str, steps: int) -> None:
        self.marker = marker
        self.client = _client(url)
        self.job = self.client.submit("nanogpt-cpu-tiny", _long_toml(steps), f"{marker}-long", False,
                                      api_name="/train_start")

    def wait_started(self, timeout_s: float) -> bool:
        """True once the run has streamed its first update (it holds a slot)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.job.outputs() or self.job.done():
                return not self.job.done() or bool(self.job.outputs())
            time.sleep(0.2)
        return False

    def stop(self, timeout_s: float) -> str | None:
        """Press Stop for this session; an error message, or None when the run says it stopped."""
        problem = None
        try:
            status = str(self.client.predict(api_name="/train_stop"))
            if 'data-state="stopped"' not in status:
                problem = f"Stop answered {status[:120]!r}"
        except Exception as exc:  # noqa: BLE001 - every failure is a figure
            problem = f"stop failed: {str(exc)[:160]}"
        deadline = time.monotonic() + min(timeout_s, 10.0)
        while not self.job.done() and time.monotonic() < deadline:
            time.sleep(0.2)
        if not self.job.done():  # the stream may stay open after a cancel; drop it
            self.job.cancel()
        try:
            self.client.close()
        except Exception:  # noqa: BLE001 - closing is best effort
            pass
        return problem


def _long_toml(steps: int) -> str:
    """The nanogpt-cpu-tiny preset on python-docs, `steps` steps, no evaluation before the end."""
    from playground.config import load_preset
    from playground.training.config import preset_to_toml

    preset = load_preset("nanogpt-cpu-tiny")
    preset.data.update(corpus="python-docs", tokenizer="char")
    preset.train.update(max_steps=steps, eval_interval=steps, warmup_steps=0, preview=False)
    return preset_to_toml(preset)


def _ensure_demo_model(server: Server, timeout_s: float) -> str:
    """How the demo GPT is reachable: the server's read-only library, or (older servers) a copy."""
    client = _client(server.url)
    try:
        if DEMO_GPT in _choices(client.predict(None, api_name="/refresh_generate_models")):
            return "library"
        target = server.workspace / "models" / DEMO_GPT
        if not target.exists():
            shutil.copytree(SHIPPED_LIBRARY / "models" / DEMO_GPT, target)
        return "copied into the workspace (the server does not list its library)"
    finally:
        client.close()


def run_pass(server: Server, n_users: int, prefix: str, opts: Options) -> Pass:
    """One pass: K trainers take the heavy slots; N users run phase A; trainers stop; phase B."""
    bench = Pass(users=n_users)
    bench.rss_start_mb = server.rss_mb()
    cpu0, mine0 = server.cpu_s(), _own_cpu_s()
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(1, n_users)) as pool:
        users = list(pool.map(lambda i: User(server.url, f"{prefix}{i:02d}-{secrets.token_hex(3)}", bench,
                                             opts.action_timeout_s), range(n_users)))
        trainers = [Trainer(server.url, f"t{i:02d}-{secrets.token_hex(3)}", opts.trainer_steps)
                    for i in range(opts.trainers)]
        for trainer in trainers:
            started = trainer.wait_started(opts.start_timeout_s)
            bench.record("trainer_start", 0.0 if started else None, None if started else "the long run did not start")
        list(pool.map(lambda u: u.light_phase(opts.new_tokens), users))
        for trainer in trainers:
            problem = trainer.stop(opts.action_timeout_s)
            bench.record("trainer_stop", None if problem else 0.0, problem)
        list(pool.map(lambda u: u.heavy_phase(opts.steps), users))
        for user in users:
            user.close()
    bench.wall_s = time.perf_counter() - t0
    cpu1 = server.cpu_s()
    bench.server_cpu_s = round(cpu1 - cpu0, 1) if cpu0 is not None and cpu1 is not None else None
    bench.clients_cpu_s = round(_own_cpu_s() - mine0, 1)
    bench.rss_end_mb = server.rss_mb()
    time.sleep(opts.settle_s)
    bench.rss_settled_mb = server.rss_mb()
    bench.gradio_temp_files, bench.server_tmp_files, bench.workspace_tmp_entries = server.temp_counts()
    return bench


def run_bench(opts: Options) -> dict[str, Any]:
    """Start the server, run the passes, stop it; the figures as a dict."""
    root = Path(tempfile.mkdtemp(prefix="playground-bench-serve-"))
    try:
        server = start_server(root, opts.demo, opts.start_timeout_s, Path(opts.app_dir) if opts.app_dir else None)
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    try:
        paint = first_paint(server.url, opts.users, opts.paint_rounds, opts.action_timeout_s)
        demo_model = _ensure_demo_model(server, opts.action_timeout_s)
        rss_boot = server.rss_mb()
        passes = []
        if opts.single:
            passes.append(run_pass(server, 1, "s", opts))
        passes.append(run_pass(server, opts.users, "u", opts))
        alive = server.proc.poll() is None
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
    return {"options": {k: v for k, v in asdict(opts).items()}, "start_s": server.start_s, "first_paint": paint,
            "demo_model": demo_model, "rss_boot_mb": rss_boot,
            "server_alive_at_end": alive, "passes": [p.summary() for p in passes], "goal": GOAL}


# -- report ---------------------------------------------------------------------------------------

def _fmt_action(a: dict[str, Any] | None) -> str:
    if not a:
        return "-"
    p50 = "-" if a["p50_s"] is None else f"{a['p50_s']:.2f}"
    p95 = "-" if a["p95_s"] is None else f"{a['p95_s']:.2f}"
    return f"{p50} / {p95} s  n={a['count']} fail={a['failures']}"


def format_table(result: dict[str, Any]) -> str:
    """The side-by-side table (1 user | N users | goal)."""
    passes = result["passes"]
    heads = [f"{p['users']} user{'s' if p['users'] != 1 else ''}" for p in passes]
    rows: list[tuple[str, list[str], str]] = []
    actions = sorted({a for p in passes for a in p["actions"]})
    for action in actions:
        goal = f"p95 <= {GOAL['generate_busy_p95_s']:.0f} s, 0 fail" if action == "generate_busy" else "0 fail"
        rows.append((f"{action} p50/p95", [_fmt_action(p["actions"].get(action)) for p in passes], goal))

    def mb(v: float | None) -> str:
        return "-" if v is None else f"{v:.0f} MB"

    rows += [
        ("failures (all actions)", [str(p["failures"]) for p in passes], "0"),
        ("cross-talk", [str(p["cross_talk"]) for p in passes], "0"),
        ("server RSS at start", [mb(p["rss_start_mb"]) for p in passes], ""),
        ("server RSS at end", [mb(p["rss_end_mb"]) for p in passes], ""),
        ("RSS after users left", [mb(p["rss_after_users_left_mb"]) for p in passes], ""),
        ("RSS growth after users left", [mb(p["rss_growth_mb"]) for p in passes], f"<= {GOAL['rss_growth_mb']:.0f} MB"),
        ("files in GRADIO_TEMP_DIR", [str(p["gradio_temp_files"]) for p in passes], ""),
        ("files in server TMPDIR", [str(p["server_tmp_files"]) for p in passes], ""),
        ("workspace .tmp-* left", [str(p["workspace_tmp_entries"]) for p in passes], "0"),
        ("wall time", [f"{p['wall_s']:.0f} s" for p in passes], ""),
        ("server CPU time (trainings' child processes not counted)",
         [f"{p['server_cpu_s']:.0f} s" if p.get("server_cpu_s") is not None else "-" for p in passes], ""),
        ("harness CPU time (the simulated users, same cores)",
         [f"{p['clients_cpu_s']:.0f} s" if p.get("clients_cpu_s") is not None else "-" for p in passes], ""),
    ]
    width = max(len(r[0]) for r in rows) + 2
    colw = max([len(h) for h in heads] + [len(c) for r in rows for c in r[1]]) + 2
    lines = [f"{'':{width}}" + "".join(f"{h:{colw}}" for h in heads) + f"goal ({GOAL['users']} users)"]
    lines += [f"{name:{width}}" + "".join(f"{c:{colw}}" for c in cells) + goal for name, cells, goal in rows]
    opts = result["options"]
    paint = result.get("first_paint") or {}
    if result.get("start_s") is not None:
        lines.append(f"\nfirst paint: process start to /config answered {result['start_s']:.1f} s "
                     f"(goal <= {GOAL['start_s']:.0f} s)")
    for encoding, f in paint.items():
        lines.append(f"  {opts['users']} browsers at once, {encoding:<24}: p50 {f['p50_s']:.2f} s, "
                     f"p95 {f['p95_s']:.2f} s, {f['bytes']:,} bytes on the wire, n={f['count']} "
                     f"(goal p95 <= {GOAL['config_p95_s']:.0f} s)")
    lines.append(f"\n{opts['trainers']} trainer(s) held the heavy slots during generate_busy/analyze; demo GPT: "
                 f"{result['demo_model']}; server alive at end: {result['server_alive_at_end']}")
    for p in passes:
        for item in p["cross_talk_examples"]:
            lines.append(f"cross-talk ({p['users']} users): {item}")
        for action, a in p["actions"].items():
            for err in a["errors"]:
                lines.append(f"failure ({p['users']} users) {action}: {err}")
    return "\n".join(lines)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("serve", help="the real app under N simulated users: latency, failures, "
                                                 "cross-talk, memory, temp files")
    parser.add_argument("--users", type=int, default=20, help="simulated users at once (default 20)")
    parser.add_argument("--trainers", type=int, default=2,
                        help="extra clients holding long trainings during generate/analyze (default 2, the "
                             "heavy slots of a full server; 1 with --demo)")
    parser.add_argument("--steps", type=int, default=6, help="training steps of each user's tiny run (default 6)")
    parser.add_argument("--new-tokens", type=int, default=30, help="tokens per generate (default 30)")
    parser.add_argument("--demo", action="store_true", help="start the server with --demo caps")
    parser.add_argument("--no-single", action="store_true", help="skip the one-user pass")
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds one call may take (default 180)")
    parser.add_argument("--settle", type=float, default=5.0, help="seconds to wait before the last RSS (default 5)")
    parser.add_argument("--app", default=None, metavar="DIR",
                        help="serve another checkout's launch.py (e.g. a git worktree of an older commit) to compare")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    opts = Options(users=max(1, args.users), trainers=max(0, args.trainers), steps=max(1, args.steps),
                   new_tokens=max(1, args.new_tokens), demo=args.demo, single=not args.no_single,
                   action_timeout_s=args.timeout, settle_s=max(0.0, args.settle),
                   app_dir=args.app)
    try:
        result = run_bench(opts)
    except RuntimeError as exc:  # the app would not start
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(result, indent=2) if args.json else format_table(result))
    return 0
