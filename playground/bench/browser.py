"""`python -m playground bench browser`: does the page stay light over a long session?

Serves the real app in this process on a free 127.0.0.1 port over a temp root, drives ONE tab
of Debian's headless Chromium (Selenium, never a download) through a scripted long session,
round after round:

- Train: `--trainings` runs of `--steps` steps of nanogpt-cpu-tiny (live loss / lr / throughput
  curves, an evaluation every `--eval-every` steps), each under a new name;
- Generate: `--generations` generations of the default 200 tokens on the shipped demo GPT;
- Tokenizer: build a BPE tokenizer (`--vocab`), then Encode, Merge walk, Vocabulary and Merges
  filters, Save;
- Analyze: Explain one prompt on the demo GPT.

After the start and after each phase it prints the renderer's figures (after a forced garbage
collection, via the Chrome DevTools Protocol): JS heap used, DOM nodes, JS event listeners,
documents, layouts so far; and the click-to-result time of a fixed cheap action (tokenizer Save,
median of `--repeats`), beside the same action in a fresh tab opened in the same browser at
that moment (click for click, alternating tabs, so both meet the same load); and how many
loading statuses gradio's frontend handed to components during each Save in either tab
(`Page.calls`: exact call counts of its `update_state`, each of which searches the component
tree). At the end, `--generate-probes` Generates of 200 tokens in the session tab and a fresh
tab, alternating: the time until the page shows each beside the server's own time for it. It
measures and prints; it asserts nothing (tests/ui/test_browser_long_session.py
asserts on the same figures). Loopback only; every wait is bounded.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import socket
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from playground.bench.serve import DEMO_GPT, SERVER_TIME_RE

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
BROWSER_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-dev-shm-usage", "--disable-component-update", "--no-first-run",
                 "--window-size=1400,1000", "--enable-precise-memory-info")
PRESET = "nanogpt-cpu-tiny"
GOAL = {"js_heap_mb": 300.0, "probe_vs_fresh": 1.2}
# Gradio's frontend hands a component its loading status (and searches the component tree for
# it) in `update_state`: how often a click runs it is the deterministic part of its cost.
HANDOVER_FN = "update_state"
METRICS = ("JSHeapUsedSize", "Nodes", "JSEventListeners", "Documents", "LayoutCount", "RecalcStyleCount")

# Click a button, then resolve once `css` holds `marker` (a MutationObserver plus a 50 ms poll);
# the wall time around this call is the click-to-result time (a busy main thread delays both).
CLICK_AND_WAIT = """
const [buttonId, css, marker, done] = arguments;
const found = () => Array.from(document.querySelectorAll(css)).some(e => (e.textContent || '').includes(marker));
let finished = false;
const finish = () => { if (!finished) { finished = true; observer.disconnect(); clearInterval(timer); done(true); } };
const observer = new MutationObserver(() => { if (found()) finish(); });
observer.observe(document.body, {subtree: true, childList: true, characterData: true});
const timer = setInterval(() => { if (found()) finish(); }, 50);
document.getElementById(buttonId).click();
"""


@dataclass
class Options:
    """What one bench run does."""

    rounds: int = 2
    trainings: int = 1  # per round
    steps: int = 20  # per training
    eval_every: int = 10
    generations: int = 3  # per round
    vocab: int = 2000
    repeats: int = 6  # probe clicks per measurement in each tab, alternating tabs; the median is kept
    fresh: bool = True  # measure the probe in a fresh tab beside the session tab
    generate_probes: int = 4  # at the end: Generates in each tab, alternating (the slow action)
    timeout_s: float = 240.0  # one action at most


@dataclass
class Point:
    """The session tab's figures after one phase, and the probe in a fresh tab then."""

    phase: str
    heap_mb: float
    nodes: int
    listeners: int
    documents: int
    layouts: int
    document_clicks: int
    probe_s: float
    fresh_probe_s: float | None = None
    probe_all: list[float] = field(default_factory=list)
    fresh_all: list[float] = field(default_factory=list)
    elapsed_s: float = 0.0
    handovers: float = 0.0  # loading statuses handed to components per Save (HANDOVER_FN calls)
    fresh_handovers: float | None = None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve(root: Path) -> Iterator[str]:
    """The real app over `root` (as launch.py serves it) on a free loopback port; yields its URL."""
    from playground.settings import make_settings
    from playground.ui.app import build_app, launch_options, prepare_server

    settings = make_settings(root / "ws", device="cpu", app=True)
    prepare_server(settings)
    app = build_app(settings)
    port = free_port()
    app.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, **launch_options())
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        app.close()


def new_browser() -> Any:
    """A headless Chromium on the system's driver path (Selenium Manager never runs)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in BROWSER_FLAGS:
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    driver.set_script_timeout(240)
    return driver


class Page:
    """One tab of the app, driven by Selenium: actions by elem_id, figures by CDP."""

    def __init__(self, driver: Any, url: str, timeout_s: float = 240.0) -> None:
        self.driver, self.url, self.timeout_s = driver, url, timeout_s
        self.saves = 0

    # -- navigation ----------------------------------------------------------------------------
    def open(self) -> None:
        from selenium.webdriver.common.by import By

        self.driver.get(self.url)
        self.wait(lambda d: d.find_elements(By.CSS_SELECTOR, "button[role='tab']"), 60)
        self.driver.execute_cdp_cmd("Performance.enable", {})

    def wait(self, condition: Callable[[Any], Any], timeout: float | None = None) -> Any:
        from selenium.webdriver.support.ui import WebDriverWait

        return WebDriverWait(self.driver, timeout or self.timeout_s, poll_frequency=0.2).until(condition)

    def tab(self, label: str) -> None:
        """Select the top-level (or nested) tab whose button reads `label`."""
        from selenium.webdriver.common.by import By

        def button(d: Any) -> Any:
            for b in d.find_elements(By.CSS_SELECTOR, "button[role='tab']"):
                if b.text.strip() == label and b.is_displayed():
                    return b
            return None

        self.wait(button, 30).click()
        self.wait(lambda d: (button(d) or d).get_attribute("aria-selected") == "true", 30)

    def text(self, css: str) -> str:
        return str(self.driver.execute_script(
            "return Array.from(document.querySelectorAll(arguments[0])).map(e => e.textContent).join(' ')", css))

    def until_text(self, css: str, *needles: str) -> str:
        """Wait until the text of `css` contains any of `needles`; returns that text."""
        self.wait(lambda d: any(n in self.text(css) for n in needles))
        return self.text(css)

    def click(self, elem_id: str) -> None:
        self.driver.execute_script("document.getElementById(arguments[0]).click()", elem_id)

    def type_into(self, elem_id: str, value: str, enter: bool = False) -> None:
        from selenium.webdriver.common.by import By
        from selenium.webdriver.common.keys import Keys

        box = self.driver.find_element(By.CSS_SELECTOR, f"#{elem_id} textarea, #{elem_id} input")
        box.clear()
        box.send_keys(value + (Keys.ENTER if enter else ""))

    def number(self, elem_id: str, value: float) -> None:
        """Set a Number or Slider field (its number box) and commit it (blur fires .input)."""
        from selenium.webdriver.common.by import By
        from selenium.webdriver.common.keys import Keys

        box = self.driver.find_element(By.CSS_SELECTOR, f"#{elem_id} input[type='number']")
        box.send_keys(Keys.CONTROL, "a")
        box.send_keys(str(value), Keys.TAB)

    def choose(self, elem_id: str, option: str) -> None:
        """Pick `option` in the dropdown `elem_id`."""
        from selenium.webdriver.common.by import By

        box = self.driver.find_element(By.CSS_SELECTOR, f"#{elem_id} input")
        if box.get_attribute("value") == option:
            return
        box.click()

        def item(d: Any) -> Any:
            for li in d.find_elements(By.CSS_SELECTOR, "ul[role='listbox'] li"):
                if li.text.strip() == option:
                    return li
            return None

        self.wait(item, 60).click()
        self.wait(lambda d: box.get_attribute("value") == option, 30)

    def checkbox(self, elem_id: str, on: bool) -> None:
        from selenium.webdriver.common.by import By

        box = self.driver.find_element(By.CSS_SELECTOR, f"#{elem_id} input[type='checkbox']")
        if box.is_selected() != on:
            box.click()

    # -- figures -------------------------------------------------------------------------------
    def metrics(self) -> dict[str, float]:
        """The renderer's CDP Performance metrics after a forced garbage collection."""
        for _ in range(2):
            self.driver.execute_cdp_cmd("HeapProfiler.collectGarbage", {})
        raw = self.driver.execute_cdp_cmd("Performance.getMetrics", {})["metrics"]
        return {m["name"]: m["value"] for m in raw if m["name"] in METRICS}

    def document_listeners(self) -> Counter:
        """Event listeners on `document` by type (vega-embed's actions menu adds a click one per chart)."""
        handle = self.driver.execute_cdp_cmd("Runtime.evaluate", {"expression": "document"})["result"]["objectId"]
        found = self.driver.execute_cdp_cmd("DOMDebugger.getEventListeners", {"objectId": handle})["listeners"]
        return Counter(listener["type"] for listener in found)

    def calls(self, action: Callable[[], Any], name: str = HANDOVER_FN) -> tuple[Any, int]:
        """What `action()` returns, and how many times the page's JS ran functions called `name`
        meanwhile (CDP precise coverage: exact counts, not samples)."""
        cdp = self.driver.execute_cdp_cmd
        cdp("Profiler.enable", {})
        cdp("Profiler.startPreciseCoverage", {"callCount": True, "detailed": False})
        try:
            cdp("Profiler.takePreciseCoverage", {})  # counts start from here
            result = action()
            scripts = cdp("Profiler.takePreciseCoverage", {})["result"]
        finally:
            cdp("Profiler.stopPreciseCoverage", {})
        count = sum(f["ranges"][0]["count"] for s in scripts for f in s["functions"]
                    if f["functionName"] == name and f["ranges"])
        return result, count

    def probe(self, repeats: int) -> list[float]:
        """Click-to-result seconds of a tokenizer Save (under two alternating names), `repeats` times."""
        times = []
        self.tab("Tokenizer")
        self.checkbox("tok-overwrite", True)
        for _ in range(repeats):
            self.saves += 1
            name = f"probe-{self.saves % 2}"
            self.type_into("tok-name", name)
            time.sleep(0.3)  # the textbox's change reaches the app before the click
            t0 = time.perf_counter()
            self.driver.execute_async_script(CLICK_AND_WAIT, "tok-save", "#tok-save-status", f"Saved as {name}")
            times.append(time.perf_counter() - t0)
            time.sleep(1.0)  # the save's follow-ups (tables, lists) settle before the next click
        return times

    # -- session phases ------------------------------------------------------------------------
    def train(self, name: str, steps: int, eval_every: int) -> None:
        self.tab("Train")
        self.number("train-train-max-steps", steps)
        self.number("train-train-eval-interval", eval_every)
        self.number("train-train-warmup-steps", min(10, steps // 2))
        self.type_into("train-name", name)
        self.checkbox("train-overwrite", True)
        time.sleep(0.5)
        before = self.text("#train-status")  # the previous run's "finished" line until Start replaces it
        self.click("train-start")
        self.wait(_after_change(lambda: self.text("#train-status"), before,
                                lambda s: any(w in s for w in ("finished", "error", "not started"))))

    def generate(self, model: str, count: int) -> None:
        self.tab("Generate")
        self.choose("generate-model", model)
        self.until_text("#generate-info", model)
        for i in range(count):
            self._generate_once(f"def f{i}(x):\n    return")

    def _generate_once(self, prompt: str) -> tuple[float, str]:
        """Type `prompt`, press Generate (the model chosen, the default 200 tokens), wait for
        the stats line of the result: click-to-result seconds and that line."""
        self.type_into("generate-prompt", prompt)
        time.sleep(0.3)
        before = self.text("#generate-stats")
        t0 = time.perf_counter()
        self.click("generate-run")
        self.wait(_after_change(lambda: self.text("#generate-stats"), before,
                                lambda s: "generating" not in s and "tokens" in s))
        return time.perf_counter() - t0, self.text("#generate-stats")

    def probe_generate(self) -> tuple[float, float]:
        """One Generate with a fixed prompt: click-to-result seconds, and the server's own
        generation time from the stats line."""
        self.tab("Generate")
        shown, stats = self._generate_once("def probe(x):\n    return")
        server = SERVER_TIME_RE.search(stats)
        return shown, float(server.group(1)) if server else float("nan")

    def tokenizer(self, vocab: int) -> None:
        self.tab("Tokenizer")
        self.number("tok-vocab-size", vocab)
        time.sleep(0.3)
        before = self.text("#tok-status")
        self.click("tok-build")
        self.wait(_after_change(lambda: self.text("#tok-status"), before, lambda s: "Built" in s))
        self.until_text("#tok-summary", "ocabulary")
        self.click("tok-encode-btn")
        self.wait(lambda d: self.text("#tok-encode-html").strip())
        for label, query_id, query in (("Merge walk", None, None), ("Vocabulary", "tok-vocab-query", "in"),
                                       ("Merges", "tok-merges-query", "e")):
            self.tab(label)
            if query_id:
                self.type_into(query_id, query)
                time.sleep(1.0)
            else:
                self.click("tok-walk-btn")
                time.sleep(1.0)
        self.tab("Encode")

    def analyze(self, model: str, text: str) -> None:
        self.tab("Analyze")
        self.choose("analyze-model", model)
        time.sleep(0.5)
        self.type_into("analyze-text", text)
        time.sleep(0.3)
        before = self.text("#analyze-summary")
        self.click("analyze-run")
        # The summary's last line ("Time: ...") comes with the result; the progress messages
        # shown in the same box meanwhile do not end the wait (a probe would meet the analysis).
        self.wait(_after_change(lambda: self.text("#analyze-summary"), before, lambda s: "Time: " in s))


def _after_change(read: Callable[[], str], before: str, finished: Callable[[str], bool]) -> Callable[[Any], bool]:
    """A wait condition: the text left `before` at least once (a click blanks or replaces a status
    line at once) and now reads as `finished`; the result itself may read exactly as before."""
    changed = [False]

    def ready(_driver: Any) -> bool:
        text = read()
        changed[0] = changed[0] or text != before
        return changed[0] and finished(text)

    return ready


def alternate(driver: Any, url: str, page: Page, opts: Options, prepare: Callable[[Page], None],
              action: Callable[[Page], Any], n: int) -> dict[str, list[Any]]:
    """`action` in the session tab and in a new tab of the same browser (a fresh page of the same
    user, made ready by `prepare`), `n` times each in alternating order so that both meet the
    same machine; then the new tab is closed. Each tab's results, under "session" and "fresh"."""
    session = driver.current_window_handle
    driver.switch_to.new_window("tab")
    fresh_window = driver.current_window_handle
    try:
        fresh = Page(driver, url, opts.timeout_s)
        fresh.open()
        prepare(fresh)
        tabs = {"session": (page, session), "fresh": (fresh, fresh_window)}
        results: dict[str, list[Any]] = {"session": [], "fresh": []}
        for i in range(n):
            for which in (("session", "fresh") if i % 2 == 0 else ("fresh", "session")):
                tab, window = tabs[which]
                driver.switch_to.window(window)
                results[which].append(action(tab))
        return results
    finally:
        driver.switch_to.window(fresh_window)
        driver.close()
        driver.switch_to.window(session)


def interleaved_probes(driver: Any, url: str, page: Page, opts: Options) -> tuple[list[float], list[float], float, float]:
    """The Save probe in the session tab and a fresh tab (with a tokenizer built), alternating:
    times of each, and loading statuses handed over per Save in each."""
    def prepare(fresh: Page) -> None:
        fresh.tab("Tokenizer")
        fresh.number("tok-vocab-size", opts.vocab)
        time.sleep(0.3)
        fresh.click("tok-build")
        fresh.until_text("#tok-status", "Built")
        fresh.until_text("#tok-summary", "ocabulary")

    def save(tab: Page) -> tuple[float, int]:
        (t,), n = tab.calls(lambda: tab.probe(1))
        return t, n

    got = alternate(driver, url, page, opts, prepare, save, opts.repeats)
    times = {k: [t for t, _ in v] for k, v in got.items()}
    per_save = {k: sum(n for _, n in v) / opts.repeats for k, v in got.items()}
    return times["session"], times["fresh"], per_save["session"], per_save["fresh"]


@dataclass
class GenerateProbe:
    """Generates at the end of the session, in the session tab and a fresh one: click-to-result
    and the server's own time for each (s)."""

    session: list[float]
    session_server: list[float]
    fresh: list[float]
    fresh_server: list[float]


def interleaved_generations(driver: Any, url: str, page: Page, opts: Options) -> GenerateProbe:
    """`opts.generate_probes` Generates (demo GPT, fixed prompt) in the session tab and a fresh
    tab, alternating. What the issue saw slow down: a generation the server had finished long
    before the page showed it."""
    def prepare(fresh: Page) -> None:
        fresh.tab("Generate")
        fresh.choose("generate-model", DEMO_GPT)
        fresh.until_text("#generate-info", DEMO_GPT)

    got = alternate(driver, url, page, opts, prepare, Page.probe_generate, opts.generate_probes)
    return GenerateProbe([a for a, _ in got["session"]], [b for _, b in got["session"]],
                         [a for a, _ in got["fresh"]], [b for _, b in got["fresh"]])


def format_generate_probe(g: GenerateProbe) -> str:
    """The end-of-session Generate line: each tab's medians and the session tab's ratio."""
    a, b = statistics.median(g.session), statistics.median(g.fresh)
    sa, sb = statistics.median(g.session_server), statistics.median(g.fresh_server)
    return (f"Generate (200 tokens) at the end, {len(g.session)} in each tab: session tab click-to-result median "
            f"{a:.2f} s (the server's own time {sa:.2f} s), fresh tab {b:.2f} s ({sb:.2f} s): x{a / b:.2f}")


def run_session(url: str, opts: Options, report: Callable[[Point], None] = lambda p: None,
                driver: Any = None) -> tuple[list[Point], GenerateProbe | None]:
    """Drive one tab through `opts.rounds` rounds; a Point after the start and after every phase,
    and the Generates of the session tab beside a fresh tab's at the end (with `opts.fresh`)."""
    own = driver is None
    driver = driver or new_browser()
    points: list[Point] = []
    generated: GenerateProbe | None = None
    t_start = time.perf_counter()
    try:
        page = Page(driver, url, opts.timeout_s)
        page.open()
        page.tokenizer(opts.vocab)  # the probe needs a current tokenizer

        def measure(phase: str) -> None:
            fresh: list[float] = []
            fresh_handovers: float | None = None
            if opts.fresh and opts.repeats:
                probe, fresh, handovers, fresh_handovers = interleaved_probes(driver, url, page, opts)
            elif opts.repeats:
                probe, count = page.calls(lambda: page.probe(opts.repeats))
                handovers = count / opts.repeats
            else:
                probe, handovers = [0.0], 0.0
            m = page.metrics()
            point = Point(phase, m.get("JSHeapUsedSize", 0) / 2**20, int(m.get("Nodes", 0)),
                          int(m.get("JSEventListeners", 0)), int(m.get("Documents", 0)), int(m.get("LayoutCount", 0)),
                          page.document_listeners()["click"], statistics.median(probe),
                          statistics.median(fresh) if fresh else None, probe, fresh, time.perf_counter() - t_start,
                          handovers, fresh_handovers)
            points.append(point)
            report(point)

        measure("start")
        trained = 0
        for r in range(1, opts.rounds + 1):
            for _ in range(opts.trainings):
                trained += 1
                page.train(f"bench-run-{trained}", opts.steps, opts.eval_every)
            measure(f"round {r}: after {opts.trainings} trainings")
            page.generate(DEMO_GPT, opts.generations)
            measure(f"round {r}: after {opts.generations} generations")
            page.tokenizer(opts.vocab)
            measure(f"round {r}: after tokenizer views")
            page.analyze(DEMO_GPT, "def add(a, b):\n    return a + b")
            measure(f"round {r}: after an analysis")
        if opts.fresh and opts.generate_probes:
            if not opts.generations:  # the session tab's model is chosen in its Generate phase
                page.generate(DEMO_GPT, 1)
            generated = interleaved_generations(driver, url, page, opts)
    finally:
        if own:
            driver.quit()
    return points, generated


def format_point(p: Point) -> str:
    fresh = f"{p.fresh_probe_s * 1000:8.0f}" if p.fresh_probe_s is not None else "       -"
    ratio = f"{p.probe_s / p.fresh_probe_s:5.2f}" if p.fresh_probe_s else "    -"
    hand = f"{p.fresh_handovers:.0f}" if p.fresh_handovers is not None else "-"
    return (f"{p.elapsed_s:6.0f}s  {p.phase:<36} heap {p.heap_mb:7.1f} MB  nodes {p.nodes:7d}  "
            f"listeners {p.listeners:6d}  document clicks {p.document_clicks:4d}  layouts {p.layouts:6d}  "
            f"save {p.probe_s * 1000:7.0f} ms  fresh {fresh} ms  x{ratio}  "
            f"status hand-overs per save {p.handovers:6.0f} (fresh {hand})")


def run(args: argparse.Namespace) -> int:
    opts = Options(rounds=max(1, args.rounds), trainings=max(0, args.trainings), steps=max(2, args.steps),
                   eval_every=max(1, args.eval_every), generations=max(0, args.generations), vocab=args.vocab,
                   repeats=max(0, args.repeats), fresh=not args.no_fresh, generate_probes=max(0, args.generate_probes))
    print(f"goal: JS heap <= {GOAL['js_heap_mb']:.0f} MB; Save no slower than x{GOAL['probe_vs_fresh']} "
          "of a fresh tab's", flush=True)
    with tempfile.TemporaryDirectory(prefix="browser-session-") as tmp, serve(Path(tmp)) as url:
        points, generated = run_session(url, opts,
                                        report=None if args.json else lambda p: print(format_point(p), flush=True))
    if args.json:
        print(json.dumps({"points": [dataclasses.asdict(p) for p in points],
                          "generate": dataclasses.asdict(generated) if generated else None}, indent=2))
    else:
        summary = format_pooled(points)
        if summary:
            print(summary)
        if generated:
            print(format_generate_probe(generated))
    return 0


def format_pooled(points: list[Point]) -> str | None:
    """One line over every measurement after the start: all of the session tab's Save clicks
    against all of the fresh tabs' (a phase's median rests on a few clicks of ~100 ms)."""
    later = [p for p in points[1:] if p.fresh_all]
    if not later:
        return None
    mine = [t for p in later for t in p.probe_all]
    fresh = [t for p in later for t in p.fresh_all]
    a, b = statistics.median(mine), statistics.median(fresh)
    return (f"pooled after the start: session tab median {a * 1000:.0f} ms over {len(mine)} Saves, fresh tabs "
            f"{b * 1000:.0f} ms over {len(fresh)}: x{a / b:.2f}")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("browser", help="one browser tab over a long scripted session: JS heap, DOM "
                                                   "nodes, listeners, click-to-result beside a fresh tab")
    add_arguments(parser)
    parser.set_defaults(func=run)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    d = Options()
    parser.add_argument("--rounds", type=int, default=d.rounds, help=f"rounds of all phases (default {d.rounds})")
    parser.add_argument("--trainings", type=int, default=d.trainings, help=f"trainings per round (default {d.trainings})")
    parser.add_argument("--steps", type=int, default=d.steps, help=f"steps per training (default {d.steps})")
    parser.add_argument("--eval-every", type=int, default=d.eval_every, help=f"steps between evaluations (default {d.eval_every})")
    parser.add_argument("--generations", type=int, default=d.generations, help=f"generations per round (default {d.generations})")
    parser.add_argument("--vocab", type=int, default=d.vocab, help=f"BPE vocabulary size (default {d.vocab})")
    parser.add_argument("--repeats", type=int, default=d.repeats, help=f"probe clicks per measurement (default {d.repeats})")
    parser.add_argument("--generate-probes", type=int, default=d.generate_probes,
                        help=f"Generates in each tab at the end, beside a fresh tab (default {d.generate_probes})")
    parser.add_argument("--no-fresh", action="store_true", help="skip the fresh-tab probes")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m playground.bench.browser", description=__doc__.split("\n")[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
