"""Build a BPE tokenizer in a child process, so Stop can end it at any moment.

`tokenizers` learns merges in one Rust call that cannot be interrupted from Python; in a child
process it can: closing the generator (a UI's Stop), setting `cancel`, or any error in the caller
terminates the child. The child is started with the "spawn" context (the server has threads, so
never fork) and sends back progress and, at the end, the tokenizer as its JSON string (never a
pickled object or a file).

    gen = iter_build_in_child(text, options, caps)   # same events and result as bpe.iter_build
"""
from __future__ import annotations

import multiprocessing
import threading
import time
from collections.abc import Generator
from multiprocessing.connection import Connection
from typing import Any

from tokenizers import Tokenizer

from playground.errors import DataError, PlaygroundError
from playground.settings import DemoCaps
from playground.tokenization.bpe import BuildCancelled, BuildProgress, TokenizerOptions, check_build_cost, check_corpus

KILL_WAIT_S = 2.0  # after terminate(), how long to wait before kill()


def _child(conn: Connection, text: str, options: TokenizerOptions, caps: DemoCaps | None) -> None:
    """Child process body: run bpe.iter_build, sending ("progress", fields) ... then ("done", json)."""
    from playground.tokenization.bpe import iter_build

    try:
        gen = iter_build(text, options, caps)
        while True:
            try:
                event = next(gen)
            except StopIteration as stop:
                conn.send(("done", stop.value.to_str()))
                return
            conn.send(("progress", (event.phase, event.message, event.fraction, event.elapsed)))
    except PlaygroundError as exc:
        conn.send(("user-error", (type(exc).__name__, str(exc))))
    except MemoryError:
        conn.send(("user-error", ("TooBigError", "Building this tokenizer ran out of memory on this server; "
                                  "use a smaller corpus or vocabulary.")))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent, which raises
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        conn.close()


def _error_class(name: str) -> type[PlaygroundError]:
    from playground import errors
    from playground.tokenization import bpe

    cls = getattr(errors, name, None) or getattr(bpe, name, None)
    return cls if isinstance(cls, type) and issubclass(cls, PlaygroundError) else PlaygroundError


def stop_process(process: multiprocessing.process.BaseProcess, wait_s: float = KILL_WAIT_S) -> None:
    """Terminate `process` (SIGTERM, then SIGKILL after `wait_s`) and reap it."""
    if process.is_alive():
        process.terminate()
        process.join(wait_s)
        if process.is_alive():
            process.kill()
    process.join(wait_s)


def iter_build_in_child(text: str, options: TokenizerOptions, caps: DemoCaps | None = None,
                        cancel: threading.Event | None = None, poll_s: float = 0.25,
                        ) -> Generator[BuildProgress, None, Tokenizer]:
    """Like `bpe.iter_build` (same progress events and result), with the work in a child process.

    The sizes are checked here first, so an oversized build never starts. Closing the generator or
    setting `cancel` terminates the child within about `poll_s` + KILL_WAIT_S seconds.
    """
    options = options.checked(caps)
    check_corpus(text)
    check_build_cost(text, options, caps)
    context = multiprocessing.get_context("spawn")
    receive, send = context.Pipe(duplex=False)
    process = context.Process(target=_child, args=(send, text, options, caps), name="bpe-build", daemon=True)
    start = time.perf_counter()
    yield BuildProgress("checking", f"Starting the build on {len(text):,} characters", 0.0, 0.0)
    process.start()
    send.close()  # the child holds its own end; EOF here means the child is gone
    try:
        while True:
            if cancel is not None and cancel.is_set():
                raise BuildCancelled("The build was stopped before it finished; nothing was kept.")
            if not receive.poll(poll_s):
                if not process.is_alive() and not receive.poll(0):
                    raise DataError(f"The tokenizer build ended unexpectedly (exit code {process.exitcode}); "
                                    "try a smaller corpus or vocabulary.")
                continue
            try:
                kind, payload = receive.recv()
            except EOFError:
                raise DataError(f"The tokenizer build ended unexpectedly (exit code {process.exitcode}); "
                                "try a smaller corpus or vocabulary.") from None
            if kind == "progress":
                phase, message, fraction, _ = payload
                yield BuildProgress(phase, message, fraction, time.perf_counter() - start)
            elif kind == "done":
                return Tokenizer.from_str(payload)
            elif kind == "user-error":
                name, message = payload
                raise _error_class(name)(message)
            else:
                raise RuntimeError(f"The tokenizer build failed in its process: {payload}")
    finally:
        receive.close()
        stop_process(process)


def run_build_in_child(text: str, options: TokenizerOptions, caps: DemoCaps | None = None, **kwargs: Any) -> Tokenizer:
    """Blocking `iter_build_in_child`."""
    gen = iter_build_in_child(text, options, caps, **kwargs)
    while True:
        try:
            next(gen)
        except StopIteration as stop:
            return stop.value
